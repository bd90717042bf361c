"""Strict JSON text for contracts and bundles: one parser, bounded, shared by CLI and server.

`json.loads` alone accepts things a verifier must not: `[` nested 100,000 deep (a
RecursionError traceback), a key given twice (two parsers would disagree on which counts),
`1e400` (infinity), integers no other JSON reader keeps exactly, and lone surrogates that no
UTF-8 encoder writes. Each is one `JSONTextError` line here, before any hash is computed.
"""

from __future__ import annotations

import json
import math
from typing import Any, Final

__all__ = ["MAX_DEPTH", "MAX_SAFE_INTEGER", "JSONTextError", "check_value", "parse_json"]

#: Nesting a contract (4 levels) or a bundle (6) never needs; deeper is refused, not recursed.
MAX_DEPTH: Final = 32
#: RFC 8785 (the canonical form every hash is taken over) keeps integers up to 2**53 - 1.
MAX_SAFE_INTEGER: Final = 2**53 - 1


class JSONTextError(ValueError):
    """The text is not JSON a verifier accepts; the message is one line saying where and why."""


def _no_constants(name: str) -> None:
    raise JSONTextError(f"{name} is not a JSON value")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise JSONTextError(f"the key {key!r} appears twice in one object")
        result[key] = value
    return result


def parse_json(text: str | bytes) -> Any:
    """Parse strictly; raises `JSONTextError` (never RecursionError) with a one-line reason."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise JSONTextError(f"not UTF-8 text (byte {exc.start})") from None
    try:
        value = json.loads(text, parse_constant=_no_constants, object_pairs_hook=_no_duplicate_keys)
    except RecursionError:
        raise JSONTextError(
            f"nests deeper than the JSON parser allows (at most {MAX_DEPTH} levels are accepted)"
        ) from None
    except JSONTextError:
        raise
    except json.JSONDecodeError as exc:
        raise JSONTextError(
            f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except ValueError as exc:  # an integer literal past Python's 4,300-digit conversion limit
        raise JSONTextError(f"not acceptable JSON: {exc}") from None
    check_value(value)
    return value


def check_value(value: Any) -> None:
    """Depth, numbers and strings of an already-parsed value, without recursion."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                raise JSONTextError(f"nests more than {MAX_DEPTH} levels deep")
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
                raise JSONTextError(
                    f"the integer {_short(item)} is outside the exactly representable range "
                    f"(at most {MAX_SAFE_INTEGER} in magnitude)"
                )
        elif isinstance(item, float) and not math.isfinite(item):
            raise JSONTextError("a number is too large to represent (it overflows to infinity)")


def _check_string(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise JSONTextError(
            f"a string holds a lone surrogate (\\u{ord(text[exc.start]):04x}), which is not "
            "Unicode text"
        ) from None


def _short(number: int) -> str:
    digits = str(abs(number)) if number.bit_length() < 4000 else ""
    if digits and len(digits) <= 30:
        return str(number)
    return f"with {len(digits) or 'over 1200'} digits"
