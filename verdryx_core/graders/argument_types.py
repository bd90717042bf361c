"""A tool call's arguments against the `type`s of its tool's `input_schema` (a tool_trace
case's `check_types`, docs/graders.md "Tool traces").

Strict as function-calling benchmarks are, not as JSON is: an `integer` is a whole number
written without a fraction (12, never 12.0), a `number` any number, and a boolean is never a
number. Nested `items` and `properties` are checked too. Only types are checked here; which
arguments must be there is the expectation's business (`argument_match`, `optional`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = ["type_problem"]

_PYTHON: Final[Mapping[str, tuple[type, ...]]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (Mapping,),
}


def _fits(value: Any, kind: str) -> bool:
    if kind == "null":
        return value is None
    if isinstance(value, bool) and kind != "boolean":
        return False
    accepted = _PYTHON.get(kind)
    return True if accepted is None else isinstance(value, accepted)


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def type_problem(value: Any, schema: Mapping[str, Any], where: str) -> str | None:
    """Why `value` (at `where`, an argument's name) is not of the schema's type, or None."""
    kinds = schema.get("type")
    if isinstance(kinds, str):
        kinds = [kinds]
    if isinstance(kinds, Sequence) and kinds and not any(_fits(value, k) for k in kinds):
        return f"{where}: expected {' or '.join(map(str, kinds))}, got {_shown(value)}"
    items = schema.get("items")
    if isinstance(value, list | tuple) and isinstance(items, Mapping):
        for index, item in enumerate(value):
            problem = type_problem(item, items, f"{where}[{index}]")
            if problem is not None:
                return problem
    properties = schema.get("properties")
    if isinstance(value, Mapping) and isinstance(properties, Mapping):
        for key, item in value.items():
            sub = properties.get(key)
            if isinstance(sub, Mapping):
                problem = type_problem(item, sub, f"{where}.{key}" if where else str(key))
                if problem is not None:
                    return problem
    return None
