"""Prefetching: every case that waits on something outside the process (a model, a judge, a
target, the typed service, an exec case's sandbox runs) is started in the bounded pool before
the first result is needed; the rest are
scored inline, where a pool would only add overhead. Results are kept by work key, whatever
order calls finish in.

Two ways to consume them: wait for all of them behind a progress line (`prefetch_all`), or
start them and let each consumer wait on its own (`start_prefetch`), so a consumer that stops
early (pytest's `-x`) can cancel the calls not yet started (`Prefetch.stop`).
"""

from __future__ import annotations

import concurrent.futures
import io
import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING

from verdryx_core.cases import EvalCase
from verdryx_core.evaluation.scoring import CaseScorer
from verdryx_core.graders.base import GradeContext
from verdryx_core.runs import Score

if TYPE_CHECKING:
    # The pool and what goes out before it starts come with the first remote case: a run
    # of recorded outputs is scored inline and never imports them.
    from verdryx_core.llm.pool import CallPool
    from verdryx_core.llm.progress import TextStream

__all__ = ["Prefetch", "Work", "prefetch_all", "start_prefetch"]


@dataclass(frozen=True, slots=True)
class Work:
    """One case to score: `key` names it for whoever waits on it (a node id, a position)."""

    key: str
    case: EvalCase
    context: GradeContext


class Prefetch:
    """Calls started in the pool, by work key. Ends one of three ways: `finish` (wait for
    every call), `stop` (drop the calls not started, wait for those in flight) or `abort`
    (Ctrl-C: return at once, abandoning what is in flight)."""

    def __init__(
        self,
        scorer: CaseScorer | None = None,
        pool: CallPool | None = None,
        *,
        challenger: CaseScorer | None = None,
    ) -> None:
        self.futures: dict[str, Future[Score]] = {}
        #: The challenger's scores of the same cases, by the same keys (docs/targets.md,
        #: "A challenger"): started in the same pool, interleaved with the target's.
        self.challenger: dict[str, Future[Score]] = {}
        #: Wall time from the first call to the end (set when the calls end).
        self.seconds = 0.0
        #: The keys of the calls `abort` found in flight and did not wait for.
        self.given_up: set[str] = set()
        #: What was called (`CaseScorer.call_kinds`), in order: `target calls`, `sandbox runs`.
        self.kinds: tuple[str, ...] = ()
        self._scorer = scorer
        self._challenger = challenger
        self._pool = pool
        self._started = time.perf_counter()
        self._ended = pool is None

    def wait(self) -> None:
        """Wait for every call; a Ctrl-C aborts them and is raised on."""
        try:
            concurrent.futures.wait([*self.futures.values(), *self.challenger.values()])
        except KeyboardInterrupt:
            self.abort()
            raise

    def finish(self) -> None:
        self._end(cancel=False, wait=True)

    def stop(self) -> None:
        """Cancel the calls not started and wait for those in flight (what they paid for is
        kept)."""
        self._end(cancel=True, wait=True)

    def scores(self) -> dict[str, Score]:
        """The calls that ended with a score, by key (after a stop or an abort: the ones an
        interrupted consumer can still use)."""
        return {
            key: future.result()
            for key, future in self.futures.items()
            if future.done() and not future.cancelled() and future.exception() is None
        }

    def abort(self) -> None:
        """Return now: nothing new starts, and calls in flight are given up (targets are told
        to stop; model calls are abandoned with their threads)."""
        if self._ended:
            return
        self.given_up = {key for key, future in self.futures.items() if future.running()}
        for future in [*self.futures.values(), *self.challenger.values()]:
            future.cancel()
        for scorer in (self._scorer, self._challenger):
            if scorer is not None:
                # Pool threads may be waiting on target calls that never return: free them.
                scorer.abort()
        self._end(cancel=True, wait=False)

    def _end(self, *, cancel: bool, wait: bool) -> None:
        if self._ended:
            return
        self._ended = True
        assert self._pool is not None
        self._pool.close(cancel=cancel, wait=wait)
        self.seconds = time.perf_counter() - self._started


def start_prefetch(
    scorer: CaseScorer,
    work: Sequence[Work],
    *,
    concurrency: int,
    stream: TextStream | None,
    batch: bool = False,
    challenger: CaseScorer | None = None,
) -> Prefetch:
    """Start the remote cases of `work` in the bounded pool and return at once. With a
    `stream`, a progress line counts them; with `batch`, the model and judge calls are first
    sent as Message Batches (and waited for), so the pool then finds their answers in the
    cache. With a `challenger`, each case it answers is scored by it too, in the same pool
    (one bound for both), the two calls of a case side by side, the one made first
    alternating from case to case so neither agent always goes first."""
    remote = [entry for entry in work if scorer.is_remote(entry.case)]
    rivals = (
        {entry.key for entry in work if challenged(challenger, entry.case)}
        if challenger is not None
        else set()
    )
    if not remote and not rivals:
        return Prefetch()
    from verdryx_core.llm.pool import CallPool
    from verdryx_core.llm.progress import Progress, call_words

    if batch:
        from verdryx_core.evaluation.batching import send_batches

        send_batches(
            scorer,
            [(entry.context.eval_set_id, entry.case) for entry in remote],
            stream=stream if stream is not None else io.StringIO(),
        )
    else:
        from verdryx_core.evaluation.sdk_import import import_sdks_if_calling

        # A model SDK is imported here when a call will go out, before any call is timed.
        import_sdks_if_calling(scorer, [entry.case for entry in remote])
    # The agent under test is not "the model", nor is a sandbox run on a recorded output:
    # the line says what it counts.
    kinds = tuple(dict.fromkeys(kind for e in remote for kind in scorer.call_kinds(e.case)))
    if rivals:
        assert challenger is not None
        kinds = tuple(
            dict.fromkeys(
                [
                    *kinds,
                    *(k for e in work if e.key in rivals for k in challenger.call_kinds(e.case)),
                ]
            )
        )
    label = call_words(kinds)
    total = len(remote) + len(rivals)
    progress = Progress(total, stream=stream, label=label) if stream is not None else None
    pool = CallPool(concurrency, progress=progress)
    prefetch = Prefetch(scorer, pool, challenger=challenger)
    prefetch.kinds = kinds
    prefetched = {entry.key for entry in remote}
    wanted = prefetched | rivals
    try:
        for index, entry in enumerate(entry for entry in work if entry.key in wanted):
            submits = []
            if entry.key in prefetched:
                submits.append((prefetch.futures, scorer))
            if challenger is not None and entry.key in rivals:
                submits.insert(index % 2, (prefetch.challenger, challenger))
            for futures, by in submits:
                futures[entry.key] = pool.submit(by.score, entry.case, entry.context)
    except KeyboardInterrupt:
        prefetch.abort()
        raise
    return prefetch


def challenged(challenger: CaseScorer, case: EvalCase) -> bool:
    """Whether the challenger's scorer answers `case` (a case a target answers)."""
    from verdryx_core.evaluation.target_output import TargetSource

    live = challenger.live
    return isinstance(live, TargetSource) and live.uses_target(case)


def prefetch_all(
    scorer: CaseScorer,
    work: Sequence[Work],
    *,
    concurrency: int,
    stream: TextStream,
    batch: bool = False,
) -> Prefetch:
    """Score the remote cases of `work` in the bounded pool, and wait for all of them.
    A Ctrl-C cancels what has not started and gives up on what is in flight."""
    prefetch = start_prefetch(scorer, work, concurrency=concurrency, stream=stream, batch=batch)
    prefetch.wait()
    prefetch.finish()
    return prefetch
