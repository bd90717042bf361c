"""Eval cases' passed setup and teardown reports, out of the terminal's `stats`.

pytest's terminal reporter keeps every report it is shown, the passed setup and teardown
ones under the category `""`, which it never displays; for each failure it prints, it then
looks through all of them for that test's teardown output. A gated run under
`--verdryx-fail-on=cases` with thousands of dropped cases paid (failures x 2 x cases)
report lookups for nothing (docs/ci.md, "Large runs"). A passed setup or teardown report of
an eval case with no captured section prints nothing anywhere in the terminal, so at the
session's end, before the summary is written, such reports leave that list; the rest (call
reports, failures, reports carrying captured output, other tests' reports) stay as pytest
keeps them. JUnit XML and the other hooks saw every report as it came: only the terminal's
own list shrinks.

No hook keeps a report out of that list: the runner logs every phase's report, and
`pytest_report_teststatus` only picks the key it is filed under, where every key but `""`
is counted in the closing stats line and turns it yellow. So the list, the reporter's
`stats` that `pytest_terminal_summary` implementations read, is edited here.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import Any

import pytest

__all__ = ["drop_unshown_phases"]

#: The category pytest's terminal gives passed setup and teardown reports.
_UNSHOWN = ""


def drop_unshown_phases(config: pytest.Config, patterns: Sequence[str]) -> int:
    """Take the eval cases' passed, silent setup and teardown reports out of the terminal's
    list; returns how many left it."""
    terminal: Any = config.pluginmanager.get_plugin("terminalreporter")
    filed = None if terminal is None else terminal.stats.get(_UNSHOWN)
    if not filed:
        return 0
    files: dict[str, bool] = {}  # whether each file part of a node id names an eval set

    def is_case(nodeid: str) -> bool:
        file_part = nodeid.partition("::")[0]
        known = files.get(file_part)
        if known is None:
            name = file_part.rpartition("/")[2]
            known = files[file_part] = any(fnmatch.fnmatch(name, p) for p in patterns)
        return known

    kept = [
        report
        for report in filed
        if getattr(report, "when", None) == "call"
        or not report.passed
        or report.sections
        or not is_case(report.nodeid)
    ]
    dropped = len(filed) - len(kept)
    filed[:] = kept
    return dropped
