"""Model calls made ahead of the items, in the bounded pool, with a progress line.

Without xdist: every call the selected items need starts before the first item runs; each
item then waits on its own result. Normally the session waits for all of them behind a
progress line first; when it may stop early (`-x`, `--maxfail`, `--stepwise`) the items run
while the calls do, so a stop leaves the calls not yet started unmade.

Under xdist the controller collects nothing and workers learn their items a batch at a time,
so the controller makes every model call of the collected cases itself, into the store's
response cache, before xdist schedules anything; workers then score from the cache (one
call per case, whatever the worker count). When the session may stop early, it does not:
each worker makes its items' calls as they run, and a stop leaves the rest unmade.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_verdryx.scoring import ItemScoring, scorer_for
from pytest_verdryx.storehandle import StoreHandle
from pytest_verdryx.stream import TerminalStream
from verdryx_core.cases import EvalCase
from verdryx_core.errors import VerdryxError
from verdryx_core.evalsets.load import load_evalset
from verdryx_core.evaluation import Ahead, Work, call_ahead, start_ahead
from verdryx_core.graders import GradeContext

__all__ = ["AheadCalls"]


class AheadCalls:
    def __init__(
        self, config: pytest.Config, scoring: ItemScoring, store: StoreHandle, rootdir: Path
    ) -> None:
        self.config = config
        self.scoring = scoring
        self.store = store
        self.rootdir = rootdir
        #: Wall time spent waiting for calls made ahead (the summary shows it).
        self.seconds = 0.0
        self.session: pytest.Session | None = None
        self._for_workers_done = False
        #: The items' calls made ahead, until `end` counts what no item took.
        self._ahead: Ahead | None = None
        #: Whether those calls may still be running (items run as they end).
        self._in_flight = False

    def _may_stop_early(self) -> bool:
        """Whether the session may end before its last item (then calls are not waited for
        up front, so the ones a stop makes unnecessary are never made)."""
        option = self.config.option
        if self.scoring.settings.batch:
            return False  # a Message Batch is sent whole, before anything else
        return bool(option.maxfail) or bool(getattr(option, "stepwise", False))

    def _may_call(self) -> bool:
        """Nothing is paid for when listing cases, or when pytest stops after a collection
        error before any item runs."""
        session = self.session
        collection_failed = bool(
            session is not None
            and session.testsfailed
            and not self.config.option.continue_on_collection_errors
        )
        return not self.config.option.collectonly and not collection_failed

    def for_items(self, session: pytest.Session) -> None:
        """Start the calls of this process's selected items; wait for them unless the
        session may stop early."""
        self.session = session
        if not self._may_call() or not self.scoring.state.expected:
            return
        scoring = self.scoring
        work = [
            Work(
                item.nodeid,
                case,
                GradeContext(
                    eval_set_id=evalset.id, eval_set_path=evalset.path, run_id=scoring.run_id
                ),
            )
            for item in session.items
            if isinstance(case := getattr(item, "case", None), EvalCase)
            and (evalset := getattr(item, "evalset", None)) is not None
        ]
        streaming = self._may_stop_early()
        ahead = start_ahead(
            scoring.scorer(),
            work,
            concurrency=scoring.settings.concurrency,
            # Items report as their calls end: pytest's own progress is the progress line.
            stream=None if streaming else TerminalStream(self.config),
            batch=scoring.settings.batch,
        )
        scoring.futures = ahead.futures  # the same dict: items take theirs out of it
        self._ahead, self._in_flight = ahead, True
        if not streaming:
            ahead.wait()  # a Ctrl-C here aborts the calls; `end` then counts them
            ahead.finish()
            self._in_flight = False
            self.seconds += ahead.seconds

    def end(self, *, interrupted: bool) -> None:
        """The items are done (or stopped): drop the calls not started and wait for those in
        flight, which are paid for; on Ctrl-C wait for nothing. Calls whose item never took
        them are counted apart (given up in flight, paid for, or never made)."""
        ahead, self._ahead = self._ahead, None
        if ahead is None:
            return
        if self._in_flight:
            self._in_flight = False
            if interrupted:
                ahead.abort()
            else:
                ahead.stop()
            self.seconds += ahead.seconds
        # Items take their futures out of `ahead.futures`: what is left, no item took.
        paid = ahead.scores()
        state = self.scoring.state
        state.calls_given_up += len(ahead.given_up)
        state.unscored_calls += len(paid)
        state.unscored_cost_usd += sum(s.cost_usd + s.judge_cost_usd for s in paid.values())
        state.calls_not_made += sum(
            1
            for key, future in ahead.futures.items()
            if key not in ahead.given_up and (future.cancelled() or not future.done())
        )
        ahead.futures.clear()

    def for_workers(self, node_ids: Sequence[str]) -> None:
        """On the xdist controller, once: every model call of the collected cases, into the
        store's response cache (which is how the answers reach the workers)."""
        settings = self.scoring.settings
        if (
            self._for_workers_done
            or settings.cache == "off"  # the cache is how the answers reach the workers
            or not settings.store
            or not self._may_call()
            # -x / --maxfail: every call made up front would defeat the stop; each worker
            # makes its own items' calls as they run instead.
            or self._may_stop_early()
        ):
            return
        self._for_workers_done = True
        work = self._cases_of(node_ids)
        if not work:
            return
        pipeline = self.scoring.pipeline
        scorer = scorer_for(pipeline, [entry.case for entry in work])
        targets_ahead = pipeline.targets_cached and any(
            pipeline.uses_target(entry.case) for entry in work
        )
        if not pipeline.paid and not targets_ahead:
            return  # the stub model and judge: free, nothing to call ahead
        # A typed grade posts labels back to the service: it is asked once, by its worker.
        # A target's results reach the workers only through the cache (a declared version):
        # without one, each worker calls the target for its own items.
        remote = [
            entry
            for entry in work
            if entry.case.grader != "typed"
            and (pipeline.targets_cached or not pipeline.uses_target(entry.case))
        ]
        ahead = call_ahead(
            scorer,
            remote,
            concurrency=settings.concurrency,
            stream=TerminalStream(self.config),
            batch=settings.batch,
        )
        self.seconds += ahead.seconds
        entries = pipeline.finish_calls().take_entries()
        if entries:
            self.store.open().cache_put_many(entries)

    def _cases_of(self, node_ids: Sequence[str]) -> list[Work]:
        """The eval cases behind collected node ids (`path::case-id`), read from their files."""
        patterns = self.scoring.settings.patterns
        wanted: dict[str, set[str]] = {}
        for node_id in node_ids:
            path, sep, case_id = node_id.partition("::")
            name = Path(path).name
            if sep and any(fnmatch.fnmatch(name, pattern) for pattern in patterns):
                wanted.setdefault(path, set()).add(case_id)
        work: list[Work] = []
        for path, case_ids in wanted.items():
            try:
                evalset = load_evalset(self.rootdir / path)
            except VerdryxError:
                continue  # the workers report it as a collection error
            context = GradeContext(
                eval_set_id=evalset.id, eval_set_path=evalset.path, run_id=self.scoring.run_id
            )
            work.extend(
                Work(f"{path}::{case.id}", case, context)
                for case in evalset.cases
                if case.id in case_ids
            )
        return work
