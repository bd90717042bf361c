"""A JUnit XML file holding only the gate's verdict: what `verdryx gate` writes for CI.

One `<testsuite name="verdryx">` with the run's `verdryx.*` properties (the names the pytest
face puts on its suite, docs/ci.md) and one `<testcase classname="verdryx" name="gate">`:
a `<failure>` carrying the verdict line when regressed (or the reason the run fails when a
case fails it: docs/outcomes.md), an `<error>` when the gate was refused, nothing when on
track. Written atomically: CI never reads half a file.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from verdryx_core.atomic import write_text_atomic
from verdryx_core.reporting.ci.verdict import verdict_interval, verdict_line
from verdryx_core.runs import EvalRun
from verdryx_core.untrusted.text import printable

if TYPE_CHECKING:
    # Types only: what CI sees is built without importing the gate (numpy) until it runs.
    from verdryx_core.gating.compare import GateOutcome

__all__ = ["gate_junit_xml", "suite_properties", "write_gate_junit"]


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


def suite_properties(run: EvalRun | None, gate: GateOutcome) -> dict[str, str]:
    """The suite's `verdryx.*` properties; empty values where nothing applies."""
    result = gate.result
    report = result.stats if result is not None else None
    # The interval the verdict used: paired when cases paired (docs/ci.md), as the pytest
    # face writes it.
    interval = verdict_interval(report) if report is not None else None
    properties = {
        "verdryx.run_id": run.id if run else "",
        "verdryx.model": run.model if run else "",
        "verdryx.mean_score": _num(run.mean_score if run else None),
        "verdryx.baseline": gate.baseline,
        "verdryx.delta": _num(report.delta if report else None),
        "verdryx.ci_low": _num(interval.low if interval else None),
        "verdryx.ci_high": _num(interval.high if interval else None),
        "verdryx.verdict": gate.verdict if gate.verdict != "not-compared" else "",
        "verdryx.unmeasured": str(len(run.unmeasured)) if run else "",
        "verdryx.cost_usd": f"{run.total_cost_usd:.6g}" if run else "",
        "verdryx.complete": str(run.complete).lower() if run else "false",
    }
    if report is not None and report.paired is not None:
        properties["verdryx.paired_ci_low"] = _num(report.paired.ci_low)
        properties["verdryx.paired_ci_high"] = _num(report.paired.ci_high)
    if run is not None and run.run_group:
        properties["verdryx.run_group"] = run.run_group
    return properties


def gate_junit_xml(
    run: EvalRun | None,
    gate: GateOutcome,
    *,
    extra: Mapping[str, str] | None = None,
    elapsed: float = 0.0,
    failure: str | None = None,
) -> str:
    """The document as text (UTF-8, with its XML declaration); `failure`: why the run fails
    when the verdict does not (a failing case)."""
    failed = gate.regressed or failure is not None
    refused = gate.refused is not None
    suites = ET.Element("testsuites")
    suite = ET.SubElement(
        suites,
        "testsuite",
        {
            "name": "verdryx",
            "errors": str(int(refused)),
            "failures": str(int(failed)),
            "skipped": "0",
            "tests": "1",
            "time": f"{elapsed:.3f}",
            "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        },
    )
    props = ET.SubElement(suite, "properties")
    # Values and the verdict quote a baseline's name, a group and a refusal's reason: made
    # printable (untrusted/text.py), which also keeps out what XML 1.0 cannot hold.
    for name, value in {**suite_properties(run, gate), **(extra or {})}.items():
        ET.SubElement(props, "property", {"name": name, "value": printable(value)})
    case = ET.SubElement(
        suite, "testcase", {"classname": "verdryx", "name": "gate", "time": f"{elapsed:.3f}"}
    )
    line = printable(verdict_line(gate), keep_newlines=False)
    if failure is not None and not gate.regressed:
        line = printable(f"{line}; the run fails: {failure}", keep_newlines=False)
    if refused:
        ET.SubElement(case, "error", {"message": line}).text = line
    elif failed:
        ET.SubElement(case, "failure", {"message": line}).text = line
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode")


def write_gate_junit(
    path: Path,
    run: EvalRun | None,
    gate: GateOutcome,
    *,
    extra: Mapping[str, str] | None = None,
    elapsed: float = 0.0,
    failure: str | None = None,
) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = gate_junit_xml(run, gate, extra=extra, elapsed=elapsed, failure=failure)
    write_text_atomic(path, text + "\n")
