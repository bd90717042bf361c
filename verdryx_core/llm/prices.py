"""The price book: model -> dollars per million tokens, so every `cost_usd` is real money.

Prices change faster than releases, so the built-in table (listed in
docs/models-and-judges.md, "Prices") can be extended or overridden by a JSON price file
named in the ini key `verdryx_prices`:

    {
      "models": {
        "claude-sonnet-4-5": {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75}
      },
      "fallback": {"input": 15.0, "output": 75.0},
      "replace_defaults": false
    }

Every key is optional. `input` and `output` are required inside an entry, the cache prices
default to 0. A model missing from the book is priced at the fallback (the most expensive
row, so an unknown model is never silently free) and recorded in `unpriced`, which the plugin
prints as a visible note.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Self

from verdryx_core.errors import UsageError
from verdryx_core.limits import MAX_PRICE_PER_MTOK
from verdryx_core.untrusted.files import read_regular_text
from verdryx_core.untrusted.json_input import parse_json

__all__ = ["DEFAULT_PRICES", "FALLBACK_PRICE", "ModelPrice", "PriceBook"]

_PER_MILLION: Final = 1_000_000
# A dated snapshot (`claude-sonnet-4-5-20250929`) costs what its alias costs.
_SNAPSHOT_DATE: Final = re.compile(r"-\d{8}$")
_ENTRY_KEYS: Final = ("input", "output", "cache_read", "cache_write")
_FILE_KEYS: Final = ("models", "fallback", "replace_defaults")
_EXAMPLE: Final = '{"models": {"MODEL": {"input": 3.0, "output": 15.0}}}'


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelPrice:
    """USD per million tokens of each kind."""

    input: float
    output: float
    cache_read: float = 0.0
    cache_write: float = 0.0

    def cost(
        self,
        input_tokens: int,
        output_tokens: int,
        *,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
    ) -> float:
        return (
            input_tokens * self.input
            + output_tokens * self.output
            + cache_read_tokens * self.cache_read
            + cache_write_tokens * self.cache_write
        ) / _PER_MILLION

    def to_dict(self) -> dict[str, float]:
        return {
            "input": self.input,
            "output": self.output,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
        }


def _price(i: float, o: float, cr: float, cw: float) -> ModelPrice:
    return ModelPrice(input=i, output=o, cache_read=cr, cache_write=cw)


#: The built-in table, USD per million tokens; docs/models-and-judges.md ("Prices") lists it.
DEFAULT_PRICES: Final[Mapping[str, ModelPrice]] = {
    "claude-sonnet": _price(3.00, 15.00, 0.30, 3.75),
    "claude-haiku": _price(0.80, 4.00, 0.08, 1.00),
    "gpt": _price(2.50, 10.00, 0.25, 3.125),
    "claude-haiku-4-5": _price(1.00, 5.00, 0.10, 1.25),
    "claude-haiku-4-5-20251001": _price(1.00, 5.00, 0.10, 1.25),
    "claude-sonnet-4-5": _price(3.00, 15.00, 0.30, 3.75),
    "claude-sonnet-4-5-20250929": _price(3.00, 15.00, 0.30, 3.75),
    "claude-opus-4-5": _price(5.00, 25.00, 0.50, 6.25),
    "claude-opus-4-5-20251101": _price(5.00, 25.00, 0.50, 6.25),
    "gpt-4o": _price(2.50, 10.00, 1.25, 2.50),
    "gpt-4o-mini": _price(0.15, 0.60, 0.075, 0.15),
    "o1": _price(15.00, 60.00, 7.50, 15.00),
}

#: What a model missing from the book costs: deliberately the dearest row.
FALLBACK_PRICE: Final = _price(15.00, 75.00, 1.50, 18.75)


class PriceBook:
    """Prices by exact model id (then by the id without a trailing snapshot date), else the
    fallback. Thread-safe: adapters price calls from a pool."""

    def __init__(
        self,
        prices: Mapping[str, ModelPrice],
        *,
        fallback: ModelPrice = FALLBACK_PRICE,
        source: str = "built-in prices",
    ) -> None:
        self._prices = dict(prices)
        self.fallback = fallback
        #: Where the prices came from, for notes and errors.
        self.source = source
        self._unpriced: set[str] = set()
        self._lock = threading.Lock()

    @classmethod
    def default(cls) -> Self:
        return cls(DEFAULT_PRICES)

    @classmethod
    def from_file(cls, path: str | Path) -> Self:
        """The built-in prices updated by a price file (see the module docstring)."""
        name = str(path)
        try:
            text = read_regular_text(path, encoding="utf-8")
        except OSError as exc:
            raise UsageError(
                f"{name}: cannot read the price file ({exc.strerror}); fix the path in the "
                "ini key verdryx_prices"
            ) from None
        except UnicodeDecodeError as exc:
            raise UsageError(
                f"{name}: the price file is not UTF-8 ({exc.reason} at byte {exc.start}); save "
                "it as UTF-8 JSON"
            ) from None
        try:
            data = parse_json(text)
        except json.JSONDecodeError as exc:
            raise UsageError(
                f"{name}: the price file is not JSON (line {exc.lineno}, column {exc.colno}: "
                f"{exc.msg}); expected an object like {_EXAMPLE}"
            ) from None
        return cls.from_mapping(data, source=name)

    @classmethod
    def from_mapping(cls, data: object, *, source: str = "price mapping") -> Self:
        if not isinstance(data, Mapping):
            raise UsageError(
                f"{source}: the price file holds {type(data).__name__}, expected a JSON object "
                'with "models" and optionally "fallback"'
            )
        unknown = sorted(set(data) - set(_FILE_KEYS))
        if unknown:
            raise UsageError(
                f"{source}: unknown key {unknown[0]!r}; expected only {', '.join(_FILE_KEYS)}"
            )
        replace = data.get("replace_defaults", False)
        if not isinstance(replace, bool):
            raise UsageError(f"{source}: replace_defaults is {replace!r}, expected true or false")
        models = data.get("models", {})
        if not isinstance(models, Mapping):
            raise UsageError(
                f"{source}: models is {type(models).__name__}, expected an object of "
                "model id -> prices"
            )
        prices: dict[str, ModelPrice] = {} if replace else dict(DEFAULT_PRICES)
        for model, entry in models.items():
            prices[str(model)] = _parse_entry(entry, source=source, where=f"models.{model}")
        fallback = FALLBACK_PRICE
        if "fallback" in data:
            fallback = _parse_entry(data["fallback"], source=source, where="fallback")
        return cls(prices, fallback=fallback, source=source)

    def price(self, model: str) -> ModelPrice | None:
        """The model's own price, or None when it would be priced at the fallback."""
        found = self._prices.get(model)
        if found is None:
            found = self._prices.get(_SNAPSHOT_DATE.sub("", model))
        return found

    def is_known(self, model: str) -> bool:
        return self.price(model) is not None

    def cost(
        self,
        model: str,
        input_tokens: int,
        output_tokens: int,
        *,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
    ) -> float:
        """Dollars for one call; a model missing from the book costs the fallback and is noted."""
        found = self.price(model)
        if found is None:
            found = self.fallback
            with self._lock:
                self._unpriced.add(model)
        return found.cost(
            input_tokens,
            output_tokens,
            cache_read_tokens=cache_read_tokens,
            cache_write_tokens=cache_write_tokens,
        )

    @property
    def unpriced(self) -> set[str]:
        """Models priced at the fallback so far (a copy): the plugin prints a note naming them."""
        with self._lock:
            return set(self._unpriced)

    def note(self) -> str | None:
        """The visible note about fallback pricing, or None when every model had a price."""
        missing = sorted(self.unpriced)
        if not missing:
            return None
        rate = self.fallback
        return (
            f"verdryx: no price for {', '.join(missing)} in {self.source}; priced at the "
            f"fallback (${rate.input:g} in / ${rate.output:g} out per million tokens). Add the "
            "model to a price file named by the ini key verdryx_prices."
        )


