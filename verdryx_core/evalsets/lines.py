"""Where each case of a JSON eval set starts, the one place that finds it: the 1-based line of
every element of the top-level `cases` array, found with the C decoder one value at a time
(newlines are counted only up to each case's start): linear in the file, about as fast as
`json.loads`, no second tree kept.

* `case_lines(text)`: the lines in case order, for a loaded set (`EvalSet.case_lines()`;
  JSONL and CSV files keep theirs as they are read).
* `case_lines_by_id(text)` and `read_case_lines_by_id(path)`: case id -> line, from the file
  alone, so an annotation or a failure points at the case itself where no loaded set is at
  hand (the xdist controller has no items). Best effort: a file that cannot be read or
  scanned gives no lines (it was validated when collected; a location is a convenience,
  never a gate).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Final

__all__ = ["case_lines", "case_lines_by_id", "read_case_lines_by_id", "scan_cases"]

_DECODER: Final = json.JSONDecoder()
_SPACE: Final = re.compile(r"[ \t\n\r]*")


def scan_cases(text: str) -> list[tuple[int, Any]]:
    """(line, element) for each element of the top-level `cases` array, in order. A repeated
    `cases` key: the last wins, as in `json.loads`. Raises ValueError when `text` is not a JSON
    object of that shape."""
    try:
        return _scan(text)
    except (IndexError, RecursionError) as exc:
        raise ValueError(f"not a JSON eval set: {exc}") from None


def case_lines(text: str) -> tuple[int, ...]:
    """The 1-based line each element of the top-level `cases` array starts on, in a JSON
    eval set's text (read only when asked: a JSON load does not pay for it); () when the
    text is not an eval set's JSON object."""
    try:
        return tuple(line for line, _ in scan_cases(text))
    except ValueError:
        return ()


def case_lines_by_id(text: str) -> dict[str, int]:
    """Case id -> 1-based line of the case in a JSON eval set's text; {} when it is not one."""
    try:
        found = scan_cases(text)
    except ValueError:
        return {}
    lines: dict[str, int] = {}
    for line, case in found:
        if isinstance(case, dict) and isinstance(case.get("id"), str):
            lines.setdefault(case["id"], line)  # a duplicate id is an error elsewhere
    return lines


def read_case_lines_by_id(path: str | Path) -> dict[str, int]:
    """`case_lines_by_id` of a JSON eval set file; {} for other formats and unreadable files."""
    path = Path(path)
    if path.suffix.lower() != ".json":
        return {}
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return {}
    return case_lines_by_id(text)


def _skip(text: str, pos: int) -> int:
    match = _SPACE.match(text, pos)
    assert match is not None  # `*` always matches
    return match.end()


def _scan(text: str) -> list[tuple[int, Any]]:
    pos = _skip(text, 0)
    if text[pos] != "{":
        raise ValueError("not a JSON object")
    found: list[tuple[int, Any]] = []
    pos = _skip(text, pos + 1)
    while text[pos] != "}":
        key, pos = _DECODER.raw_decode(text, pos)
        pos = _skip(text, pos)
        if text[pos] != ":":
            raise ValueError(f"expected ':' at offset {pos}")
        pos = _skip(text, pos + 1)
        if key == "cases" and text[pos] == "[":
            found, pos = _cases(text, pos)
        else:
            _, pos = _DECODER.raw_decode(text, pos)
        pos = _skip(text, pos)
        if text[pos] == ",":
            pos = _skip(text, pos + 1)
    return found


def _cases(text: str, pos: int) -> tuple[list[tuple[int, Any]], int]:
    found: list[tuple[int, Any]] = []
    line, counted = 1, 0
    pos = _skip(text, pos + 1)
    while text[pos] != "]":
        value, end = _DECODER.raw_decode(text, pos)
        line += text.count("\n", counted, pos)
        counted = pos
        found.append((line, value))
        pos = _skip(text, end)
        if text[pos] == ",":
            pos = _skip(text, pos + 1)
    return found, pos + 1
