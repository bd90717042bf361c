"""Plain-text tables for the history commands (`runs`, `show`, `diff`)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import UTC, datetime

from verdryx_core.runs import parse_iso
from verdryx_core.untrusted.text import printable

__all__ = ["render_table", "short_id", "signed", "when"]

#: Long enough to be unique in any store people keep; `Store.find_run` takes it back.
SHORT_ID = 8


def short_id(run_id: str) -> str:
    return run_id[:SHORT_ID]


def when(moment: datetime | str) -> str:
    """Minutes in UTC: the store keeps UTC, and a table mixing zones would mislead."""
    if isinstance(moment, str):
        moment = parse_iso(moment)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


def signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def render_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], *, numeric: Collection[int] = ()
) -> list[str]:
    """Columns padded to their widest cell, two spaces apart; `numeric` columns right-aligned.
    The last column is not padded, so a long reason does not push trailing spaces.

    A cell quotes ids, models and reasons: each is made printable and one line (untrusted/
    text.py) before the widths are measured, so a newline in a reason cannot start a row of
    its own and an escape is counted at the width it is shown."""
    rows = [[printable(cell, keep_newlines=False) for cell in row] for row in rows]
    widths = [len(header) for header in headers]
    for row in rows:
        for index, cell in enumerate(row):
            widths[index] = max(widths[index], len(cell))

    def line(cells: Sequence[str]) -> str:
        parts = []
        for index, cell in enumerate(cells):
            if index == len(cells) - 1 and index not in numeric:
                parts.append(cell)
            elif index in numeric:
                parts.append(cell.rjust(widths[index]))
            else:
                parts.append(cell.ljust(widths[index]))
        return "  ".join(parts).rstrip()

    return [line(headers), *(line(row) for row in rows)]
