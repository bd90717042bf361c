"""Calls made ahead of the items (prefetched), in the bounded pool, with a progress line.

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
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_verdryx.items import EvalCaseItem
from pytest_verdryx.scoring import ItemScoring, scorer_for
from verdryx_core.errors import VerdryxError
from verdryx_core.evalsets.load import load_evalset
from verdryx_core.evaluation import Prefetch, Work, prefetch_all, start_prefetch

__all__ = ["PrefetchCalls", "TerminalStream"]


class PrefetchCalls:
    def __init__(self, scoring: ItemScoring) -> None:
        self.scoring = scoring
        self.context = scoring.context
        self.config = scoring.context.config
        #: Wall time spent waiting for calls made ahead (the summary shows it).
        self.seconds = 0.0
        self.session: pytest.Session | None = None
        self._for_workers_done = False
        #: The items' calls made ahead, until `end` counts what no item took.
        self._ahead: Prefetch | None = None
        #: Whether those calls may still be running (items run as they end).
        self._in_flight = False

    def _may_stop_early(self) -> bool:
        """Whether the session may end before its last item (then calls are not waited for
        up front, so the ones a stop makes unnecessary are never made)."""
        option = self.config.option
        if self.context.settings.batch:
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
        if not self._may_call() or not self.context.state.expected:
            return
        scoring, settings = self.scoring, self.context.settings
        work = [item.work() for item in session.items if isinstance(item, EvalCaseItem)]
        streaming = self._may_stop_early()
        ahead = start_prefetch(
            scoring.scorer(),
            work,
            concurrency=settings.concurrency,
            # Items report as their calls end: pytest's own progress is the progress line.
            stream=None if streaming else TerminalStream(self.config),
            batch=settings.batch,
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
        state = self.context.state
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
        settings = self.context.settings
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
        evaluation = self.context.evaluation
        scorer = scorer_for(evaluation, [entry.case for entry in work])
        targets_ahead = evaluation.targets_cached and any(
            evaluation.uses_target(entry.case) for entry in work
        )
        if not evaluation.paid and not targets_ahead:
            return  # the stub model and judge: free, nothing to call ahead
        # A typed grade posts labels back to the service: it is asked once, by its worker.
        # A target's results reach the workers only through the cache (a declared version):
        # without one, each worker calls the target for its own items.
        remote = [
            entry
            for entry in work
            if entry.case.grader != "typed"
            # A workspace case's target result is never cached (docs/workspaces-and-execution.md).
            and (
                (evaluation.targets_cached and entry.case.workspace is None)
                or not evaluation.uses_target(entry.case)
            )
        ]
        ahead = prefetch_all(
            scorer,
            remote,
            concurrency=settings.concurrency,
            stream=TerminalStream(self.config),
            batch=settings.batch,
        )
        self.seconds += ahead.seconds
        entries = evaluation.finish_calls().take_entries()
        if entries:
            self.context.store.open().cache_put_many(entries)

    def _cases_of(self, node_ids: Sequence[str]) -> list[Work]:
        """The eval cases behind collected node ids (`path::case-id`), read from their files."""
        patterns = self.context.settings.patterns
        wanted: dict[str, set[str]] = {}
        for node_id in node_ids:
            path, sep, case_id = node_id.partition("::")
            name = Path(path).name
            if sep and any(fnmatch.fnmatch(name, pattern) for pattern in patterns):
                wanted.setdefault(path, set()).add(case_id)
        work: list[Work] = []
        for path, case_ids in wanted.items():
            try:
                evalset = load_evalset(self.config.rootpath / path)
            except VerdryxError:
                continue  # the workers report it as a collection error
            work.extend(
                self.context.evaluation.work(evalset, case, key=f"{path}::{case.id}")
                for case in evalset.cases
                if case.id in case_ids
            )
        return work


class TerminalStream:
    def __init__(self, config: pytest.Config) -> None:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        self._writer = getattr(reporter, "_tw", None)
        self._fallback = sys.stderr

    def write(self, text: str) -> int:
        if self._writer is not None:
            self._writer.write(text, flush=True)
        else:
            self._fallback.write(text)
        return len(text)

    def flush(self) -> None:
        if self._writer is None:
            self._fallback.flush()

    def isatty(self) -> bool:
        # The file, not `hasmarkup`: `--color=yes` in a CI log must still get plain lines.
        file = getattr(self._writer, "_file", None) if self._writer is not None else None
        target = file if file is not None else self._fallback
        return bool(getattr(target, "isatty", lambda: False)())
