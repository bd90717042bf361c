"""Items get their scores here: from a prefetched call, or scored now by the session's
`Evaluation`; every score is recorded in the session state and in the item's JUnit
properties.

Kept in `config.stash` so items and the fixture reach it without importing the plugin.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import TYPE_CHECKING

import pytest

from pytest_verdryx.context import SessionContext
from pytest_verdryx.options import worded
from verdryx_core.cases import EvalCase
from verdryx_core.errors import VerdryxError
from verdryx_core.evaluation import CaseScorer, Work, stability
from verdryx_core.runs import Score
from verdryx_core.untrusted.text import printable

if TYPE_CHECKING:
    from verdryx_core.targets.handoff import TargetHandoff

__all__ = ["SCORING_KEY", "ItemScoring", "case_of", "scorer_for", "scoring_of"]


class ItemScoring:
    def __init__(self, context: SessionContext) -> None:
        self.context = context
        #: node id -> a score being prefetched (see `pytest_verdryx.prefetch`).
        self.futures: dict[str, Future[Score]] = {}
        #: This session's items, once collected (the scorer is built for their cases).
        self.items: list[pytest.Item] = []
        self._scorer: CaseScorer | None = None
        self._fresh_scorer: CaseScorer | None = None
        #: node id -> the challenger's score of the same case, prefetched.
        self.challenger_futures: dict[str, Future[Score]] = {}
        self._challengers: dict[bool, CaseScorer] = {}
        #: node id -> the challenger's score of its attempts so far (a rerun).
        self._earlier_challenger: dict[str, Score] = {}
        #: node id -> how many times its setup has begun (a rerun plugin runs an item again).
        self._attempts: dict[str, int] = {}
        #: node id -> the score of its attempts so far, while a rerun makes the next one.
        self._earlier: dict[str, Score] = {}

    def scorer(self, *, fresh: bool = False) -> CaseScorer:
        """The scorer of this session's items; model and judge adapters exist only when some
        item needs them. The `fresh` one (for reruns) calls again whatever is cached."""
        if fresh:
            if self._fresh_scorer is None:
                self._fresh_scorer = self._build(fresh=True)
            return self._fresh_scorer
        if self._scorer is None:
            self._scorer = self._build(fresh=False)
        return self._scorer

    def challenger(self, *, fresh: bool = False) -> CaseScorer | None:
        """The challenger's scorer of this session's items (docs/targets.md, "A
        challenger"); None when the run has no challenger."""
        evaluation = self.context.evaluation
        if evaluation.settings.challenger is None:
            return None
        if fresh not in self._challengers:
            cases = [case for case in map(case_of, self.items) if case is not None]
            try:
                self._challengers[fresh] = evaluation.scorer(
                    cases,
                    judge_wanted=self._custom_judge(),
                    fresh=fresh,
                    challenger=True,
                    repeats_for=self.context.allocation,
                )
            except VerdryxError as exc:
                raise pytest.UsageError(f"verdryx: {worded(exc)}") from None
        return self._challengers[fresh]

    def _build(self, *, fresh: bool) -> CaseScorer:
        cases = [case for case in map(case_of, self.items) if case is not None]
        return scorer_for(self.context, cases, judge_wanted=self._custom_judge(), fresh=fresh)

    def begin_attempt(self, item: pytest.Item) -> None:
        """An item's setup begins. On a rerun (pytest-rerunfailures runs the same item
        again), the last attempt's score is set aside, to be pooled with this attempt's
        (every attempt is a sample of the case, docs/outcomes.md "Reruns"), and what else
        it recorded is dropped; this attempt makes its calls afresh."""
        attempts = self._attempts[item.nodeid] = self._attempts.get(item.nodeid, 0) + 1
        if attempts > 1:
            self._forget(item)

    def is_rerun(self, item: pytest.Item) -> bool:
        return self._attempts.get(item.nodeid, 0) > 1

    def _forget(self, item: pytest.Item) -> None:
        state = self.context.state
        earlier = state.scores.pop(item.nodeid, None)
        if earlier is not None:
            self._earlier[item.nodeid] = earlier[1]
            case = case_of(item)
            if case is not None and case.needs_model:
                state.live_cases -= 1
        prefix = f"{item.nodeid}: "
        state.errors[:] = [error for error in state.errors if not error.startswith(prefix)]
        rival = state.challenger_scores.pop(item.nodeid, None)
        if rival is not None:
            self._earlier_challenger[item.nodeid] = rival[1]
        state.challenger_errors[:] = [
            error for error in state.challenger_errors if not error.startswith(prefix)
        ]
        state.not_run.discard(item.nodeid)
        item.user_properties[:] = [
            pair for pair in item.user_properties if not str(pair[0]).startswith("verdryx.")
        ]

    def _custom_judge(self) -> bool:
        for item in self.items:
            marker = item.get_closest_marker("verdryx")
            if marker is None:
                continue
            checks = marker.kwargs.get("checks")
            graders = [marker.kwargs.get("grader")] + [
                check.get("grader") for check in checks or () if isinstance(check, dict)
            ]
            if "llm_judge" in graders:
                return True
        return False

    def score(self, item: pytest.Item, work: Work) -> Score:
        """The item's score: its prefetched call, else scored now (afresh on a rerun). Raises
        VerdryxError."""
        future = self.futures.get(item.nodeid)
        if future is not None and not future.cancelled():
            # Taken once it has answered: a Ctrl-C while waiting leaves it with the calls in
            # flight, which the end of the loop counts as given up.
            try:
                score = future.result()
            finally:
                if future.done():
                    del self.futures[item.nodeid]
        else:
            score = self.scorer(fresh=self.is_rerun(item)).score(work.case, work.context)
        recorded = self.record(item, score)
        self._challenge(item, work)
        return recorded

    def _challenge(self, item: pytest.Item, work: Work) -> None:
        """The challenger's score of the item's case, beside the target's: taken from its
        prefetched call, else scored now. Its failure is the challenger's error (its run is
        then incomplete and not gated), never the item's: the item is the target's."""
        evaluation = self.context.evaluation
        if evaluation.settings.challenger is None or not evaluation.challenged(work.case):
            return
        state = self.context.state
        future = self.challenger_futures.pop(item.nodeid, None)
        try:
            if future is not None and not future.cancelled():
                score = future.result()
            else:
                challenger = self.challenger(fresh=self.is_rerun(item))
                assert challenger is not None
                score = challenger.score(work.case, work.context)
        except Exception as exc:
            why = worded(exc) if isinstance(exc, VerdryxError) else f"{type(exc).__name__}: {exc}"
            state.challenger_errors.append(f"{item.nodeid}: {printable(why, keep_newlines=False)}")
            return
        earlier = self._earlier_challenger.pop(item.nodeid, None)
        if earlier is not None:
            from verdryx_core.evaluation.attempts import pooled_attempts  # a rerun's

            score = pooled_attempts(earlier, score, rule=work.case.aggregate)
        state.challenger_scores[item.nodeid] = (state.order.get(item.nodeid, 0), score)
        value = "" if score.value is None else f"{score.value:.6g}"
        item.user_properties.append(("verdryx.challenger_score", value))

    def record(self, item: pytest.Item, score: Score) -> Score:
        """Record the item's score, pooled with its earlier attempts' (a rerun), and return
        what was recorded: the score its outcome is decided by."""
        earlier = self._earlier.pop(item.nodeid, None)
        if earlier is not None:
            from verdryx_core.evaluation.attempts import pooled_attempts  # a rerun's

            case = case_of(item)  # None for a custom case: its attempts' mean
            score = pooled_attempts(earlier, score, rule=case.aggregate if case else None)
        state = self.context.state
        state.add_score(item.nodeid, score)
        properties = [
            ("verdryx.score", "" if score.value is None else f"{score.value:.6g}"),
            ("verdryx.grader", score.grader),
            ("verdryx.cost_usd", f"{score.cost_usd + score.judge_cost_usd:.6g}"),
        ]
        if score.samples and score.bar is not None:
            properties.append(
                ("verdryx.stability", stability(score.samples, score.bar, score.passes) or "")
            )
        if score.value is None:
            # JUnit shows it: printable and one line, by the text rule (untrusted/text.py).
            properties.append(
                ("verdryx.unmeasured", printable(score.unmeasured or "", keep_newlines=False))
            )
        if score.failed_by_output is not None:
            # Scored 0: its output could not be graded (docs/outcomes.md).
            properties.append(
                ("verdryx.failed_by_output", printable(score.failed_by_output, keep_newlines=False))
            )
        item.user_properties.extend(properties)
        case = case_of(item)
        if case is not None and case.needs_model:
            state.live_cases += 1  # its output came from the model or a target
        return score


def scorer_for(
    context: SessionContext,
    cases: list[EvalCase],
    *,
    judge_wanted: bool = False,
    fresh: bool = False,
    handoff: TargetHandoff | None = None,
) -> CaseScorer:
    """The evaluation's scorer; a model that cannot be set up (no SDK, a bad price file) is a
    usage error, exit 4, before anything is paid for."""
    try:
        return context.evaluation.scorer(
            cases,
            judge_wanted=judge_wanted,
            fresh=fresh,
            handoff=handoff,
            # Samples per case under --verdryx-repeat=auto, allocated after collection.
            repeats_for=context.allocation,
        )
    except VerdryxError as exc:
        raise pytest.UsageError(f"verdryx: {worded(exc)}") from None


SCORING_KEY = pytest.StashKey[ItemScoring]()


def scoring_of(config: pytest.Config) -> ItemScoring:
    return config.stash[SCORING_KEY]


def case_of(item: pytest.Item) -> EvalCase | None:
    case = getattr(item, "case", None)
    return case if isinstance(case, EvalCase) else None
