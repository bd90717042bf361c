"""Where each case of an eval set file starts: the 1-based line of its object, so an annotation
or a failure points at the case itself. Best effort: a file that cannot be read or scanned
gives no lines (it was validated when collected; a location is a convenience, never a gate).
`EvalSet.case_lines()` gives the same lines by position for a loaded set of any format; this
finds them by case id from the file alone (the xdist controller has no items)."""

from __future__ import annotations

from pathlib import Path

from verdryx_core.evalsets.lines import scan_cases

__all__ = ["case_lines", "json_case_lines"]


def case_lines(path: str | Path) -> dict[str, int]:
    """Case id -> 1-based line of the case in a JSON eval set file; {} for other formats."""
    path = Path(path)
    if path.suffix.lower() != ".json":
        return {}
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return {}
    return json_case_lines(text)


def json_case_lines(text: str) -> dict[str, int]:
    try:
        found = scan_cases(text)
    except ValueError:
        return {}
    lines: dict[str, int] = {}
    for line, case in found:
        if isinstance(case, dict) and isinstance(case.get("id"), str):
            lines.setdefault(case["id"], line)  # a duplicate id is an error elsewhere
    return lines
