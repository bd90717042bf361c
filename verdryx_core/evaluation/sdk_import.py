"""Whether a run's model and judge calls will go out, found before the pool starts: a model
SDK takes a second or more to import, which a rerun answered wholly from the response cache
never needs, while a run that calls must import it before its first call, or the first
calls' latencies (each item's duration) would carry the import
(docs/models-and-judges.md, "Concurrency and progress").

The calls the cases will make are keyed as the batch path keys them (`llm.batch_plan`),
the keys read from the store in chunks (one query each, which the calls then find read), and
the SDK imported at the first key missing. A call nothing can foresee (a judge on a target's
output, a check's part, repeats allocated as the run goes) counts as a call.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice

from verdryx_core.cases import EvalCase
from verdryx_core.evaluation.scoring import CaseScorer
from verdryx_core.evaluation.sources import ModelSource
from verdryx_core.evaluation.target_output import TargetSource
from verdryx_core.judge.prompt import judged_task
from verdryx_core.llm.batch_plan import known_model_output, model_call_key
from verdryx_core.llm.cache import CachedAdapter

__all__ = ["import_sdks_if_calling"]

#: Keys read per query: the first chunk with a miss settles it, so a run that calls reads
#: only that one chunk.
_CHUNK = 256


def import_sdks_if_calling(scorer: CaseScorer, cases: Sequence[EvalCase]) -> None:
    """Import the SDK of the scorer's model and of its judge when some call of `cases` will
    be made (the adapters were built without importing it: `make_adapter(sdk_now=False)`)."""
    live = scorer.live
    asked, agent_answers = list(cases), []
    if isinstance(live, TargetSource):
        # The agent answers the cases with a target in effect; the others still ask the model.
        asked = [case for case in cases if not live.uses_target(case)]
        agent_answers = [case for case in cases if live.uses_target(case)]
        live = live.fallback
    model = _cached(live.adapter) if isinstance(live, ModelSource) else None
    judge = _cached(getattr(scorer.graders.find("llm_judge"), "judge", None))
    repeat = None if scorer.repeats_for is not None else scorer.repeat
    if model is not None and _will_call(model, _model_keys(model, asked, repeat)):
        model.prepare()
    # A target's output is known only once it is called: a judge of one counts as a call.
    judged_target = any(_judged(case) for case in agent_answers)
    if judge is not None and (
        judged_target or _will_call(judge, _judge_keys(judge, model, asked, repeat))
    ):
        judge.prepare()


def _cached(adapter: object) -> CachedAdapter | None:
    return adapter if isinstance(adapter, CachedAdapter) else None


def _will_call(cached: CachedAdapter, keys: Iterable[str | None]) -> bool:
    """Whether a key is missing from the cache (None: a call nothing can foresee)."""
    if cached.mode == "replay":
        return False  # a missing answer is that case's error: a replay never calls
    if not cached.answers_from_store:
        return True  # every call goes out
    chunks = iter(keys)
    try:
        while chunk := list(islice(chunks, _CHUNK)):
            if None in chunk:
                return True
            known = [key for key in chunk if key is not None]
            cached.preload(known)
            if not all(cached.has(key) for key in known):
                return True
    except Exception:
        # Only a guess at what the run will call: a case whose request cannot be keyed, or a
        # store that cannot be read, is reported by its own call; here it counts as a call.
        return True
    return False


def _judged(case: EvalCase) -> bool:
    return case.grader == "llm_judge" or any(
        check.grader == "llm_judge" for check in case.checks or ()
    )


def _samples(case: EvalCase, repeat: int | None) -> range | None:
    if repeat is None:
        return None  # allocated as the run goes
    return range(repeat if case.needs_model else 1)


def _model_keys(
    model: CachedAdapter, cases: Sequence[EvalCase], repeat: int | None
) -> Iterator[str | None]:
    for case in cases:
        if not case.needs_model or case.target is not None or case.output is not None:
            continue  # a recorded output, a model-free grader, or an agent under test
        samples = _samples(case, repeat)
        if samples is None:
            yield None
            return
        for index in samples:
            yield model_call_key(model, case, index)


def _judge_keys(
    judge: CachedAdapter,
    model: CachedAdapter | None,
    cases: Sequence[EvalCase],
    repeat: int | None,
) -> Iterator[str | None]:
    for case in cases:
        if not _judged(case):
            continue
        if case.grader != "llm_judge":
            yield None  # a check's part of the output: not planned here
            return
        samples = _samples(case, repeat)
        if samples is None or not case.rubric:
            yield None
            return
        for index in samples:
            output = known_model_output(model, case, index)
            if output is None:
                yield None
                return
            yield judge.cache_key(
                "judge", judged_task(case), output=output, rubric=case.rubric, repeat=index
            )
