"""JSON text that may be hostile, read in one place: every file, answer and request body
verdryx parses goes through `parse_json` or `parse_json_strict`, and the words for what was
read (`json_kind`, `item_label`) are here too, for the messages that refuse it.

`json.loads` alone says too little. It raises `RecursionError` (not `JSONDecodeError`) on
`[` repeated 100,000 times, and a value nested a few hundred levels deep parses but then
overflows the stack of whatever walks it next (schema validation, hashing, printing).

* `parse_json` (eval sets, baselines, prices, events, traces, provider answers, `show`):
  nesting deeper than `MAX_DEPTH` is a `JSONDepthError`, a `json.JSONDecodeError` at the
  position where the nesting goes too deep, so every loader's existing "not valid JSON at
  line L, column C: ..." message covers it (docs/troubleshooting.md). `allow_nan=False`
  refuses NaN and Infinity with a `NonFiniteNumber`.
* `parse_json_strict` (contracts and evidence bundles, on the command line and in the
  service): also refuses what a verifier must not accept and other parsers would read
  differently: a key given twice, NaN, `1e400` (infinity), integers beyond 2**53 - 1, lone
  surrogates, more than `STRICT_MAX_DEPTH` levels. Each is one `StrictJSONError` line,
  before any hash is computed (docs/contracts.md).

These errors are ValueErrors the reader catches and words as its own `VerdryxError`
(`EvalSetError`, `ContractError`, ...), naming the file; they never reach a user bare.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "MAX_DEPTH",
    "MAX_SAFE_INTEGER",
    "STRICT_MAX_DEPTH",
    "JSONDepthError",
    "NonFiniteNumber",
    "StrictJSONError",
    "check_strict",
    "item_label",
    "json_kind",
    "nesting_depth",
    "parse_json",
    "parse_json_strict",
]

#: Deeper than any file verdryx reads needs, shallow enough that every walker stays far
#: below the interpreter's recursion limit.
MAX_DEPTH: Final = 100
#: Nesting a contract (4 levels) or a bundle (6) never needs; deeper is refused, not recursed.
STRICT_MAX_DEPTH: Final = 32
#: RFC 8785 (the canonical form every hash is taken over) keeps integers up to 2**53 - 1.
MAX_SAFE_INTEGER: Final = 2**53 - 1

_LONG_NUMBER: Final = re.compile(r"\d{4301,}")
_TOKEN: Final = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


class JSONDepthError(json.JSONDecodeError):
    """JSON nested deeper than `MAX_DEPTH` levels."""


class NonFiniteNumber(ValueError):
    """NaN, Infinity or -Infinity in the text (`parse_json(..., allow_nan=False)`): Python's
    json reads them, JSON has none of them. `name` is the word as written; `line` is the
    1-based line of the file it was on, when the reader knows it."""

    def __init__(self, name: str, line: int | None = None) -> None:
        super().__init__(name)
        self.name = name
        self.line = line


class StrictJSONError(ValueError):
    """The text is not JSON a verifier accepts; the message is one line saying where and why."""


def _refuse_non_finite(name: str) -> Any:
    # A NaN min_score would pass every range check (all comparisons with NaN are false).
    raise NonFiniteNumber(name)


def parse_json(
    text: str | bytes,
    *,
    max_depth: int = MAX_DEPTH,
    allow_nan: bool = True,
    unique_keys: bool = False,
) -> Any:
    """`json.loads`, except that nesting deeper than `max_depth` raises `JSONDepthError`,
    with `allow_nan=False` NaN and Infinity raise `NonFiniteNumber`, and with `unique_keys` a
    key given twice in one object raises `StrictJSONError` (the strict parser's rule: Python
    keeps the last value silently, so `{"a": 2, "a": 1}` would read as `{"a": 1}`)."""
    if isinstance(text, bytes | bytearray):
        text = text.decode("utf-8")
    options: dict[str, Any] = {}
    if not allow_nan:
        options["parse_constant"] = _refuse_non_finite
    if unique_keys:
        options["object_pairs_hook"] = _no_duplicate_keys
    try:
        value = json.loads(text, **options)
    except RecursionError:
        raise _depth_error(text, max_depth) from None
    except (json.JSONDecodeError, NonFiniteNumber, StrictJSONError):
        raise
    except ValueError as exc:
        # An integer of more than 4,300 digits (sys.set_int_max_str_digits) is refused with a
        # plain ValueError; say where, like any other syntax problem.
        if "integer string conversion" not in str(exc):
            raise
        found = _LONG_NUMBER.search(text)
        raise json.JSONDecodeError(
            "a number with more digits than can be read", text, found.start() if found else 0
        ) from None
    if nesting_depth(value) > max_depth:
        raise _depth_error(text, max_depth)
    return value


def nesting_depth(value: Any) -> int:
    """How many arrays and objects deep `value` goes (a scalar is 0; a tuple counts as the
    array JSON writes it as); iterative, one level at a time, so a file of many flat records
    costs a list comprehension per record, and a value a million levels deep no stack."""
    depth = 0
    level = [value] if isinstance(value, dict | list | tuple) else []
    while level:
        depth += 1
        below: list[Any] = []
        for item in level:
            children = item.values() if isinstance(item, dict) else item
            below.extend([child for child in children if isinstance(child, dict | list | tuple)])
        level = below
    return depth


def _depth_error(text: str, max_depth: int) -> JSONDepthError:
    depth = 0
    position = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > max_depth:
                position = match.start()
                break
        elif token in "]}":
            depth -= 1
    return JSONDepthError(
        f"nested deeper than {max_depth} levels of arrays and objects", text, position
    )


# -- strict: contracts and evidence bundles ------------------------------------------------


def _strict_constant(name: str) -> None:
    raise StrictJSONError(f"{name} is not a JSON value")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise StrictJSONError(f"the key {key!r} appears twice in one object")
        result[key] = value
    return result


def parse_json_strict(text: str | bytes) -> Any:
    """Parse strictly; raises `StrictJSONError` (never RecursionError) with a one-line reason."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise StrictJSONError(f"not UTF-8 text (byte {exc.start})") from None
    try:
        value = json.loads(
            text, parse_constant=_strict_constant, object_pairs_hook=_no_duplicate_keys
        )
    except RecursionError:
        raise StrictJSONError(
            "nests deeper than the JSON parser allows "
            f"(at most {STRICT_MAX_DEPTH} levels are accepted)"
        ) from None
    except StrictJSONError:
        raise
    except json.JSONDecodeError as exc:
        raise StrictJSONError(
            f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except ValueError as exc:  # an integer literal past Python's 4,300-digit conversion limit
        raise StrictJSONError(f"not acceptable JSON: {exc}") from None
    check_strict(value)
    return value


def check_strict(value: Any) -> None:
    """The strict rules on depth, numbers and strings for an already-parsed value (a contract
    built in Python, a bundle about to be hashed), without recursion; `StrictJSONError`."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > STRICT_MAX_DEPTH:
                raise StrictJSONError(f"nests more than {STRICT_MAX_DEPTH} levels deep")
            if isinstance(item, dict):
                for key, child in item.items():
                    _check_string(key)
                    stack.append((child, depth + 1))
            else:
                stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, str):
            _check_string(item)
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if abs(item) > MAX_SAFE_INTEGER:
                raise StrictJSONError(
                    f"the integer {_short(item)} is outside the exactly representable range "
                    f"(at most {MAX_SAFE_INTEGER} in magnitude)"
                )
        elif isinstance(item, float) and not math.isfinite(item):
            raise StrictJSONError("a number is too large to represent (it overflows to infinity)")


def _check_string(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise StrictJSONError(
            f"a string holds a lone surrogate (\\u{ord(text[exc.start]):04x}), which is not "
            "Unicode text"
        ) from None


def _short(number: int) -> str:
    digits = str(abs(number)) if number.bit_length() < 4000 else ""
    if digits and len(digits) <= 30:
        return str(number)
    return f"with {len(digits) or 'over 1200'} digits"


# -- words for what was read ---------------------------------------------------------------


def json_kind(value: object) -> str:
    """'an object', 'a string', ... as a reader of the JSON file would name the value."""
    return {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        int: "a number",  # JSON has one number type; the schema says when a whole one is needed
        float: "a number",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def item_label(item: object, index: int) -> str:
    """`'refund' (#3)` for a list element with a string id, else `#3` (1-based)."""
    if isinstance(item, Mapping) and isinstance(item.get("id"), str) and item["id"]:
        return f"{item['id']!r} (#{index + 1})"
    return f"#{index + 1}"
