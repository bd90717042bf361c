"""Exports: what a finished session sends out besides the store (JUnit suite properties, the
HTML report; the event log and OTLP spans are the events add-on's). Each is opt-in, checked
at configure time, and none can fail the eval: a problem at the end becomes a line in the
summary."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_verdryx.options import Settings
from verdryx_core.errors import UsageError
from verdryx_core.runs import Baseline, EvalRun

if TYPE_CHECKING:
    from verdryx_core.gating.compare import GateOutcome
    from verdryx_core.gating.comparison import Comparison
    from verdryx_core.judge.pairwise import PairwiseResult
    from verdryx_core.store import Store

__all__ = [
    "add_junit_properties",
    "check_report",
    "write_html_report",
]


def check_report(settings: Settings) -> None:
    """The HTML report is checked at configure time, so a contradiction is exit 4, not a
    silent drop at the end of a long run (the add-ons check their own: verdryx_core.hooks).
    Raises VerdryxError."""
    if settings.report and not settings.store:
        raise UsageError(
            "--verdryx-report draws the run history from the store, and "
            "--no-verdryx-store keeps this run out of it: drop one of the two"
        )


def add_junit_properties(
    config: pytest.Config,
    run: EvalRun,
    result: Comparison | None,
    baseline_name: str,
    extra: Mapping[str, object] | None = None,
) -> None:
    """Suite-level properties through the junitxml plugin object: `record_testsuite_property`
    does nothing under xdist, and the controller is where the drift verdict is known.
    `extra`: more properties, or ones the gate decided otherwise (the sequential gate's)."""
    xml = _junit_xml(config)
    if xml is None:
        return
    drift = result.stats if result else None
    # The interval the verdict used: paired when cases paired (docs/ci.md).
    from verdryx_core.reporting.ci import verdict_interval  # the gate's: numpy with it

    interval = verdict_interval(drift) if drift else None
    properties: dict[str, object] = {
        "verdryx.run_id": run.id,
        "verdryx.model": run.model,
        "verdryx.target": run.target or "",
        "verdryx.mean_score": _num(run.mean_score),
        "verdryx.baseline": baseline_name,
        "verdryx.delta": _num(drift.delta if drift else None),
        "verdryx.ci_low": _num(interval.low if interval else None),
        "verdryx.ci_high": _num(interval.high if interval else None),
        "verdryx.verdict": "" if drift is None else drift.verdict,
        "verdryx.unmeasured": len(run.unmeasured),
        "verdryx.failed_by_output": sum(s.failed_by_output is not None for s in run.scores),
        "verdryx.cost_usd": f"{run.total_cost_usd:.6g}",
        "verdryx.complete": str(run.complete).lower(),
    }
    if drift is not None and drift.paired is not None:
        properties["verdryx.paired_ci_low"] = _num(drift.paired.ci_low)
        properties["verdryx.paired_ci_high"] = _num(drift.paired.ci_high)
    properties.update(extra or {})
    for name, value in properties.items():
        xml.add_global_property(name, value)


def add_case_regressed(
    config: pytest.Config, nodeids: Mapping[str, str], result: Comparison | None
) -> None:
    """Each compared case's testcase gets `verdryx.case_regressed`: `true` when its drop is
    significant after the false discovery correction (docs/statistics.md, "Which cases
    regressed"), else `false`; a tested case also gets `verdryx.case_p` (its drop test's
    p-value) and `verdryx.case_q` (adjusted; empty when it cannot show a drop with its
    samples). `nodeids`: case key -> node id. The testcases were written when each item
    ended, before the gate: the properties are added to what junitxml holds."""
    xml = _junit_xml(config)
    if xml is None or result is None or result.stats is None:
        return
    try:  # guarded private import, as `_junit_xml`
        from _pytest.junitxml import mangle_test_address
    except ImportError:  # pragma: no cover
        return
    compared = {item.key for item in result.deltas}
    wanted: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for key, nodeid in nodeids.items():
        if key not in compared:
            continue
        names = mangle_test_address(nodeid)
        classnames = names[:-1]
        if xml.prefix:
            classnames.insert(0, xml.prefix)
        found = [("verdryx.case_regressed", "true" if result.significant(key) else "false")]
        drop = result.case_drops.get(key)
        if drop is not None:
            found.append(("verdryx.case_p", _num(drop.p_value)))
            found.append(("verdryx.case_q", _num(drop.q_value)))
        wanted[(".".join(classnames), names[-1])] = found
    for reporter in getattr(xml, "node_reporters_ordered", ()):
        element = reporter.to_xml()
        pairs = wanted.get((element.get("classname") or "", element.get("name") or ""))
        if pairs is None:
            continue
        properties = element.find("properties")
        if properties is None:
            properties = ET.Element("properties")
            element.insert(0, properties)
        for name, value in pairs:
            properties.append(ET.Element("property", name=name, value=value))


def write_html_report(
    store: Store,
    path: str,
    run: EvalRun,
    baseline: Baseline | None,
    result: Comparison | None,
    *,
    challenger: tuple[EvalRun, GateOutcome, PairwiseResult | None] | None = None,
) -> str:
    try:
        from verdryx_core.reporting.challenger import challenger_subject
        from verdryx_core.reporting.ci.verdict import verdict_line
        from verdryx_core.reporting.html import ChallengerView, write_report

        view = None
        if challenger is not None:
            rival, outcome, pairwise = challenger
            view = ChallengerView(
                run=rival,
                verdict=verdict_line(
                    outcome, subject=challenger_subject(rival), against="champion"
                ),
                failed=outcome.exit != "ok",
                pairwise=pairwise,
            )
        # The session's own gate result, so the page never disagrees with the exit status.
        written = write_report(
            store, Path(path), run_id=run.id, baseline=baseline, result=result, challenger=view
        )
    except Exception as exc:
        return f"report: not written ({exc})"
    return f"report: {written}"


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


def _junit_xml(config: pytest.Config) -> Any:
    try:  # guarded private import: the junitxml plugin object, to add suite properties
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover
        return None
    return config.stash.get(xml_key, None)
