"""Target calls prefetched by one process for other processes to grade (docs/targets.md,
"Under pytest-xdist"): every sample of every case, in the same bounded pool and through the
same runner a serial run uses, each answer (errors included) written to the run's
`TargetHandoff`. Nothing is graded here: the graders run where the items are.
"""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Sequence
from concurrent.futures import Future

from verdryx_core.evaluation.prefetch import Work
from verdryx_core.evaluation.scoring import CaseScorer
from verdryx_core.evaluation.target_output import TargetSource
from verdryx_core.llm.pool import CallPool
from verdryx_core.llm.progress import Progress, TextStream

__all__ = ["prefetch_targets"]


def prefetch_targets(
    scorer: CaseScorer,
    work: Sequence[Work],
    *,
    concurrency: int,
    stream: TextStream | None,
    challenger: CaseScorer | None = None,
) -> float:
    """Call the target of each case of `work` for every sample it will take (no workspace
    cases: their result is the folder the call changed); returns the wall seconds. The
    scorer's live source must be a `TargetSource` writing to a handoff. A `challenger`'s
    calls of the same cases go to the same handoff from the same pool, each case's two
    side by side, the one made first alternating (as `start_prefetch` does)."""
    scorers = [scorer] if challenger is None else [scorer, challenger]
    sources: list[TargetSource] = []
    for each in scorers:
        source = each.live
        if not isinstance(source, TargetSource) or source.handoff is None:
            raise RuntimeError("prefetching targets needs a target source with a handoff")
        sources.append(source)
    calls: list[tuple[TargetSource, Work, int]] = []
    for position, entry in enumerate(work):
        order = list(zip(scorers, sources, strict=True))
        if position % 2:
            order.reverse()
        for each, source in order:
            if (
                entry.case.workspace is None
                and source.uses_target(entry.case)
                and each.graders.has(entry.case.grader)  # else skipped before any call
            ):
                samples = each.samples_of(entry.case, entry.context)
                calls.extend((source, entry, index) for index in range(samples))
    started = time.perf_counter()
    if not calls:
        return 0.0
    progress = Progress(len(calls), stream=stream, label="target calls") if stream else None
    pool = CallPool(concurrency, progress=progress)
    futures: list[Future[object]] = []
    try:
        for source, entry, index in calls:
            futures.append(pool.submit(_call, source, entry, index))
        concurrent.futures.wait(futures)
    except KeyboardInterrupt:
        pool.close(cancel=True, wait=False)
        for source in sources:
            source.abort()
        raise
    pool.close()
    for handoff in {id(source.handoff): source.handoff for source in sources}.values():
        assert handoff is not None
        handoff.write()
    return time.perf_counter() - started


def _call(source: TargetSource, entry: Work, index: int) -> None:
    try:
        source.produce(entry.case, repeat=index, context=entry.context)
    except Exception:  # the answer is handed, errors too: the item reports it
        return
