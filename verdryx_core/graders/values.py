"""Comparing JSON values the way an eval set means them.

JSON equality (a boolean is never a number; 1 equals 1.0), and an expected value written
`{"one_of": [...]}` accepts any listed value, at any depth (the convention of function-calling
benchmarks, where several argument values are acceptable).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["is_one_of", "value_matches"]


def is_one_of(expected: Any) -> bool:
    return (
        isinstance(expected, Mapping)
        and len(expected) == 1
        and isinstance(expected.get("one_of"), list)
    )


def value_matches(expected: Any, actual: Any) -> bool:
    if is_one_of(expected):
        return any(value_matches(option, actual) for option in expected["one_of"])
    if isinstance(expected, Mapping):
        return (
            isinstance(actual, Mapping)
            and set(expected) == set(actual)
            and all(value_matches(expected[key], actual[key]) for key in expected)
        )
    if isinstance(expected, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(expected) == len(actual)
            and all(value_matches(e, a) for e, a in zip(expected, actual, strict=True))
        )
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected == actual
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return expected == actual
    return type(expected) is type(actual) and expected == actual