def _parse_entry(entry: object, *, source: str, where: str) -> ModelPrice:
    if not isinstance(entry, Mapping):
        raise UsageError(
            f"{source}: {where} is {entry!r}, expected an object like "
            '{"input": 3.0, "output": 15.0} (USD per million tokens)'
        )
    unknown = sorted(set(entry) - set(_ENTRY_KEYS))
    if unknown:
        raise UsageError(
            f"{source}: {where}.{unknown[0]} is not a price; expected only {', '.join(_ENTRY_KEYS)}"
        )
    values: dict[str, float] = {}
    for key in _ENTRY_KEYS:
        if key not in entry:
            if key in ("input", "output"):
                raise UsageError(
                    f"{source}: {where}.{key} is missing; every price entry needs input and "
                    "output (USD per million tokens)"
                )
            continue
        value: Any = entry[key]
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value < 0
        ):
            raise UsageError(
                f"{source}: {where}.{key} is {value!r}, expected a non-negative number of USD "
                "per million tokens"
            )
        if value > MAX_PRICE_PER_MTOK:
            # Bounded so that a bounded count times a price stays a bounded cost.
            raise UsageError(
                f"{source}: {where}.{key} is {value!r}, more than the maximum of "
                f"{MAX_PRICE_PER_MTOK:,} USD per million tokens (docs/store.md)"
            )
        values[key] = float(value)
    return ModelPrice(**values)
