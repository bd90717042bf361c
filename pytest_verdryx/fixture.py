"""The `verdryx` fixture: custom eval cases written in Python.

`grade(output)` grades with the marker's grader and then behaves like an eval item: it returns
the Score when the case passes, and otherwise fails (or xfails, or skips) the test right there.
"""

from __future__ import annotations

from typing import Any, Final

import pytest

from pytest_verdryx.graded_value import WrongValue, graded_value
from pytest_verdryx.items import outcome_for
from pytest_verdryx.options import worded
from pytest_verdryx.scoring import ItemScoring
from verdryx_core.cases import expected_text
from verdryx_core.errors import EvalSetError, VerdryxError
from verdryx_core.evalsets.custom import custom_case
from verdryx_core.evalsets.rules import id_problem
from verdryx_core.evaluation import decided, stored_output
from verdryx_core.runs import CheckResult, Score
from verdryx_core.untrusted.text import printable

__all__ = ["VerdryxCase", "custom_case_identity"]

#: Graders that compare with `expected`: a marker naming no grader (exact) is checked for it
#: only when the test grades (a test may record its own score instead).
_NEEDS_EXPECTED: Final = ("exact", "regex", "contains", "icontains", "numeric", "f1")


def custom_case_identity(item: pytest.Item) -> tuple[str, str]:
    """(eval set id, case id) of a custom case: the test module's node id, and the marker's
    case_id or the rest of the node id. The rest, not `item.name`: two classes of one module
    may hold methods of the same name; a parametrized test with one case_id keeps its
    parameter id, or every parameter would score the same case."""
    marker = item.get_closest_marker("verdryx")
    eval_set_id, _, rest = item.nodeid.partition("::")
    case_id = marker.kwargs.get("case_id") if marker is not None else None
    if not case_id:
        return eval_set_id, rest or item.name
    callspec = getattr(item, "callspec", None)
    return eval_set_id, f"{case_id}[{callspec.id}]" if callspec is not None else str(case_id)


class VerdryxCase:
    def __init__(self, item: pytest.Item, scoring: ItemScoring) -> None:
        self._item = item
        self._scoring = scoring
        marker = item.get_closest_marker("verdryx")
        kwargs: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
        given = kwargs.get("case_id")
        problem = id_problem(str(given)) if given else None
        if problem is not None:
            # Refused like an eval set file's id (docs/evalset-reference.md): the id would be
            # listed raw by every view of the run.
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.verdryx(case_id=...): {printable(problem)}"
            )
        self.eval_set_id, case_id = custom_case_identity(item)
        try:
            # The same fields, schema and rules as a case of an eval set file
            # (docs/custom-cases.md); the judge of an llm_judge case reads `prompt`.
            self.case = custom_case(
                kwargs, case_id=case_id, default_prompt=item.nodeid, where=item.nodeid
            )
        except EvalSetError as exc:
            where = f"({exc.field}=...)" if exc.field else ""
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.verdryx{where}: "
                f"{printable(exc.detail, keep_newlines=False)}"
            ) from None
        self.score: Score | None = None
        # A score the test computed itself is labelled as such, unless the marker names a grader.
        self._recorded_grader = str(kwargs["grader"]) if kwargs.get("grader") else "custom"

    def grade(self, output: object) -> Score:
        """Grade `output` with the marker's grader; fails the test when below the bar."""
        scorer = self._scoring.scorer(fresh=self._scoring.is_rerun(self._item))
        grader = scorer.graders.find(self.case.grader)
        if grader is None:
            pytest.skip(f"verdryx: no grader {self.case.grader!r} configured for this session")
        if self.case.grader in _NEEDS_EXPECTED and self.case.expected is None:
            raise pytest.UsageError(
                f"{self._item.nodeid}: grader {self.case.grader!r} needs expected=... in "
                "@pytest.mark.verdryx"
            )
        context = self._scoring.context.evaluation.context(eval_set_id=self.eval_set_id)
        try:
            output = graded_value(self.case.grader, output)
            wrong = None
        except WrongValue as exc:
            wrong = str(exc)
        if wrong is not None:
            # The test's own mistake, not the agent's: no score, the test fails saying why.
            pytest.fail(f"{self._item.nodeid}: verdryx.grade(): {printable(wrong)}", pytrace=False)
        try:
            grade = grader.grade(self.case, output, context)
        except VerdryxError as exc:
            pytest.fail(f"verdryx: {worded(exc)}", pytrace=False)
        return self._finish(
            value=grade.value,
            unmeasured=grade.unmeasured,
            reason=grade.reason,
            output=output,
            tokens=grade.tokens,
            judge_cost_usd=grade.cost_usd,
            # The grader's own pass bar (tool_trace 1.0), as for a file's case.
            grader_bar=getattr(grader, "default_min_score", None),
            checks=grade.checks,
            failed_by_output=grade.failed_by_output,
        )

    def record(self, score: float, reason: str | None = None) -> Score:
        """Record a score computed by the test itself (in [0, 1])."""
        value = float(score)
        if not 0.0 <= value <= 1.0:
            raise pytest.UsageError(f"{self._item.nodeid}: verdryx.record({score!r}) not in [0, 1]")
        return self._finish(
            value=value, unmeasured=None, reason=reason, output=None, grader=self._recorded_grader
        )

    def _finish(
        self,
        *,
        value: float | None,
        unmeasured: str | None,
        reason: str | None,
        output: object,
        tokens: int = 0,
        judge_cost_usd: float = 0.0,
        grader: str | None = None,
        grader_bar: float | None = None,
        checks: tuple[CheckResult, ...] = (),
        failed_by_output: str | None = None,
    ) -> Score:
        score = decided(
            self.case,
            eval_set_id=self.eval_set_id,
            min_score=self._scoring.context.settings.min_score,
            value=value,
            unmeasured=unmeasured,
            grader=grader or self.case.grader,
            grader_bar=grader_bar,
            checks=checks,
            tokens=tokens,
            judge_cost_usd=judge_cost_usd,
            # As a file case's output and expectation read (lists of calls, JSON): text the
            # store keeps, whatever the grader accepted.
            output=stored_output(output),
            expected=expected_text(self.case),
            reason=reason,
            failed_by_output=failed_by_output,
        )
        # Pooled with the test's earlier attempts when a rerun plugin runs it again.
        score = self.score = self._scoring.record(self._item, score)
        outcome_for(score, self._scoring.context, self.case, raise_below=False)
        return score
