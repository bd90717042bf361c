"""Calls prefetched before the items, in the bounded pool, with a progress line.

Without xdist: every call the selected items need starts before the first item runs; each
item then waits on its own result. Normally the session waits for all of them behind a
progress line first; when it may stop early (`-x`, `--maxfail`, `--stepwise`) the items run
while the calls do, so a stop leaves the calls not yet started unmade.

Under xdist the controller collects nothing and workers learn their items a batch at a time,
so before xdist schedules anything the controller makes the calls of the collected cases
itself, with the session's concurrency: every target call (but a workspace case's), handed
to the workers in a file of this run alone, and every model call, into the store's response
cache; workers then grade from those (one call per case, whatever the worker count). When
the session may stop early it does not: each worker makes its items' calls as they run, and
a stop leaves the rest unmade.
"""

from __future__ import annotations

import fnmatch
import sys
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path

import pytest

from pytest_verdryx.items import EvalCaseItem
from pytest_verdryx.options import Settings
from pytest_verdryx.run_folder import run_folder
from pytest_verdryx.scoring import ItemScoring, scorer_for
from verdryx_core.errors import VerdryxError
from verdryx_core.evalsets.formats import CSV_SIDECAR_SUFFIX
from verdryx_core.evalsets.load import load_evalset
from verdryx_core.evaluation import Prefetch, Work, prefetch_all, start_prefetch
from verdryx_core.runs import Score

__all__ = [
    "WORKERS_CALL_MODELS",
    "WORKERS_CALL_TARGETS",
    "PrefetchCalls",
    "TerminalStream",
    "may_stop_early",
    "models_prefetched",
    "workers_call_models",
]

#: Said once on the xdist controller when some target calls are made by the workers, each
#: for its own items; the figure is benchmarks/xdist_runs.py's (docs/targets.md, "Under
#: pytest-xdist"), with the calls made per worker.
WORKERS_CALL_TARGETS = (
    "verdryx: under -n {why}; target calls wait on the network, so one process with "
    "--verdryx-concurrency=N serves them better: -n 2 with the workers calling took 2.7-3.2x "
    "the serial run's time on 30 SDK-target cases at 1 s a call"
)
#: Said once on the xdist controller when the workers make the model calls, each for its own
#: items; the figure is benchmarks/xdist_runs.py's model rows.
WORKERS_CALL_MODELS = (
    "verdryx: under -n with {given} each worker makes its own cases' model calls ({because}); "
    "model calls wait on the network, so one process with --verdryx-concurrency=N serves them "
    "better: -n 2 with the workers calling took 2.5-2.9x the serial run's time on 30 model "
    "cases at 1 s a call"
)
_EACH_WORKER = "with {given} each worker calls the target for its own cases ({because})"


def may_stop_early(config: pytest.Config, settings: Settings) -> bool:
    """Whether the session may end before its last item (then calls are not waited for up
    front, so the ones a stop makes unnecessary are never made)."""
    if settings.batch:
        return False  # a Message Batch is sent whole, before anything else
    if settings.sequential:
        return True  # the sequential gate stops once its verdict is settled
    option = config.option
    return bool(option.maxfail) or bool(getattr(option, "stepwise", False))


def workers_call_models(config: pytest.Config, settings: Settings) -> tuple[str, str] | None:
    """Under xdist, what keeps the controller from making the run's model calls for the
    workers (into the store's response cache: see `PrefetchCalls.for_workers`), and why it
    does; None when nothing does."""
    carried = "the store's response cache is how the controller's answers reach them"
    if settings.cache == "off":
        return "--verdryx-cache=off", carried
    if not settings.store:
        return "--no-verdryx-store", carried
    if may_stop_early(config, settings):
        # Every call made up front would defeat the stop.
        return "-x/--maxfail/--stepwise", "a stop leaves the rest unmade"
    return None


def models_prefetched(config: pytest.Config, settings: Settings) -> bool:
    """Whether, under xdist, the controller makes the run's model calls for the workers (a
    replay's answers are all read from the store, so none is made anywhere)."""
    return settings.cache != "replay" and workers_call_models(config, settings) is None


