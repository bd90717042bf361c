"""Parsing JSON text that may be hostile: one place for what `json.loads` does not say.

`json.loads` raises `RecursionError` (not `JSONDecodeError`) on `[` repeated 100,000 times,
and a value nested a few hundred levels deep parses but then overflows the stack of whatever
walks it next (schema validation, hashing, printing). `loads` turns both into a
`json.JSONDecodeError` at the position where the nesting goes too deep, so every loader's
existing "not valid JSON at line L, column C: ..." message covers it (docs/troubleshooting.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Final

__all__ = ["MAX_DEPTH", "JSONDepthError", "loads", "nesting_depth"]

#: Deeper than any file verdryx reads needs, shallow enough that every walker stays far
#: below the interpreter's recursion limit.
MAX_DEPTH: Final = 100

_LONG_NUMBER: Final = re.compile(r"\d{4301,}")
_TOKEN: Final = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


class JSONDepthError(json.JSONDecodeError):
    """JSON nested deeper than `MAX_DEPTH` levels."""


def loads(
    text: str | bytes,
    *,
    max_depth: int = MAX_DEPTH,
    parse_constant: Callable[[str], Any] | None = None,
) -> Any:
    """`json.loads`, except that nesting deeper than `max_depth` raises `JSONDepthError`."""
    if isinstance(text, bytes | bytearray):
        text = text.decode("utf-8")
    try:
        if parse_constant is None:
            value = json.loads(text)
        else:
            value = json.loads(text, parse_constant=parse_constant)
    except RecursionError:
        raise _depth_error(text, max_depth) from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:
        # An integer of more than 4,300 digits (sys.set_int_max_str_digits) is refused with a
        # plain ValueError; say where, like any other syntax problem. Other ValueErrors are the
        # caller's own (a parse_constant that refuses NaN).
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
    """How many arrays and objects deep `value` goes (a scalar is 0); iterative."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            depth += 1
            stack.extend((child, depth) for child in item.values())
        elif isinstance(item, list):
            depth += 1
            stack.extend((child, depth) for child in item)
        deepest = max(deepest, depth)
    return deepest


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
