"""`*.evalset.json` files as pytest collectors, their cases as items, and a score as an
item's outcome.

An item gets its score in `setup` (waiting for a prefetched call, or scoring inline), so an
infrastructure failure is a pytest *error*; `runtest` then turns the score into an outcome:
passed, failed (with a readable report), xfailed (below the bar in the baseline too) or
skipped (unmeasured). Whether it passed was decided once, by the evaluation (`Score.passed`,
against `Score.bar`); `outcome_for` only maps it.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from pytest_verdryx.context import SessionContext
from pytest_verdryx.longrepr import CaseCrash, CaseFailureRepr
from pytest_verdryx.options import worded
from pytest_verdryx.scoring import ItemScoring, scoring_of
from verdryx_core.cases import EvalCase
from verdryx_core.conclusion.policy import edited
from verdryx_core.errors import EvalSetError, ModelCallError, VerdryxError
from verdryx_core.evalsets.load import EvalSet, file_name_problem, load_evalset
from verdryx_core.evaluation import Work, stability
from verdryx_core.runs import BaselineCase, Score
from verdryx_core.untrusted.text import labelled, printable

__all__ = [
    "DROPPED",
    "CaseBelowBar",
    "EvalCaseItem",
    "EvalSetFile",
    "dropped_text",
    "failure_text",
    "outcome_for",
]

#: eval set id -> the file that declared it (one file per id).
_FILES_KEY = pytest.StashKey[dict[str, Path]]()


# pytest's outcome exceptions (`pytest.xfail` raises a subclass of `pytest.fail`'s).
OUTCOMES = (pytest.fail.Exception, pytest.skip.Exception)


class EvalSetFile(pytest.File):
    @classmethod
    def from_parent(
        cls, parent: pytest.Collector, *, fspath: None = None, path: Path | None = None, **kw: Any
    ) -> EvalSetFile:
        collector = super().from_parent(parent, path=path, **kw)
        if file_name_problem(collector.nodeid) is None:
            return collector
        # A file name holding a line break would split pytest's own lines (`ERROR collecting`,
        # the node id): the collector is named escaped, and collecting it refuses the name.
        shown = printable(collector.nodeid, keep_newlines=False)
        name = printable(collector.name, keep_newlines=False)
        escaped = super().from_parent(parent, path=path, nodeid=shown, name=name, **kw)
        escaped.refused_name = collector.nodeid
        return escaped

    #: The node id that named this file, when it is refused (`file_name_problem`).
    refused_name: str | None = None

    def collect(self) -> Iterator[EvalCaseItem]:
        problem = None if self.refused_name is None else file_name_problem(self.refused_name)
        if problem is not None:
            raise EvalSetError(self.path, problem)
        evalset = load_evalset(self.path)
        self.evalset = evalset
        files = self.config.stash.setdefault(_FILES_KEY, {})
        other = files.setdefault(evalset.id, self.path)
        if other != self.path:
            # Cases are compared by eval set id and case id: two files under one id would
            # be one set scoring its cases twice.
            raise EvalSetError(
                self.path,
                f"eval set id {evalset.id!r} is already used by {other}; give each file its own id",
                field="id",
            )
        scoring_of(self.config).context.state.known_keys.update(
            f"{evalset.id}::{case.id}" for case in evalset.cases
        )
        # One grading context for the file's cases: where they come from, in which run.
        self.grade_context = scoring_of(self.config).context.evaluation.context(evalset)
        for index, case in enumerate(evalset.cases):
            yield EvalCaseItem.from_parent(
                self, name=case.id, case=case, evalset=evalset, index=index
            )

    @functools.cached_property
    def case_lines(self) -> tuple[int, ...] | None:
        """Each case's 1-based line in this file, found once per file (for locations)."""
        return self.evalset.case_lines()

    # The signature of pytest's Collector.repr_failure (which narrows Node's, hence the
    # ignore): no `style`. Passing one on was an INTERNALERROR for an eval set file whose
    # error pytest renders through the collector chain.
    def repr_failure(  # type: ignore[override]
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> str | Any:
        if isinstance(excinfo.value, VerdryxError):
            return worded(excinfo.value)
        if isinstance(excinfo.value, RecursionError):
            return f"{self.path}: nests too deeply to read ({excinfo.value})"
        return super().repr_failure(excinfo)


class EvalCaseItem(pytest.Item):
    def __init__(
        self, *, case: EvalCase, evalset: EvalSet, index: int | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.evalset = evalset
        #: The case's position in its file (its line is looked up from it).
        self.index = index
        self.score: Score | None = None
        # Tags become keywords, so `-k refund` selects the refund cases.
        self.extra_keyword_matches.update(case.tags)
        self.extra_keyword_matches.add(case.grader)

    @property
    def _scoring(self) -> ItemScoring:
        return scoring_of(self.config)

    def work(self) -> Work:
        """This case as the evaluation's work, keyed by node id."""
        parent = self.parent
        if isinstance(parent, EvalSetFile):
            return Work(self.nodeid, self.case, parent.grade_context)
        evaluation = self._scoring.context.evaluation
        return evaluation.work(self.evalset, self.case, key=self.nodeid)

    def setup(self) -> None:
        # Setup failures are reported by pytest without `repr_failure`: fail with the
        # message alone, so an infrastructure error reads as one line, not a traceback.
        problem: str | None = None
        scoring = self._scoring
        try:
            self.score = scoring.score(self, self.work())
        except ModelCallError as exc:
            problem = f"infrastructure error (not a score): {worded(exc)}"
        except VerdryxError as exc:
            problem = f"{self.nodeid}: {worded(exc)}"
        if problem is not None:  # outside `except`: no "during handling" chain in the report
            scoring.context.state.errors.append(
                problem if problem.startswith(self.nodeid) else f"{self.nodeid}: {problem}"
            )
            pytest.fail(problem, pytrace=False)

    def runtest(self) -> None:
        assert self.score is not None
        outcome_for(self.score, self._scoring.context, self.case)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | Any:
        if isinstance(excinfo.value, CaseBelowBar):
            # One line for `--tb=line` (and JUnit's message): the case's file and line.
            path, line, _ = self.location
            crash = CaseCrash(path, (line or 0) + 1, excinfo.value.text)
            terse = self.config.getoption("tbstyle", "auto") == "line"
            return CaseFailureRepr(excinfo.value.text, crash, terse=terse)
        if isinstance(excinfo.value, ModelCallError):
            return f"infrastructure error (not a score): {worded(excinfo.value)}"
        if isinstance(excinfo.value, VerdryxError):
            return worded(excinfo.value)
        if isinstance(excinfo.value, OUTCOMES):
            # The plugin's own outcome (`outcome_for`): the message is the whole report, and
            # pytest's traceback over its internal frames costs ~0.1 s a case (xfailed included).
            return str(excinfo.value.msg or "")
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        # The case's line (0-based, as pytest counts), so every tool that shows a location
        # (pytest-sugar, IDEs, annotations) points at the case itself.
        line: int | None = None
        lines = self.parent.case_lines if isinstance(self.parent, EvalSetFile) else None
        if lines is not None and self.index is not None and self.index < len(lines):
            line = lines[self.index] - 1
        return self.path, line, f"{self.evalset.id}::{self.case.id} [{self.case.grader}]"


class CaseBelowBar(Exception):
    """Raised by an item whose score is below its pass bar; rendered by `repr_failure`."""

    def __init__(self, text: str) -> None:
        self.text = text
        super().__init__(text)


def outcome_for(
    score: Score,
    context: SessionContext,
    case: EvalCase | None,
    *,
    raise_below: bool = True,
) -> None:
    """Turn a score into a pytest outcome. Items raise `CaseBelowBar` for
    their own `repr_failure`; a custom test (`raise_below=False`) fails with the text alone,
    since its traceback would only show the plugin's internals."""
    if score.passed:
        return
    kind = context.standing(score)
    if score.value is None:
        reason = printable(f"unmeasured: {score.unmeasured}", keep_newlines=False)
        if kind == "failed":
            # A case that must never fail fails when it could not be measured at all.
            pytest.fail(f"required case {score.key} was not measured ({reason})", pytrace=False)
        pytest.skip(reason)
    if kind == "passed":
        return
    assert score.bar is not None  # a measured score is decided against its bar
    bar = score.bar
    base = context.baseline_case(score.key)
    # `pytrace=False`: a custom case's report shows the reason, not the plugin's frames.
    if kind == "excused" and base is not None:
        raise pytest.xfail.Exception(
            printable(
                f"score {score.value:.3f} {_why_not_passed(score, bar, 'the bar')}, as in baseline "
                f"{context.baseline_name} ({base.value:.3f})",
                keep_newlines=False,
            ),
            pytrace=False,
        )
    if kind == "dropped" and base is not None:
        raise pytest.xfail.Exception(dropped_text(score, bar, base), pytrace=False)
    text = failure_text(score, bar, case, new=_new_words(context, base, score))
    if not raise_below:
        pytest.fail(text, pytrace=False)
    raise CaseBelowBar(text)


def _new_words(context: SessionContext, base: BaselineCase | None, score: Score) -> str | None:
    """Why a case with a baseline named fails whatever the verdict: the baseline has no score
    of it (docs/outcomes.md)."""
    if context.baseline is None or score.required:
        return None
    if base is None:
        return f"new since baseline {context.baseline_name}: it cannot have dropped"
    return None


#: The start of a dropped case's xfail reason, which CI outputs count by.
DROPPED: Final = "dropped:"


def dropped_text(score: Score, bar: float, base: BaselineCase) -> str:
    """A case below its bar that does not fail the session: its score, its drop, who decides."""
    assert score.value is not None
    if edited(base, score):
        against = "edited since the baseline"
    else:
        against = f"baseline {base.value:.3f}, {score.value - base.value:+.3f}"
    why = _why_not_passed(score, bar, "the bar")
    return printable(
        f"{DROPPED} score {score.value:.3f} {why} ({against}); the gate's "
        "verdict decides (--verdryx-fail-on=cases fails each such case)",
        keep_newlines=False,
    )


def _check_lines(score: Score) -> list[str]:
    """A multi-check case's checks, one block each: its grader, the part it read, its score
    and weight, then its reason indented under it (docs/scenarios.md)."""
    lines = ["checks:"]
    for number, check in enumerate(score.checks, start=1):
        shown = "--" if check.value is None else f"{check.value:.3f}"
        on = f" on {check.on}" if check.on else ""
        lines.append(f"  #{number} {check.grader}{on}: {shown} (weight {check.weight:g})")
        why = check.unmeasured or check.reason
        if why:
            lines.extend("      " + line for line in why.split("\n"))
    return lines


def _why_not_passed(score: Score, bar: float, words: str = "the pass bar") -> str:
    """`below the pass bar B`, or, for a score at its bar, the check below its own
    (docs/graders.md, "Multi-check cases")."""
    assert score.value is not None
    if score.value < bar:
        return f"below {words} {bar:g}"
    number, short = next(
        ((n, c) for n, c in enumerate(score.checks, start=1) if c.short), (0, None)
    )
    if short is None or short.value is None or short.bar is None:
        return f"at {words} {bar:g}, but a check is below its own bar"
    return (
        f"at {words} {bar:g}, but check #{number} {short.grader} scored "
        f"{short.value:.3f}, below its own bar {short.bar:g}"
    )


def failure_text(score: Score, bar: float, case: EvalCase | None, *, new: str | None = None) -> str:
    why = _why_not_passed(score, bar)
    lines = [f"{score.key} scored {score.value:.3f}, {why}  [grader: {score.grader}]"]
    if score.failed_by_output is not None:
        # Said first: a 0 for what could not be graded, not a grader's judgement.
        lines.append(labelled("could not grade the output (scored 0)", score.failed_by_output))
    if new:
        lines.append(new)
    if score.samples:
        shown = ", ".join(f"{value:.2f}" for value in score.samples)
        lines.append(f"samples: {shown}  ({stability(score.samples, bar, score.passes)})")
    expected = score.expected
    output = score.output
    if score.grader == "tool_trace" and score.reason:
        # The reason names every call, matched or not, with its arguments: said once.
        lines.append(labelled("reason", score.reason))
        return printable("\n".join(lines))
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
            lines.append(labelled(label, expected))
        if score.grader == "outcome_tag" and case is not None:
            lines.append(f"recorded outcome: {case.prompt!r}")
        elif output is not None:
            # A simulated dialogue's output is its transcript (docs/scenarios.md).
            shown = "transcript" if output.startswith("[transcript]\n") else "output"
            lines.append(labelled(shown, output))
    if score.checks:
        lines.extend(_check_lines(score))
    elif score.reason and score.reason != score.failed_by_output:
        lines.append(labelled("reason", score.reason))
    # An agent's output, an expected value or a judge's reason may hold NUL, terminal escapes,
    # U+2028 or a line a CI runner would run (`::error ...`): each further line of a value is
    # indented under its label, and the whole report is made printable, once, here
    # (verdryx_core.untrusted.text).
    return printable("\n".join(lines))
