"""Grading one case into a Score: get its output (from its source), grade it (once per
sample), and decide pass or fail against the case's pass bar.

The pass bar is decided here, once per case, and carried on the Score (`Score.bar`): every
reader of a score (the item's outcome, the summary's counts, the stability label) uses
`score.bar`, never its own copy of the rule.

Both faces use this, the CLI's `eval` and the pytest items: whatever one face can do with a
case, the other can.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from verdryx_core.cases import CaseOutput, EvalCase, expected_text, output_text
from verdryx_core.evaluation.aggregate import aggregate, samples_problem
from verdryx_core.evaluation.settings import DEFAULT_MIN_SCORE
from verdryx_core.evaluation.sources import OutputSource, source_for
from verdryx_core.evaluation.workspaces import Workspaces
from verdryx_core.graders.base import Grade, GradeContext, Grader
from verdryx_core.graders.registry import default_min_score
from verdryx_core.graders.table import GraderTable
from verdryx_core.runs import CheckResult, Score

__all__ = ["CaseScorer", "decided", "pass_bar", "short_check", "stability", "stored_output"]

#: Stored outputs are for reading in reports; beyond this they are cut (and say so).
_MAX_STORED_OUTPUT: Final = 8_000


def _remote(grader: Grader | None) -> bool:
    """Whether grading calls a service (the judge model, a plugged-in service grader)."""
    return bool(getattr(grader, "remote", False))


@dataclass(frozen=True, slots=True, kw_only=True)
class _Sample:
    grade: Grade
    output: Any
    tokens: int
    model_cost_usd: float
    latency_s: float | None = None
    #: The sample's kept folder (`--verdryx-keep-workspaces`), else None.
    kept: str | None = None


class CaseScorer:
    """Scores cases with one set of graders and one live output source (None: recorded
    outputs only). Thread-safe when its graders and source are: the pool calls it."""

    def __init__(
        self,
        *,
        graders: GraderTable,
        live: OutputSource | None = None,
        repeat: int = 1,
        min_score: float | None,
        flags: Mapping[str, str],
        repeats_for: Callable[[EvalCase, GradeContext], int] | None = None,
        workspaces: Workspaces | None = None,
    ) -> None:
        self.graders = graders
        self.live = live
        self.repeat = max(1, repeat)
        #: Samples of one case when they differ by case (`--verdryx-repeat=auto`).
        self.repeats_for = repeats_for
        self.min_score = min_score
        self.flags = flags
        #: Where workspace cases get their fresh folders (one per sample).
        self.workspaces = Workspaces() if workspaces is None else workspaces

    def is_remote(self, case: EvalCase) -> bool:
        """Whether scoring this case makes a network call (its source or its grader)."""
        if not self.graders.has(case.grader):
            return False  # skipped before any call
        if _remote(self.graders.find(case.grader)):
            return True
        return case.needs_model and self.live is not None and self.live.remote

    def call_kinds(self, case: EvalCase) -> tuple[str, ...]:
        """What scoring `case` calls, in the words the progress line and the summary say:
        `target calls` or `model calls` for its output, then its grader's own (`judge calls`,
        `sandbox runs`); empty for a case scored inline. A sandbox run on a recorded output
        is not a model call."""
        if not self.graders.has(case.grader):
            return ()
        kinds: list[str] = []
        if case.needs_model and self.live is not None and self.live.remote:
            uses_target = getattr(self.live, "uses_target", None)
            targeted = uses_target is not None and uses_target(case)
            kinds.append("target calls" if targeted else "model calls")
        grader = self.graders.find(case.grader)
        if _remote(grader):
            kinds.append(str(getattr(grader, "calls", "grader calls")))
        return tuple(kinds)

    def score(self, case: EvalCase, context: GradeContext) -> Score:
        """Grade one case; raises ModelCallError on infrastructure failure."""
        try:
            grader = self.graders[case.grader]
        except KeyError:
            reason = self.graders.missing_reason(case.grader)
            return self._score(case, context, value=None, unmeasured=reason)
        source = source_for(case, self.live)
        rounds = self._rounds(case, context, source)
        samples = [self._sample(case, grader, source, context, index) for index in range(rounds)]
        graded = [s.grade for s in samples if s.grade.value is not None]
        measured = [g.value for g in graded if g.value is not None]
        tokens = sum(s.tokens for s in samples)
        model_cost = math.fsum(s.model_cost_usd for s in samples)
        judge_cost = math.fsum(s.grade.cost_usd for s in samples)
        last = samples[-1]
        reasons = [s.grade.reason for s in samples if s.grade.reason]
        latencies = [s.latency_s for s in samples if s.latency_s is not None]
        latency = math.fsum(latencies) if latencies else None
        kept = tuple(s.kept for s in samples if s.kept is not None)
        # A sample whose output could not be graded scored 0 (it is measured); the case says
        # why, so the summary, JUnit and --json list it (docs/outcomes.md).
        failures = [s.grade.failed_by_output for s in samples if s.grade.failed_by_output]
        failed_by_output = failures[-1] if failures else None
        if not measured:
            return self._score(
                case,
                context,
                grader=grader,
                value=None,
                unmeasured=last.grade.unmeasured or "unmeasured",
                tokens=tokens,
                cost_usd=model_cost,
                judge_cost_usd=judge_cost,
                output=last.output,
                reason=reasons[-1] if reasons else None,
                checks=last.grade.checks,
                notes=last.grade.notes,
                latency_s=latency,
                workspaces=kept,
            )
        bar = pass_bar(
            case.min_score,
            self.min_score,
            grader_default=getattr(grader, "default_min_score", None),
        )
        # A sample passes when it reaches the case's bar and each of its checks its own
        # (docs/graders.md, "Multi-check cases").
        passes = [g.value is not None and g.value >= bar and _checks_pass(g.checks) for g in graded]
        short: str | None = None
        if case.aggregate is None or case.aggregate == "mean":
            # Nearly every case: the mean, each sample in [0, 1] (the clamp guards float sums).
            value = min(1.0, max(0.0, math.fsum(measured) / len(measured)))
            short = short_check(graded)
        else:
            problem = samples_problem(case.aggregate, len(measured))
            if problem is not None:
                return self._score(
                    case, context, grader=grader, value=None, unmeasured=problem, tokens=tokens,
                    cost_usd=model_cost, judge_cost_usd=judge_cost, output=last.output,
                )  # fmt: skip
            value = aggregate(measured, passes, case.aggregate)
        return self._score(
            case,
            context,
            grader=grader,
            value=value,
            tokens=tokens,
            cost_usd=model_cost,
            judge_cost_usd=judge_cost,
            output=last.output,
            reason=reasons[-1] if reasons else None,
            samples=tuple(measured) if rounds > 1 else (),
            checks=last.grade.checks,
            notes=last.grade.notes,
            latency_s=latency,
            workspaces=kept,
            failed_by_output=failed_by_output,
            short_of=short,
            # Kept only where a sample's pass is more than its value against the bar.
            passes=tuple(passes) if rounds > 1 and any(g.checks for g in graded) else (),
        )

    def grades_remotely(self, case: EvalCase) -> bool:
        """Whether grading this case (not producing its output) makes a network call."""
        return self.graders.has(case.grader) and _remote(self.graders.find(case.grader))

    def samples_of(self, case: EvalCase, context: GradeContext) -> int:
        """How many outputs scoring `case` asks its source for."""
        return self._rounds(case, context, source_for(case, self.live))

    def _rounds(self, case: EvalCase, context: GradeContext, source: OutputSource) -> int:
        # Repeats sample a live source; a recorded output is one fixed measurement.
        repeat = self.repeat if self.repeats_for is None else self.repeats_for(case, context)
        return max(1, repeat) if source.samples else 1

    def abort(self) -> None:
        """Ctrl-C: the live source gives up on what it has in flight (targets do)."""
        abort = getattr(self.live, "abort", None)
        if abort is not None:
            abort()
        self.workspaces.abort()

    def _sample(
        self,
        case: EvalCase,
        grader: Grader,
        source: OutputSource,
        context: GradeContext,
        index: int,
    ) -> _Sample:
        context = replace(context, repeat=index)
        if case.workspace is None:
            return self._timed_sample(case, grader, source, context)
        # A fresh copy for each sample: the target changes it, the graders read what it left.
        sample = self.workspaces.make(
            case.workspace, name=f"{context.eval_set_id}-{case.id}", repeat=index
        )
        try:
            context = replace(context, workspace=sample.workspace, evidence=sample.evidence)
            done = self._timed_sample(case, grader, source, context)
        finally:
            self.workspaces.release(sample)
        return replace(done, kept=str(sample.folder) if self.workspaces.keep else None)

    def _timed_sample(
        self, case: EvalCase, grader: Grader, source: OutputSource, context: GradeContext
    ) -> _Sample:
        index = context.repeat
        started = time.perf_counter()
        produced = source.produce(case, repeat=index, context=context)
        graded = time.perf_counter()
        output = produced.output
        if isinstance(output, CaseOutput) and case.checks is None:
            # A whole sample (a dialogue's) graded by one grader: the part that grader reads.
            output = output.part_for(case.grader)
        grade = grader.grade(case, output, context)
        ended = time.perf_counter()
        # The sample's calls, timed: the item's duration (--durations, JUnit time) is its own
        # calls' latency. A target reports its own (from when it got its slot).
        latencies = [
            produced.latency_s
            if produced.latency_s is not None
            else (graded - started if source.remote else None),
            ended - graded if _remote(grader) else None,
        ]
        measured = [seconds for seconds in latencies if seconds is not None]
        return _Sample(
            grade=grade,
            output=produced.output,
            tokens=produced.tokens + grade.tokens,
            model_cost_usd=produced.cost_usd,
            latency_s=math.fsum(measured) if measured else None,
        )

    def _score(
        self,
        case: EvalCase,
        context: GradeContext,
        *,
        grader: Grader | None = None,
        value: float | None,
        unmeasured: str | None = None,
        tokens: int = 0,
        cost_usd: float = 0.0,
        judge_cost_usd: float = 0.0,
        output: Any = None,
        reason: str | None = None,
        samples: tuple[float, ...] = (),
        checks: tuple[CheckResult, ...] = (),
        notes: Mapping[str, str] | None = None,
        latency_s: float | None = None,
        workspaces: tuple[str, ...] = (),
        failed_by_output: str | None = None,
        short_of: str | None = None,
        passes: tuple[bool, ...] = (),
    ) -> Score:
        score = decided(
            case,
            eval_set_id=context.eval_set_id,
            min_score=self.min_score,
            value=value,
            unmeasured=unmeasured,
            grader=case.grader,
            grader_bar=(
                default_min_score(case.grader)
                if grader is None
                else getattr(grader, "default_min_score", None)
            ),
            tokens=tokens,
            cost_usd=cost_usd,
            judge_cost_usd=judge_cost_usd,
            output=stored_output(output),
            expected=expected_text(case),
            reason=reason,
            samples=samples,
            checks=checks,
            failed_by_output=failed_by_output,
            short_of=short_of,
        )
        if latency_s is not None or notes or workspaces or passes:
            score = replace(
                score,
                latency_s=latency_s,
                notes=notes or None,
                workspaces=workspaces,
                passes=passes,
            )
        return score


def decided(
    case: EvalCase,
    *,
    eval_set_id: str,
    min_score: float | None,
    value: float | None,
    grader: str,
    grader_bar: float | None = None,
    unmeasured: str | None = None,
    tokens: int = 0,
    cost_usd: float = 0.0,
    judge_cost_usd: float = 0.0,
    output: str | None = None,
    expected: str | None = None,
    reason: str | None = None,
    samples: tuple[float, ...] = (),
    checks: tuple[CheckResult, ...] = (),
    failed_by_output: str | None = None,
    short_of: str | None = None,
) -> Score:
    """The Score of `case`, passed or not against its pass bar (`pass_bar`: the case's own
    `min_score`, the run's, `grader_bar` (the grader's own, `default_min_score`), else 0.5).
    The one place that decides it; the Score carries the bar. A case whose every sample
    failed by its output (`failed_by_output`, value 0) is not passed, whatever the bar; nor
    is one with a check below its own bar (`short_of` says which; `short_check`)."""
    bar = pass_bar(case.min_score, min_score, grader_default=grader_bar)
    if failed_by_output is not None and value is None:
        failed_by_output = None  # unmeasured for another reason: the marker is for scores
    return Score(
        case_id=case.id,
        eval_set_id=eval_set_id,
        value=value,
        unmeasured=unmeasured,
        grader=grader,
        tokens=tokens,
        cost_usd=cost_usd,
        judge_cost_usd=judge_cost_usd,
        fingerprint=case.fingerprint(),
        passed=(
            None
            if value is None
            else value >= bar
            and short_of is None
            and not (failed_by_output is not None and value <= 0.0)
        ),
        bar=bar,
        samples=samples,
        output=output,
        expected=expected,
        reason=reason,
        checks=checks,
        required=case.required,
        cluster=case.cluster,
        failed_by_output=failed_by_output,
    )


def _checks_pass(checks: Sequence[CheckResult]) -> bool:
    return not any(check.short for check in checks)


def short_check(grades: Sequence[Grade]) -> str | None:
    """Which check of a multi-check case is below its own bar (its mean over the samples, as
    the case's score is theirs), in words; None when every check with a bar reaches it."""
    if not grades or not grades[-1].checks:
        return None
    for index, last in enumerate(grades[-1].checks):
        if last.bar is None:
            continue
        values = [g.checks[index].value for g in grades if len(g.checks) > index]
        if any(value is None for value in values):
            continue  # an unmeasured check leaves the case unmeasured
        mean = math.fsum(v for v in values if v is not None) / len(values)
        if mean < last.bar:
            return f"check #{index + 1} {last.grader} scored {mean:.3f}, below its bar {last.bar:g}"
    return None


def stored_output(output: Any) -> str | None:
    """How an output is kept on its Score: its text (`output_text`), cut beyond
    `_MAX_STORED_OUTPUT` characters (saying how much was cut). A custom case's too."""
    text = output_text(output)
    if text is None:
        return None
    if len(text) > _MAX_STORED_OUTPUT:
        # A dialogue's last line says how it ended: kept after the cut (docs/scenarios.md).
        head, _, ending = text.rpartition("\n")
        if not (isinstance(output, CaseOutput) and output.ended and len(ending) < 200):
            head, ending = text, ""
        kept = _MAX_STORED_OUTPUT - len(ending)
        cut = f"... [{len(head) - kept} chars cut]"
        return head[:kept] + cut + (f"\n{ending}" if ending else "")
    return text


def pass_bar(
    case_min_score: float | None,
    run_min_score: float | None,
    *,
    grader_default: float | None = None,
) -> float:
    """The first that is set: the case's own `min_score` (its set's `defaults` included), the
    run's (`--verdryx-min-score`, `verdryx eval --min-score`), the grader's own bar (a tool
    trace passes only when right), else 0.5 (docs/graders.md)."""
    for bar in (case_min_score, run_min_score, grader_default):
        if bar is not None:
            return float(bar)
    return DEFAULT_MIN_SCORE


def stability(samples: Sequence[float], bar: float, passed: Sequence[bool] = ()) -> str | None:
    """stable-pass, stable-fail or flaky across repeated samples; None for a single sample.
    `passed`: whether each sample passed, when that is more than its value against the bar
    (`Score.passes`)."""
    if len(samples) < 2:
        return None
    if len(passed) == len(samples):
        passes = sum(passed)
    else:
        passes = sum(1 for value in samples if value >= bar)
    if passes == len(samples):
        return "stable-pass"
    if passes == 0:
        return "stable-fail"
    return "flaky"
