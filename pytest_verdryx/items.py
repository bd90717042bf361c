"""`*.evalset.json` files as pytest collectors, and their cases as items.

An item gets its score in `setup` (waiting for a prefetched model call, or grading inline), so
an infrastructure failure is a pytest *error*; `runtest` then turns the score into an outcome:
passed, failed (with a readable report), xfailed (also below the bar in the baseline), or
skipped (unmeasured).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from verdryx_core.errors import EvalSetError, ModelCallError, VerdryxError
from verdryx_core.evalset import EvalSet, load_evalset
from verdryx_core.model import EvalCase, Score
from verdryx_core.runner import pass_bar, stability

if TYPE_CHECKING:
    from pytest_verdryx.session import VerdryxSession

__all__ = ["CaseBelowBar", "EvalCaseItem", "EvalSetFile", "failure_report", "outcome_for"]


class CaseBelowBar(Exception):
    """Raised by an item whose score is below its pass bar; rendered by `repr_failure`."""

    def __init__(self, report: str) -> None:
        self.report = report
        super().__init__(report)


# pytest's outcome exceptions (`pytest.xfail` raises a subclass of `pytest.fail`'s).
OUTCOMES = (pytest.fail.Exception, pytest.skip.Exception)


class EvalSetFile(pytest.File):
    def collect(self) -> Iterator[EvalCaseItem]:
        evalset = load_evalset(self.path)
        self.evalset = evalset
        from pytest_verdryx.session import session_of

        session = session_of(self.config)
        other = session.eval_set_files.setdefault(evalset.id, self.path)
        if other != self.path:
            # Cases are compared by eval set id and case id: two files under one id would
            # be one set scoring its cases twice.
            raise EvalSetError(
                self.path,
                f"eval set id {evalset.id!r} is already used by {other}; give each file its own id",
                field="id",
            )
        session.note_collected(evalset.id, (case.id for case in evalset.cases))
        for case in evalset.cases:
            yield EvalCaseItem.from_parent(self, name=case.id, case=case, evalset=evalset)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, VerdryxError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)


class EvalCaseItem(pytest.Item):
    def __init__(self, *, case: EvalCase, evalset: EvalSet, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.evalset = evalset
        self.score: Score | None = None
        # Tags become keywords, so `-k refund` selects the refund cases.
        self.extra_keyword_matches.update(case.tags)
        self.extra_keyword_matches.add(case.grader)

    @property
    def _session(self) -> VerdryxSession:
        from pytest_verdryx.session import session_of

        return session_of(self.config)

    def setup(self) -> None:
        # Setup failures are reported by pytest without `repr_failure`: fail with the
        # message alone, so an infrastructure error reads as one line, not a traceback.
        problem: str | None = None
        try:
            self.score = self._session.score_item(self)
        except ModelCallError as exc:
            problem = f"infrastructure error (not a score): {exc}"
        except VerdryxError as exc:
            problem = f"{self.nodeid}: {exc}"
        if problem is not None:  # outside `except`: no "during handling" chain in the report
            pytest.fail(problem, pytrace=False)

    def runtest(self) -> None:
        assert self.score is not None
        outcome_for(self.score, self.case.min_score, self._session, self.case)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, CaseBelowBar):
            return excinfo.value.report
        if isinstance(excinfo.value, ModelCallError):
            return f"infrastructure error (not a score): {excinfo.value}"
        if isinstance(excinfo.value, VerdryxError):
            return str(excinfo.value)
        if isinstance(excinfo.value, OUTCOMES):
            # The plugin's own outcome (`outcome_for`): the message is the whole report, and
            # pytest's traceback over its internal frames costs ~0.1 s a case (xfailed included).
            return str(excinfo.value.msg or "")
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"{self.evalset.id}::{self.case.id} [{self.case.grader}]"


def outcome_for(
    score: Score,
    case_min_score: float | None,
    session: VerdryxSession,
    case: EvalCase | None,
    *,
    raise_report: bool = True,
) -> None:
    """Turn a score into a pytest outcome (docs/outcomes.md). Items raise `CaseBelowBar`
    for their own `repr_failure`; a custom test (`raise_report=False`) fails with the report
    alone, since its traceback would only show the plugin's internals."""
    if score.value is None:
        pytest.skip(f"unmeasured: {score.unmeasured}")
    bar = pass_bar(case_min_score, session.settings.min_score)
    if score.value >= bar:
        return
    base = session.excused_by_baseline(score, bar)
    if base is not None:
        # `pytrace=False`: a custom case's report shows the reason, not the plugin's frames.
        raise pytest.xfail.Exception(
            f"score {score.value:.3f} below the bar {bar:g}, as in baseline "
            f"{session.baseline_name} ({base.value:.3f})",
            pytrace=False,
        )
    report = failure_report(score, bar, case)
    if not raise_report:
        pytest.fail(report, pytrace=False)
    raise CaseBelowBar(report)


def failure_report(score: Score, bar: float, case: EvalCase | None) -> str:
    lines = [
        f"{score.key} scored {score.value:.3f}, below the pass bar {bar:g}  "
        f"[grader: {score.grader}]"
    ]
    if score.samples:
        shown = ", ".join(f"{value:.2f}" for value in score.samples)
        lines.append(f"samples: {shown}  ({stability(score.samples, bar)})")
    expected = score.expected
    output = score.output
    if score.grader == "exact" and expected is not None and output is not None:
        lines.append(f"expected: {expected!r}")
        lines.append(f"output:   {output!r}")
        diff = difflib.unified_diff(
            expected.splitlines(keepends=True) or [""],
            output.splitlines(keepends=True) or [""],
            fromfile="expected",
            tofile="output",
            lineterm="",
        )
        lines.append("diff:")
        lines.extend("  " + line.rstrip("\n") for line in diff)
    else:
        label = {
            "regex": "pattern",
            "llm_judge": "rubric",
            "tool_trace": "expected tools",
            "contract": "contract",
        }.get(score.grader, "expected")
        if expected is not None:
            lines.append(f"{label}: {expected}")
        if score.grader == "outcome_tag" and case is not None:
            lines.append(f"recorded outcome: {case.prompt!r}")
        elif output is not None:
            lines.append(f"output: {output}")
    if score.reason:
        lines.append(f"reason: {score.reason}")
    return "\n".join(lines)
