"""Comparing JSON values the way an eval set means them.

JSON equality (a boolean is never a number; 1 equals 1.0), and an expected value written
`{"one_of": [...]}` accepts any listed value, at any depth (the convention of function-calling
benchmarks, where several argument values are acceptable). Inside an object, a member written
`{"one_of": [...], "optional": true}` may also be left out (such benchmarks mark an optional
argument with an empty acceptable value).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["is_one_of", "is_optional", "members_match", "value_matches"]

#: How strings are read before they are compared (a tool_trace case's text options).
Text = Callable[[str], str] | None

_ONE_OF_KEYS = (frozenset({"one_of"}), frozenset({"one_of", "optional"}))


def is_one_of(expected: Any) -> bool:
    return (
        isinstance(expected, Mapping)
        and frozenset(expected) in _ONE_OF_KEYS
        and isinstance(expected.get("one_of"), list)
        and isinstance(expected.get("optional", False), bool)
    )


def is_optional(expected: Any) -> bool:
    return is_one_of(expected) and expected.get("optional") is True


def members_match(
    expected: Mapping[str, Any],
    actual: Mapping[str, Any],
    *,
    extra_allowed: bool = False,
    text: Text = None,
) -> bool:
    """An object's members: every expected one present (unless optional) and matching; with
    `extra_allowed`, members not expected may be there too. `text` reads both sides of a
    string comparison, at any depth."""
    for key, want in expected.items():
        if key in actual:
            if not value_matches(want, actual[key], text=text):
                return False
        elif not is_optional(want):
            return False
    return extra_allowed or all(key in expected for key in actual)


def value_matches(expected: Any, actual: Any, *, text: Text = None) -> bool:
    if is_one_of(expected):
        return any(value_matches(option, actual, text=text) for option in expected["one_of"])
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and members_match(expected, actual, text=text)
    if isinstance(expected, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(expected) == len(actual)
            and all(value_matches(e, a, text=text) for e, a in zip(expected, actual, strict=True))
        )
    if text is not None and isinstance(expected, str) and isinstance(actual, str):
        return text(expected) == text(actual)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected == actual
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return expected == actual
    return type(expected) is type(actual) and expected == actual