class PrefetchCalls:
    def __init__(self, scoring: ItemScoring) -> None:
        self.scoring = scoring
        self.context = scoring.context
        self.config = scoring.context.config
        #: Wall time spent waiting for prefetched calls (the summary shows it).
        self.seconds = 0.0
        #: What those calls were (`target calls`, `sandbox runs`), in order, each once.
        self.kinds: list[str] = []
        self.session: pytest.Session | None = None
        self._for_workers_done = False
        #: The items' prefetched calls, until `end` counts what no item took.
        self._prefetch: Prefetch | None = None
        #: Whether those calls may still be running (items run as they end).
        self._in_flight = False

    def _may_stop_early(self) -> bool:
        return may_stop_early(self.config, self.context.settings)

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
        started = start_prefetch(
            scoring.scorer(),
            work,
            concurrency=settings.concurrency,
            # Items report as their calls end: pytest's own progress is the progress line.
            stream=None if streaming else TerminalStream(self.config),
            batch=settings.batch,
            challenger=scoring.challenger(),
        )
        scoring.futures = started.futures  # the same dict: items take theirs out of it
        scoring.challenger_futures = started.challenger
        self._prefetch, self._in_flight = started, True
        if not streaming:
            started.wait()  # a Ctrl-C here aborts the calls; `end` then counts them
            started.finish()
            self._in_flight = False
            self.seconds += started.seconds
        self._called(started.kinds)

    def end(self, *, interrupted: bool) -> None:
        """The items are done (or stopped): drop the calls not started and wait for those in
        flight, which are paid for; on Ctrl-C wait for nothing. Calls whose item never took
        them are counted apart (given up in flight, paid for, or never made)."""
        started, self._prefetch = self._prefetch, None
        if started is None:
            return
        if self._in_flight:
            self._in_flight = False
            if interrupted:
                started.abort()
            else:
                started.stop()
            self.seconds += started.seconds
        # Items take their futures out of `started.futures`: what is left, no item took.
        paid = started.scores()
        state = self.context.state
        state.calls_given_up += len(started.given_up)
        # The challenger's calls no item took (its item stopped or errored) count alike.
        rivals = [future for future in started.challenger.values() if _scored(future)]
        state.unscored_calls += len(paid) + len(rivals)
        state.unscored_cost_usd += sum(s.cost_usd + s.judge_cost_usd for s in paid.values())
        state.unscored_cost_usd += sum(
            f.result().cost_usd + f.result().judge_cost_usd for f in rivals
        )
        state.calls_not_made += sum(
            1
            for key, future in started.futures.items()
            if key not in started.given_up and (future.cancelled() or not future.done())
        )
        state.calls_not_made += sum(
            1 for future in started.challenger.values() if future.cancelled() or not future.done()
        )
        started.futures.clear()
        started.challenger.clear()

    def for_workers(self, node_ids: Sequence[str]) -> None:
        """On the xdist controller, once, before xdist schedules anything: every target call
        of the collected cases that one process may make for all (handed to the workers
        through the run's handoff file), then every model call, into the store's response
        cache (which is how those answers reach the workers)."""
        if self._for_workers_done or not self._may_call():
            return
        self._for_workers_done = True
        settings, evaluation = self.context.settings, self.context.evaluation
        # With the stub model and judge only target cases can be prefetched: an eval set
        # that cannot name a target is not even read (the controller holds none of it).
        free = settings.model == "stub" and settings.judge_model in (None, "stub")
        work = self._cases_of(node_ids, targets_only=free and settings.target is None)
        if not work:
            return
        targeted = [entry for entry in work if evaluation.uses_target(entry.case)]
        handed = self._prefetch_targets(targeted)
        self._prefetch_models(work, handed)

    def _prefetch_targets(self, targeted: list[Work]) -> list[Work]:
        """Call the targets of `targeted` here, for the workers; say in one line which ones
        the workers call themselves, and why. Returns the cases called here."""
        if not targeted:
            return []
        settings, evaluation = self.context.settings, self.context.evaluation
        if self._may_stop_early():
            why = _EACH_WORKER.format(
                given="-x/--maxfail/--stepwise", because="a stop leaves the rest unmade"
            )
            handed: list[Work] = []
        elif settings.repeat_auto:
            why = _EACH_WORKER.format(
                given="--verdryx-repeat=auto", because="the samples are allocated by item"
            )
            handed = []
        else:
            handed = [entry for entry in targeted if entry.case.workspace is None]
            kept = len(targeted) - len(handed)
            why = (
                f"{kept} workspace case(s) call the target on their workers (their graders "
                "read the folder the call changed)"
                if kept
                else ""
            )
        if why:
            self._write_line(WORKERS_CALL_TARGETS.format(why=why))
        if not handed:
            return []
        from verdryx_core.evaluation.target_prefetch import prefetch_targets  # under xdist only
        from verdryx_core.targets.handoff import TargetHandoff

        # The scorers of these calls write their answers for the workers to read.
        handoff = TargetHandoff(run_folder(self.config).handoff, writing=True)
        cases = [entry.case for entry in handed]
        scorer = scorer_for(self.context, cases, handoff=handoff)
        challenger = None
        if settings.challenger is not None and any(map(evaluation.challenged, cases)):
            # The challenger's calls are handed too, from the same pool (docs/targets.md,
            # "A challenger").
            challenger = evaluation.scorer(
                cases, challenger=True, handoff=handoff, repeats_for=self.context.allocation
            )
        self.seconds += prefetch_targets(
            scorer,
            handed,
            concurrency=settings.concurrency,
            stream=TerminalStream(self.config),
            challenger=challenger,
        )
        self._called(("target calls",))
        return handed

    def _prefetch_models(self, work: list[Work], handed: list[Work]) -> None:
        """Every model and judge call of `work` (the judge's of the target cases called
        here too), into the store's response cache."""
        settings, evaluation = self.context.settings, self.context.evaluation
        called = {entry.key for entry in handed}
        # A typed grade posts labels back to the service: it is asked once, by its worker.
        # A target case is graded here only when its grader calls a model (the judge), from
        # the outcome called above; the others a worker grades from the handoff.
        remote = [
            entry
            for entry in work
            if entry.case.grader != "typed"
            and (not evaluation.uses_target(entry.case) or entry.key in called)
        ]
        scorer = scorer_for(self.context, [entry.case for entry in remote])
        remote = [
            entry
            for entry in remote
            if entry.key not in called or scorer.grades_remotely(entry.case)
        ]
        if not evaluation.paid or not remote:
            evaluation.finish_calls()
            return  # the stub model and judge: free, nothing to prefetch
        kept = workers_call_models(self.config, self.context.settings)
        if kept is not None:
            given, because = kept
            self._write_line(WORKERS_CALL_MODELS.format(given=given, because=because))
            evaluation.finish_calls()
            return
        if called:
            from verdryx_core.targets.handoff import TargetHandoff

            reader = TargetHandoff(run_folder(self.config).handoff, writing=False)
            scorer = scorer_for(self.context, [entry.case for entry in remote], handoff=reader)
        try:
            started = prefetch_all(
                scorer,
                remote,
                concurrency=settings.concurrency,
                stream=TerminalStream(self.config),
                batch=settings.batch,
            )
        finally:
            if called:
                reader.close()
        self.seconds += started.seconds
        self._called(started.kinds)
        entries = evaluation.finish_calls().take_entries()
        if entries:
            self.context.store.open().cache_put_many(entries)

    def _called(self, kinds: Sequence[str]) -> None:
        self.kinds.extend(kind for kind in kinds if kind not in self.kinds)

    def _write_line(self, line: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(line)

    def cases_of(self, node_ids: Sequence[str]) -> list[Work]:
        """The eval cases behind collected node ids, read from their files."""
        return self._cases_of(node_ids)

    def _cases_of(self, node_ids: Sequence[str], *, targets_only: bool = False) -> list[Work]:
        """The eval cases behind collected node ids (`path::case-id`), read from their files;
        `targets_only`: only the cases whose output comes from a target (named by the set,
        its defaults or the case itself)."""
        patterns = self.context.settings.patterns
        wanted: dict[str, set[str]] = {}
        for node_id in node_ids:
            path, sep, case_id = node_id.partition("::")
            name = Path(path).name
            if sep and any(fnmatch.fnmatch(name, pattern) for pattern in patterns):
                wanted.setdefault(path, set()).add(case_id)
        work: list[Work] = []
        for path, case_ids in wanted.items():
            file = self.config.rootpath / path
            if targets_only and not _may_name_a_target(file):
                continue
            try:
                evalset = load_evalset(file)
            except VerdryxError:
                continue  # the workers report it as a collection error
            evaluation = self.context.evaluation
            work.extend(
                evaluation.work(evalset, case, key=f"{path}::{case.id}")
                for case in evalset.cases
                if case.id in case_ids and (not targets_only or evaluation.uses_target(case))
            )
        return work


def _scored(future: Future[Score]) -> bool:
    return future.done() and not future.cancelled() and future.exception() is None


def _may_name_a_target(path: Path) -> bool:
    """Whether the eval set file (or a CSV's sidecar) spells the word `target` anywhere: a
    file that does not names no target of its own. Only a shortcut: a file it passes over
    wrongly would have its target called by the workers, as when nothing is prefetched."""
    sidecar = path.with_name(path.name + CSV_SIDECAR_SUFFIX)
    for candidate in (path, sidecar):
        try:
            if b"target" in candidate.read_bytes():
                return True
        except OSError:
            continue
    return False


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
