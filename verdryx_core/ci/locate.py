"""Where each case of an eval set file starts: the 1-based line of its object, so an annotation
or a failure points at the case itself. Best effort: a file that cannot be read or scanned
gives no lines (it was validated when collected; a location is a convenience, never a gate)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

__all__ = ["case_lines", "json_case_lines"]

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


def case_lines(path: str | Path) -> dict[str, int]:
    """Case id -> 1-based line of the case in `path`, for the formats with a locator."""
    path = Path(path)
    locate = _LOCATORS.get(path.suffix.lower())
    if locate is None:
        return {}
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return {}
    return locate(text)


def json_case_lines(text: str) -> dict[str, int]:
    """Scan `{"id": ..., "cases": [{...}, ...]}` with the C decoder, one value at a time,
    counting newlines only up to each case's `{`: linear in the file, no second tree."""
    try:
        return _scan(text)
    except (ValueError, IndexError):
        return {}


def _skip(text: str, pos: int) -> int:
    match = _SPACE.match(text, pos)
    assert match is not None  # `*` always matches
    return match.end()


def _scan(text: str) -> dict[str, int]:
    pos = _skip(text, 0)
    if text[pos] != "{":
        return {}
    lines: dict[str, int] = {}
    pos = _skip(text, pos + 1)
    while text[pos] != "}":
        key, pos = _DECODER.raw_decode(text, pos)
        pos = _skip(text, pos)
        if text[pos] != ":":
            return {}
        pos = _skip(text, pos + 1)
        if key == "cases" and text[pos] == "[":
            lines, pos = _cases(text, pos)  # a repeated key: the last wins, as in json.loads
        else:
            _, pos = _DECODER.raw_decode(text, pos)
        pos = _skip(text, pos)
        if text[pos] == ",":
            pos = _skip(text, pos + 1)
    return lines


def _cases(text: str, pos: int) -> tuple[dict[str, int], int]:
    lines: dict[str, int] = {}
    line, counted = 1, 0
    pos = _skip(text, pos + 1)
    while text[pos] != "]":
        value, end = _DECODER.raw_decode(text, pos)
        if isinstance(value, dict) and isinstance(value.get("id"), str):
            line += text.count("\n", counted, pos)
            counted = pos
            lines.setdefault(value["id"], line)  # a duplicate id is an error elsewhere
        pos = _skip(text, end)
        if text[pos] == ",":
            pos = _skip(text, pos + 1)
    return lines, pos + 1


_LOCATORS: dict[str, Callable[[str], dict[str, int]]] = {".json": json_case_lines}
