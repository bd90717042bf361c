"""`pytest --verdryx-report=PATH`: the session writes the report at its end, with
the verdict the session itself reached."""

from __future__ import annotations

import re

import pytest
from plugin_support import FULL, PARTIAL, trace_case, write_evalset


def test_the_session_writes_a_report_with_its_own_verdict(pytester: pytest.Pytester) -> None:
    db = pytester.path / "store.db"
    report = pytester.path / "report.html"
    write_evalset(pytester.path, "agent", "agent", [trace_case(f"c{i}", FULL) for i in range(20)])
    pytester.runpytest(f"--verdryx-db={db}", "--verdryx-save-baseline=v1").assert_outcomes(
        passed=20
    )
    cases = [trace_case(f"c{i}", PARTIAL if i < 6 else FULL) for i in range(20)]
    write_evalset(pytester.path, "agent", "agent", cases)
    result = pytester.runpytest(
        f"--verdryx-db={db}", "--verdryx-baseline=v1", f"--verdryx-report={report}"
    )
    result.stdout.fnmatch_lines(["*verdict: REGRESSED*"])
    page = report.read_text(encoding="utf-8")
    title = re.search(r"<h1>.*?</h1>", page, re.S)
    assert title is not None and "REGRESSED" in title.group(0)
    assert "http" not in page
    assert page.count("<tr><td>c") >= 20  # every case is in a table
