"""Calls prefetched as Message Batches: before the pool starts, the scorer's model calls go
out as one batch and its judge calls (on those outputs) as a second; their answers wait in
the response cache, so scoring then calls nothing (docs/sharding.md, "Batch model calls")."""

from __future__ import annotations

from collections.abc import Sequence

from verdryx_core.cases import EvalCase
from verdryx_core.evaluation.scoring import CaseScorer
from verdryx_core.evaluation.sources import ModelSource
from verdryx_core.llm.batch import BatchResult
from verdryx_core.llm.batch_plan import batch_run_calls
from verdryx_core.llm.cache import CachedAdapter
from verdryx_core.llm.progress import TextStream

__all__ = ["send_batches"]


def _cached(adapter: object) -> CachedAdapter | None:
    return adapter if isinstance(adapter, CachedAdapter) else None


def send_batches(
    scorer: CaseScorer, cases: Sequence[tuple[str, EvalCase]], *, stream: TextStream
) -> list[BatchResult]:
    """Batch what scoring `cases` ((eval set id, case) pairs) will ask of the model and the
    judge. The stub (never cached, free) is left alone."""
    live = scorer.live
    model = _cached(live.adapter) if isinstance(live, ModelSource) else None
    judge = _cached(getattr(scorer.graders.find("llm_judge"), "judge", None))
    if model is None and judge is None:
        return []
    return batch_run_calls(model, judge, cases, repeat=scorer.repeat, stream=stream)
