"""Words for JSON values in error messages, shared by every validated file format."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["item_label", "json_kind"]


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
