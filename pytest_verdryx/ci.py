"""What CI sees from a session (docs/ci.md): the gate as one more test (`verdryx::gate`, so
JUnit and pytest's summary line count it), GitHub annotations and the job summary.

Runs on the controller only (or without xdist): failed cases are read from the reports that
reach it, so workers need nothing extra. The rendering itself is `verdryx_core.reporting.ci`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_verdryx.items import DROPPED
from verdryx_core.evalsets.lines import read_case_lines_by_id
from verdryx_core.gating.compare import GateOutcome
from verdryx_core.reporting.ci import (
    CaseFailure,
    github_annotations,
    step_summary,
    verdict_line,
)
from verdryx_core.runs import EvalRun
from verdryx_core.untrusted.text import printable

if TYPE_CHECKING:
    from verdryx_core.judge.pairwise import PairwiseResult

__all__ = ["CHALLENGER_NODEID", "GATE_NODEID", "CiOutputs"]

#: JUnit: classname `verdryx`, name `gate`.
GATE_NODEID = "verdryx::gate"
#: The challenger's gate against the champion (docs/targets.md, "A challenger").
CHALLENGER_NODEID = "verdryx::challenger"


class CiOutputs:
    """Registered by the plugin on the controller; the session calls `finish` once the run is
    assembled and gated, before the junitxml plugin writes its file."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.failures: list[CaseFailure] = []
        self.counts = {"passed": 0, "failed": 0, "xfailed": 0, "dropped": 0}
        self.run: EvalRun | None = None
        self.gate: GateOutcome | None = None
        self._lines: dict[str, dict[str, int]] = {}
        #: A line for the summary when the job summary could not be written.
        self.problem: str | None = None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session: pytest.Session | None = session

    # -- the cases, as their reports arrive -------------------------------------------------

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.nodeid in (GATE_NODEID, CHALLENGER_NODEID) or not _is_case(report):
            return
        if report.when != "call":
            return
        if str(getattr(report, "wasxfail", "")).startswith(DROPPED):
            # Below its bar, reported, and left to the verdict (docs/outcomes.md).
            self.counts["dropped"] += 1
            self.failures.append(self._failure(report, dropped=True))
        elif hasattr(report, "wasxfail"):
            self.counts["xfailed"] += 1
        elif report.passed:
            self.counts["passed"] += 1
        elif report.failed:
            self.counts["failed"] += 1
            self.failures.append(self._failure(report))

    def _failure(self, report: pytest.TestReport, *, dropped: bool = False) -> CaseFailure:
        relpath, line, _ = report.location
        path = self.config.rootpath / relpath
        if line is not None:
            shown: int | None = line + 1
        else:  # an eval set item whose reportinfo has no line: find the case in its file
            key = str(path)
            if key not in self._lines:
                self._lines[key] = read_case_lines_by_id(path)
            shown = self._lines[key].get(report.nodeid.rsplit("::", 1)[-1])
        return CaseFailure(
            key=report.nodeid,
            file=_repository_path(path),
            line=shown,
            message=str(report.wasxfail) if dropped else _text(report.longrepr),
            dropped=dropped,
        )

    # -- the end ----------------------------------------------------------------------------

    def finish(
        self,
        run: EvalRun | None,
        gate: GateOutcome | None,
        *,
        gated: bool,
        refused: str | None = None,
        challenger: tuple[EvalRun, GateOutcome] | None = None,
        pairwise: PairwiseResult | None = None,
    ) -> None:
        """Log the gate's report (when a baseline was named, or the run was refused without
        one: `refused`, why) and append the job summary. `gated`: False when the run was not
        compared (interrupted, incomplete)."""
        self.run, self.gate = run, gate
        if gate is not None:
            self._log_gate(gate, gated=gated)
        elif refused is not None and (challenger is None or challenger[1].refused is None):
            # Nothing measured, with no baseline named: the session is a usage error, and
            # the gate testcase says why, so JUnit agrees with the exit status.
            self._log_refused(refused)
        if challenger is not None:
            rival, outcome = challenger
            from verdryx_core.reporting.challenger import challenger_subject

            line = verdict_line(outcome, subject=challenger_subject(rival), against="champion")
            self._log_gate(
                outcome,
                gated=outcome.not_gated is None,
                nodeid=CHALLENGER_NODEID,
                line=line,
                not_gated=line,
                extra=_pairwise_properties(pairwise),
            )
        summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary_path and run is not None:
            text = step_summary(
                run,
                gate if gated else None,
                self.failures,
                passed=self.counts["passed"],
                failed=self.counts["failed"],
                xfailed=self.counts["xfailed"],
                dropped=self.counts["dropped"],
            )
            try:
                with open(summary_path, "a", encoding="utf-8") as handle:
                    handle.write(text)
            except OSError as exc:  # the job summary is a view: it never fails the eval
                self.problem = f"verdryx: job summary not written to {summary_path}: {exc}"

    def _log_refused(self, why: str) -> None:
        text = printable(f"verdryx: the run was refused: {why}", keep_newlines=False)
        self._log("failed", "setup", text, [("verdryx.verdict", "refused")])

    def _log_gate(
        self,
        gate: GateOutcome,
        *,
        gated: bool,
        nodeid: str = GATE_NODEID,
        line: str | None = None,
        not_gated: str = "not gated: the run is incomplete",
        extra: list[tuple[str, str]] | None = None,
    ) -> None:
        """One gate as a testcase: the baseline's (`verdryx::gate`), or the challenger's
        against its champion (`verdryx::challenger`, worded by its own `line`)."""
        verdict = gate.verdict
        line = verdict_line(gate) if line is None else line
        if not gated:
            outcome, when, text = "skipped", "call", not_gated
        elif verdict == "refused":
            outcome, when, text = "failed", "setup", line
        elif verdict == "regressed":
            outcome, when, text = "failed", "call", line
        elif verdict == "not-compared":
            outcome, when, text = "skipped", "call", line
        else:
            outcome, when, text = "passed", "call", None
        if text is not None:  # it quotes a baseline's name and a refusal's reason
            text = printable(text, keep_newlines=False)
        properties = [("verdryx.verdict", verdict)]
        if gated:
            # The whole verdict, power and coverage included, even when the testcase passes.
            properties.append(("verdryx.verdict_line", printable(line, keep_newlines=False)))
        properties.extend(extra or ())
        self._log(outcome, when, text, properties, nodeid=nodeid)

    def _log(
        self,
        outcome: str,
        when: str,
        text: str | None,
        properties: list[tuple[str, str]],
        *,
        nodeid: str = GATE_NODEID,
    ) -> None:
        """The gate testcase's reports, as pytest would send them for one more test."""
        hook = self.config.hook
        name = nodeid.split("::", 1)[1]
        location = ("verdryx", None, f"verdryx {name}")

        def report(phase: str, result: str, longrepr: Any) -> pytest.TestReport:
            return pytest.TestReport(
                nodeid=nodeid,
                location=location,
                keywords={"verdryx": 1, name: 1},
                outcome=result,  # type: ignore[arg-type]
                longrepr=longrepr,
                when=phase,  # type: ignore[arg-type]
                user_properties=properties if phase == "teardown" else [],
            )

        session = getattr(self, "session", None)
        if session is not None:
            # One more test: pytest's progress counts it (no "[105%]") as its summary line does.
            session.testscollected += 1
        self._start_own_line()
        hook.pytest_runtest_logstart(nodeid=nodeid, location=location)
        if when == "setup":
            hook.pytest_runtest_logreport(report=report("setup", "failed", text))
        else:
            hook.pytest_runtest_logreport(report=report("setup", "passed", None))
            skipped = ("verdryx", 0, text) if outcome == "skipped" else None
            hook.pytest_runtest_logreport(
                report=report("call", outcome, skipped if outcome == "skipped" else text)
            )
        hook.pytest_runtest_logreport(report=report("teardown", "passed", None))
        hook.pytest_runtest_logfinish(nodeid=nodeid, location=location)

    def _start_own_line(self) -> None:
        """The gate's letter on a line of its own, not after the last item's `[100%]`."""
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is None or self.config.get_verbosity() > 0:
            return  # verbose: every test is on its own line already
        if tr.currentfspath is not None:
            # The next file line ends this one; without a current file, pytest does not
            # repeat this line's progress first.
            tr.currentfspath = None
        else:  # -q and xdist print letters only
            tr.write_line("")

    @pytest.hookimpl(trylast=True)  # after the verdryx section: the annotations close the output
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.problem:
            terminalreporter.write_line(printable(self.problem, keep_newlines=False), yellow=True)
        if os.environ.get("GITHUB_ACTIONS") != "true":
            return
        # Each annotation is one line, its parts escaped where it was built: split on "\n"
        # alone, as the runner does (`splitlines()` would also split on U+2028 and others).
        text = github_annotations(self.failures, self.gate)
        for line in text.split("\n")[:-1]:
            terminalreporter.write_line(line)


