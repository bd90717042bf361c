"""The model adapters of one evaluation, behind the response cache, and the tally of what
their calls did (cache hits, answers to store, models without a price).

One rule for caching: the stub model is free and deterministic, so it is never cached; every
other model goes through `CachedAdapter` in the evaluation's cache mode.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from verdryx_core.timeouts import DEFAULT_TIMEOUT_S

if TYPE_CHECKING:
    # The cache, the price book and the store come with the first model that is not the
    # stub: a run of stored outputs and stub calls never imports them.
    from verdryx_core.evaluation.settings import EvalSettings
    from verdryx_core.llm.base import ModelAdapter
    from verdryx_core.llm.cache import CachedAdapter
    from verdryx_core.llm.prices import PriceBook
    from verdryx_core.store import CacheEntry, Store

__all__ = ["CallTally", "ModelCalls"]


@dataclass(slots=True)
class CallTally:
    """What the model calls of a run did; merged across processes (builtins on the wire)."""

    hits: int = 0
    misses: int = 0
    saved_usd: float = 0.0
    #: Answers not yet in the store (only one process writes it).
    entries: list[CacheEntry] = field(default_factory=list)
    unpriced: set[str] = field(default_factory=set)
    #: Target calls whose OpenTelemetry spans gave their result tool calls or usage, and
    #: those whose own won over the spans' (docs/targets.md, "Frameworks").
    span_results: int = 0
    span_overridden: int = 0

    def to_payload(self) -> dict[str, Any]:
        return {
            "hits": self.hits,
            "misses": self.misses,
            "saved_usd": self.saved_usd,
            "entries": [entry.to_builtins() for entry in self.entries],
            "unpriced": sorted(self.unpriced),
            "span_results": self.span_results,
            "span_overridden": self.span_overridden,
        }

    def merge(self, payload: Mapping[str, Any]) -> None:
        from verdryx_core.store import CacheEntry

        self.hits += int(payload.get("hits", 0))
        self.misses += int(payload.get("misses", 0))
        self.saved_usd += float(payload.get("saved_usd", 0.0))
        self.entries.extend(CacheEntry.from_builtins(item) for item in payload.get("entries", ()))
        self.unpriced.update(payload.get("unpriced", ()))
        self.span_results += int(payload.get("span_results", 0))
        self.span_overridden += int(payload.get("span_overridden", 0))

    def take_entries(self) -> list[CacheEntry]:
        entries, self.entries = self.entries, []
        return entries


class ModelCalls:
    """Builds the adapters an evaluation needs and, when asked, moves what they did into a
    `CallTally`. `open_store` is called only when a cached adapter is built."""

    def __init__(self, settings: EvalSettings, open_store: Callable[[], Store | None]) -> None:
        self.settings = settings
        self._open_store = open_store
        self._cached: list[CachedAdapter] = []
        self._prices: PriceBook | None = None

    @property
    def paid(self) -> bool:
        """Whether any adapter built so far calls a real model."""
        return bool(self._cached)

    def adapter(self, model: str, *, cache_checked_first: bool = False) -> ModelAdapter:
        """The adapter of `model`, behind the cache. Its SDK is imported now, outside the
        calls' latencies, unless the answers may all come from the cache: a replay, an xdist
        worker grading from the controller's calls, or (`cache_checked_first`) an adapter whose
        calls are looked up before the pool starts, which imports it only when one will go
        out (verdryx_core.evaluation.sdk_import)."""
        from verdryx_core.llm import make_adapter

        settings = self.settings
        deferred = (
            settings.answers_prefetched
            or settings.cache == "replay"
            or (cache_checked_first and settings.cache == "on")
        )
        timeout = settings.call_timeout
        adapter = make_adapter(
            model,
            prices=self._price_book(),
            timeout=DEFAULT_TIMEOUT_S if timeout is None else timeout,
            connections=settings.concurrency,
            sdk_now=not deferred,
        )
        if adapter.model == "stub":  # free and deterministic: nothing to save by caching it
            return adapter
        from verdryx_core.llm.cache import CachedAdapter

        cached = CachedAdapter(adapter, self._open_store(), self.settings.cache)
        self._cached.append(cached)
        return cached

    def _price_book(self) -> PriceBook | None:
        if self.settings.prices is None:
            return None
        if self._prices is None:
            from verdryx_core.llm.prices import PriceBook

            self._prices = PriceBook.from_file(self.settings.prices)
        return self._prices

    def harvest(self, tally: CallTally) -> None:
        """Move every adapter's stats and unwritten answers into `tally`, and forget them."""
        for adapter in self._cached:
            stats = adapter.stats
            tally.hits += stats.hits
            tally.misses += stats.misses
            tally.saved_usd += stats.saved_usd
            tally.entries.extend(adapter.take_pending())
            prices = getattr(adapter.inner, "prices", None)
            tally.unpriced.update(_unpriced(prices))
        self._cached.clear()


def _unpriced(prices: Any) -> Iterable[str]:
    return getattr(prices, "unpriced", ()) or ()
