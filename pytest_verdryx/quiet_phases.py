"""Eval cases' passed setup and teardown reports, out of the terminal's `stats`.

pytest's terminal reporter keeps every report it is shown, the passed setup and teardown
ones under the category `""`, which it never displays; for each failure it prints, it then
looks through all of them for that test's teardown output. A gated run under
`--verdryx-fail-on=cases` with thousands of dropped cases paid (failures x 2 x cases)
report lookups for nothing (docs/ci.md, "Large runs"). A passed setup or teardown report of
an eval case with no captured section prints nothing anywhere in the terminal, so it is
taken back out the moment the reporter has filed it; the rest (call reports, failures,
reports carrying captured output, other tests' reports) stay as pytest keeps them. JUnit
XML and the other hooks see every report as before: only the terminal's own list shrinks.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import Any

import pytest

__all__ = ["QuietPhases"]

#: The category pytest's terminal gives passed setup and teardown reports.
_UNSHOWN = ""


class QuietPhases:
    """Beside the terminal reporter; `trylast`, so the report is filed first."""

    def __init__(self, config: pytest.Config, patterns: Sequence[str]) -> None:
        self.config = config
        self.patterns = tuple(patterns)
        #: Whether each file part of a node id names an eval set (a run has few files).
        self._files: dict[str, bool] = {}

    def _is_case(self, nodeid: str) -> bool:
        file_part = nodeid.partition("::")[0]
        known = self._files.get(file_part)
        if known is None:
            name = file_part.rpartition("/")[2]
            known = self._files[file_part] = any(
                fnmatch.fnmatch(name, pattern) for pattern in self.patterns
            )
        return known

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or not report.passed or report.sections:
            return
        if not self._is_case(report.nodeid):
            return
        # Looked up here: verdryx may be on before the reporter is registered (configure).
        terminal: Any = self.config.pluginmanager.get_plugin("terminalreporter")
        filed = None if terminal is None else terminal.stats.get(_UNSHOWN)
        # Only the report just filed, and only if the reporter filed it where pytest does.
        if filed and filed[-1] is report:
            filed.pop()
