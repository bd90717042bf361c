"""Which model and judge calls a run's cases will make, planned for a Message Batch.

The plan mirrors what evaluating each case asks of its adapters: a case that needs the model
makes one call per sample (`complete`, or `tools` for a tool_trace case), an `llm_judge` case
one judge call per sample on that sample's output. Judge calls need the outputs, so they are
planned (and batched) after the model calls' answers are in the cache. A call the plan does
not foresee is simply made on its own when the case runs: batching changes the price and the
wait, never the measurement (docs/sharding.md, "Batch model calls").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from verdryx_core.cases import EvalCase, case_key
from verdryx_core.judge.prompt import judged_task
from verdryx_core.llm.anthropic_adapter import AnthropicAdapter
from verdryx_core.llm.base import Completion
from verdryx_core.llm.batch import BatchResult, PlannedCall, plan_call, prefetch_batch
from verdryx_core.llm.cache import CachedAdapter
from verdryx_core.llm.progress import TextStream

__all__ = [
    "batch_run_calls",
    "known_model_output",
    "model_call_key",
    "plan_judge_calls",
    "plan_model_calls",
]

#: (eval set id, case) pairs: what a run evaluates.
Cases = Iterable[tuple[str, EvalCase]]


def _model_kind(case: EvalCase) -> str:
    return "tools" if case.calls_tools else "complete"


def plan_model_calls(model: CachedAdapter, cases: Cases, *, repeat: int = 1) -> list[PlannedCall]:
    calls: list[PlannedCall] = []
    for set_id, case in cases:
        if not case.needs_model or case.target is not None:
            continue  # a recorded output, a model-free grader, or an agent under test
        kind = _model_kind(case)
        tools = list(case.tools or ()) if kind == "tools" else None
        for index in range(max(1, repeat)):
            calls.append(
                plan_call(
                    model,
                    kind,
                    case.prompt,
                    tools=tools,
                    repeat=index,
                    label=f"case {case_key(set_id, case.id)}",
                    system=case.system,
                    messages=case.messages,
                )
            )
    return calls


def model_call_key(model: CachedAdapter, case: EvalCase, index: int) -> str:
    """The cache key of sample `index` of `case`'s model call, as scoring makes it."""
    kind = _model_kind(case)
    return model.cache_key(
        kind,
        case.prompt,
        tools=list(case.tools or ()) if kind == "tools" else None,
        repeat=index,
        system=case.system,
        messages=case.messages,
    )


def known_model_output(model: CachedAdapter | None, case: EvalCase, index: int) -> str | None:
    """What the judge will be shown for this sample, when it is known without a call."""
    if case.output is not None:
        return str(case.output)
    if model is None or case.target is not None:
        return None
    answer = model.peek(model_call_key(model, case, index))
    if answer is None:
        return None  # failed or not batched: the case makes (or fails) its own call
    return Completion.from_dict(answer).text


def plan_judge_calls(
    judge: CachedAdapter, model: CachedAdapter | None, cases: Cases, *, repeat: int = 1
) -> list[PlannedCall]:
    calls: list[PlannedCall] = []
    for set_id, case in cases:
        if case.grader != "llm_judge" or not case.rubric:
            continue
        rounds = max(1, repeat) if case.needs_model else 1
        for index in range(rounds):
            output = known_model_output(model, case, index)
            if output is None:
                continue
            calls.append(
                plan_call(
                    judge,
                    "judge",
                    # What the grader sends: a conversation's whole task, not its last turn.
                    judged_task(case),
                    output=output,
                    rubric=case.rubric,
                    repeat=index,
                    label=f"case {case_key(set_id, case.id)}",
                )
            )
    return calls


def batch_run_calls(
    model: CachedAdapter | None,
    judge: CachedAdapter | None,
    cases: Sequence[tuple[str, EvalCase]],
    *,
    repeat: int = 1,
    stream: TextStream | None = None,
    **options: Any,
) -> list[BatchResult]:
    """The run's model calls as one batch, then its judge calls as a second, every answer in
    the response cache. A judge that is not an Anthropic model is left to its own calls."""
    results: list[BatchResult] = []
    if model is not None:
        planned = plan_model_calls(model, cases, repeat=repeat)
        if planned:
            results.append(prefetch_batch(model, planned, stream=stream, **options))
    if judge is not None and isinstance(judge.inner, AnthropicAdapter):
        planned = plan_judge_calls(judge, model, cases, repeat=repeat)
        if planned:
            results.append(prefetch_batch(judge, planned, stream=stream, **options))
    return results
