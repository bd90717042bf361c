"""The pairwise judge of a session with a challenger (docs/targets.md, "A pairwise judge"):
at the end, once both agents have answered every case, each case's two replies are shown to
`--verdryx-pairwise-judge` in both orders. It reports; it does not gate.

Under xdist the controller holds no items: the cases' prompts and criteria are read from
their eval set files, as the prefetched calls read them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import pytest

from pytest_verdryx.context import SessionContext
from pytest_verdryx.options import worded
from verdryx_core.cases import EvalCase
from verdryx_core.errors import VerdryxError
from verdryx_core.evaluation import ModelCalls, Work

if TYPE_CHECKING:
    from verdryx_core.judge.pairwise import Pair, PairwiseResult
    from verdryx_core.llm.base import ModelAdapter
    from verdryx_core.llm.progress import TextStream

__all__ = ["check_pairwise", "judge_session_pairs"]


def _adapter(context: SessionContext, calls: ModelCalls, *, checked: bool) -> ModelAdapter:
    """The pairwise judge behind the response cache; `checked`: built only to check it (its
    SDK is named if missing, not imported)."""
    model = context.settings.pairwise_judge
    assert model is not None
    return calls.adapter(model, cache_checked_first=checked)


def check_pairwise(context: SessionContext) -> None:
    """At start: a pairwise judge needs a challenger, and a judge that can be built (its SDK
    installed, its price known or priced at the fallback): a usage error of one line now."""
    settings = context.settings
    if settings.pairwise_judge is None:
        return
    if settings.challenger is None:
        raise pytest.UsageError(
            "verdryx: --verdryx-pairwise-judge compares a challenger's replies with the "
            "target's: pass --verdryx-challenger=module:callable too"
        )
    evaluation = context.evaluation
    try:
        _adapter(context, ModelCalls(evaluation.settings, evaluation.open_store), checked=True)
    except VerdryxError as exc:
        raise pytest.UsageError(f"verdryx: {worded(exc)}") from None


def judge_session_pairs(
    context: SessionContext,
    cases_of: Callable[[Sequence[str]], list[Work]],
    *,
    items: Mapping[str, EvalCase],
    stream: TextStream | None,
) -> PairwiseResult | None:
    """Ask the pairwise judge of every case both agents answered (an output each); None
    without one. `items` are this process's cases by node id; the others are read by
    `cases_of` (the xdist controller's)."""
    settings, state = context.settings, context.state
    if settings.pairwise_judge is None or not state.challenger_scores:
        return None
    from verdryx_core.judge.pairwise import Pair, judge_pairs

    both = [
        (nodeid, score, state.challenger_scores[nodeid][1])
        for nodeid, (_, score) in sorted(state.scores.items(), key=lambda pair: pair[1][0])
        if nodeid in state.challenger_scores
    ]
    both = [entry for entry in both if entry[1].output is not None and entry[2].output is not None]
    missing = [nodeid for nodeid, _, _ in both if nodeid not in items]
    cases = dict(items)
    if missing:
        cases.update({work.key: work.case for work in cases_of(missing)})
    pairs: list[Pair] = []
    for nodeid, champion, challenger in both:
        case = cases.get(nodeid)
        if case is None:
            continue
        assert champion.output is not None and challenger.output is not None
        pairs.append(
            Pair(
                key=champion.key,
                prompt=_prompt(case),
                champion=champion.output,
                challenger=challenger.output,
                criterion=case.rubric or champion.expected,
            )
        )
    evaluation = context.evaluation
    calls = ModelCalls(evaluation.settings, evaluation.open_store)
    try:
        adapter = _adapter(context, calls, checked=False)
        return judge_pairs(adapter, pairs, concurrency=settings.concurrency, stream=stream)
    finally:
        calls.harvest(evaluation.tally)


def _prompt(case: EvalCase) -> str:
    """The task the replies answer: the prompt, or the conversation's last user turn."""
    if case.messages:
        users = [m for m in case.messages if m.get("role") == "user"]
        if users and isinstance(users[-1].get("content"), str):
            return str(users[-1]["content"])
    return case.prompt or ""