def _pairwise_properties(pairwise: PairwiseResult | None) -> list[tuple[str, str]]:
    """The pairwise judge's figures on the challenger's testcase (docs/ci.md)."""
    if pairwise is None:
        return []
    rate, interval = pairwise.win_rate, pairwise.interval
    return [
        ("verdryx.pairwise_judge", printable(pairwise.judge, keep_newlines=False)),
        ("verdryx.pairwise_win_rate", "" if rate is None else f"{rate:.6g}"),
        ("verdryx.pairwise_ci_low", "" if interval is None else f"{interval[0]:.6g}"),
        ("verdryx.pairwise_ci_high", "" if interval is None else f"{interval[1]:.6g}"),
        (
            "verdryx.pairwise_counts",
            f"{pairwise.wins} won, {pairwise.losses} lost, {pairwise.ties} tied, "
            f"{pairwise.unmeasured} unmeasured",
        ),
    ]


def _text(longrepr: object) -> str:
    """The failure text alone: `longreprtext` would add xdist's "[gw0] linux -- Python" line."""
    if longrepr is None:
        return ""
    return (longrepr if isinstance(longrepr, str) else str(longrepr)).strip()


def _is_case(report: pytest.TestReport) -> bool:
    """A verdryx case (file or custom): the plugin put its grader on the report."""
    return any(name == "verdryx.grader" for name, _ in report.user_properties)


def _repository_path(path: Path) -> str:
    """The path GitHub pins an annotation to: relative to the checkout (GITHUB_WORKSPACE)
    when the file is inside it, else relative to the current folder."""
    base = os.environ.get("GITHUB_WORKSPACE") or os.getcwd()
    try:
        return Path(os.path.relpath(path, base)).as_posix()
    except ValueError:  # another drive on Windows
        return path.as_posix()
