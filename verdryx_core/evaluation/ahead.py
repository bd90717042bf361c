"""Calls made ahead: every case that talks to the network is started in the bounded pool
before the first result is needed, with a progress line; the rest are scored inline, where
a pool would only add overhead. Results keep the order of the work, whatever order calls
finish in.
"""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass

from verdryx_core.evaluation.batching import batch_ahead
from verdryx_core.evaluation.scoring import CaseScorer
from verdryx_core.graders.base import GradeContext
from verdryx_core.llm.pool import CallPool
from verdryx_core.llm.progress import Progress, TextStream
from verdryx_core.model import EvalCase, Score

__all__ = ["Ahead", "Work", "call_ahead", "score_all"]


@dataclass(frozen=True, slots=True)
class Work:
    """One case to score: `key` names it for whoever waits on it (a node id, a position)."""

    key: str
    case: EvalCase
    context: GradeContext


@dataclass(frozen=True, slots=True)
class Ahead:
    futures: dict[str, Future[Score]]
    seconds: float


def call_ahead(
    scorer: CaseScorer,
    work: Sequence[Work],
    *,
    concurrency: int,
    stream: TextStream,
    batch: bool = False,
) -> Ahead:
    """Score the remote cases of `work` in the bounded pool, and wait for all of them.
    A Ctrl-C cancels what has not started. With `batch`, the model and judge calls are first
    sent as Message Batches, so the pool then finds their answers in the cache."""
    remote = [entry for entry in work if scorer.is_remote(entry.case)]
    if not remote:
        return Ahead({}, 0.0)
    started = time.perf_counter()
    if batch:
        batch_ahead(
            scorer, [(entry.context.eval_set_id, entry.case) for entry in remote], stream=stream
        )
    progress = Progress(len(remote), stream=stream)
    pool = CallPool(concurrency, progress=progress)
    futures: dict[str, Future[Score]] = {}
    try:
        for entry in remote:
            futures[entry.key] = pool.submit(scorer.score, entry.case, entry.context)
        concurrent.futures.wait(futures.values())
    except KeyboardInterrupt:
        for future in futures.values():
            future.cancel()
        # Pool threads may be waiting on target calls that never return: free them now,
        # so closing the pool below does not wait on a hung call.
        scorer.abort()
        raise
    finally:
        pool.close()
        progress.close()
    return Ahead(futures, time.perf_counter() - started)


def score_all(
    scorer: CaseScorer,
    work: Sequence[Work],
    *,
    concurrency: int,
    stream: TextStream,
    batch: bool = False,
) -> list[Score]:
    """Every case of `work` scored, in the order given: remote ones ahead, the rest inline."""
    ahead = call_ahead(scorer, work, concurrency=concurrency, stream=stream, batch=batch)
    return [
        ahead.futures[entry.key].result()
        if entry.key in ahead.futures
        else scorer.score(entry.case, entry.context)
        for entry in work
    ]
