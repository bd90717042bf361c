"""The per-session plugin object: hooks only, each handing its moment to the object whose job
it is (collection -> `SessionState`, calls ahead -> `PrefetchCalls`, scores ->
`ItemScoring`, the end -> `finish_session`, the summary -> `terminal`).

One instance per pytest session, built and registered only when verdryx is in play: the
entry point (`plugin.py`) activates it at configure time, or later, at the first eval case
(docs/options.md, "When verdryx turns on"); activated late, it is handed what it missed
(`joined`). Only the controller (or a run without xdist) writes the store or a baseline
file; workers send their state as a payload (see `xdist.py`).
"""

from __future__ import annotations

import atexit
import dataclasses
import gc
import os
from collections.abc import Callable, Generator, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_verdryx.context import CONTEXT_KEY, SessionContext, StoreHandle, session_store_path
from pytest_verdryx.exports import check_report
from pytest_verdryx.finish import SessionEnd, finish_session
from pytest_verdryx.fixture import custom_case_identity
from pytest_verdryx.items import EvalCaseItem
from pytest_verdryx.options import FLAGS, Settings, eval_settings, evalset_patterns, worded
from pytest_verdryx.prefetch import PrefetchCalls, TerminalStream, models_called_ahead
from pytest_verdryx.quiet_phases import drop_unshown_phases
from pytest_verdryx.run_folder import HANDOFF_KEY
from pytest_verdryx.scoring import SCORING_KEY, ItemScoring
from pytest_verdryx.shard import check_shard_settings, split_items
from pytest_verdryx.state import SessionState
from pytest_verdryx.terminal import write_summary
from pytest_verdryx.xdist import PAYLOAD_KEY, XdistHooks
from verdryx_core.conclusion.policy import MissingBaseline
from verdryx_core.errors import UsageError, VerdryxError
from verdryx_core.evaluation import Evaluation
from verdryx_core.evaluation.exec_notes import run_notes
from verdryx_core.gating.baselines import check_label, find_baseline
from verdryx_core.hooks import AddonSession
from verdryx_core.hooks import configure as configure_addons
from verdryx_core.leftover_threads import exit_past_leftover_threads, threads_now
from verdryx_core.llm.batch import check_batchable
from verdryx_core.runs import Baseline, EvalRun
from verdryx_core.targets import Target
from verdryx_core.targets.handoff import TargetHandoff

if TYPE_CHECKING:
    from pytest_verdryx.ci import CiOutputs
    from verdryx_core.judge.pairwise import PairwiseResult

__all__ = ["VerdryxSession"]


def _report_latency(item: EvalCaseItem, when: str, report: pytest.TestReport) -> None:
    """A target's answer time is the item's duration (`--durations`, JUnit `time`): on the
    call phase, and out of the setup phase, where the item waited for it."""
    latency = item.score.latency_s if item.score is not None else None
    if latency is None:
        return
    if when == "setup":
        report.duration = max(0.0, report.duration - latency)
    elif when == "call":
        report.duration = latency


def _ci_in_play(settings: Settings) -> bool:
    """Whether a CI view is asked for (docs/ci.md): the gate testcase (a baseline named),
    GitHub annotations, or a job summary. Otherwise nothing listens to every report."""
    return bool(
        settings.baseline
        or settings.challenger
        or os.environ.get("GITHUB_ACTIONS") == "true"
        or os.environ.get("GITHUB_STEP_SUMMARY")
    )


def _usage_error(exc: VerdryxError) -> pytest.UsageError:
    return pytest.UsageError(f"verdryx: {worded(exc)}")


def _new_context(
    config: pytest.Config, settings: Settings, *, run_id: str, started_at: datetime
) -> SessionContext:
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    rootdir = Path(config.rootpath)
    inidir = config.inipath.parent if config.inipath else None
    state = SessionState()
    # A worker takes the controller's baseline (and, through the entry point, its run id and
    # start): one run, however many processes score it.
    given = (workerinput or {}).get(PAYLOAD_KEY) or {}
    store = StoreHandle(
        session_store_path(
            config.getoption("verdryx_db"),
            config.getini("verdryx_db"),
            rootdir=rootdir,
            inidir=inidir,
        )
    )
    evaluation = Evaluation(
        eval_settings(
            settings,
            inidir or rootdir,
            rootdir,
            answered_ahead=workerinput is not None and models_called_ahead(config, settings),
        ),
        # The evaluation opens the store only when a call needs the response cache.
        store=store.open,
        run_id=run_id,
        started_at=started_at,
        tally=state.calls,
    )
    context = SessionContext(
        config=config,
        settings=settings,
        evaluation=evaluation,
        store=store,
        state=state,
        is_worker=workerinput is not None,
        # The environment is read once, when verdryx turns on (docs/events-and-otlp.md).
        addons=AddonSession(
            options=settings.addons,
            agent_id=settings.agent_id,
            exporting=workerinput is None,
            environ=dict(os.environ),
        ),
    )
    if given.get("baseline"):
        context.gate_against(Baseline.from_dict(given["baseline"]))
    if given.get(HANDOFF_KEY):
        # The target outcomes the controller called for this run, if it called any.
        evaluation.target_handoff = TargetHandoff(given[HANDOFF_KEY], writing=False)
    return context


class VerdryxSession:
    def __init__(
        self, config: pytest.Config, settings: Settings, *, run_id: str, started_at: datetime
    ) -> None:
        self.config = config
        self.context = _new_context(config, settings, run_id=run_id, started_at=started_at)
        self.scoring = ItemScoring(self.context)
        self.prefetch = PrefetchCalls(self.scoring)
        self.end: SessionEnd | None = None
        #: Items `--verdryx-shard` deselected in this process.
        self.shard_deselected = 0
        self.ci: CiOutputs | None = None
        self.xdist: XdistHooks | None = None
        #: Whether the session start's work is done (the target built): a session whose
        #: start failed (exit 4) measures nothing, and stores or sends nothing at its end.
        self.started = False
        #: Threads a target starts and leaves running may not keep pytest from exiting; a
        #: session run inside another one (pytester's in-process runs) leaves that to it.
        self.threads_at_start = threads_now()
        self.nested = False

    @property
    def settings(self) -> Settings:
        return self.context.settings

    def register(self) -> None:
        """Wire this session in: the stash (for items and the fixture), the hooks, xdist's."""
        config = self.config
        config.stash[CONTEXT_KEY] = self.context
        config.stash[SCORING_KEY] = self.scoring
        config.pluginmanager.register(self, "verdryx-session")
        if not self.context.is_worker and _ci_in_play(self.settings):
            # What CI sees is decided where the verdict is: on the controller.
            from pytest_verdryx.ci import CiOutputs

            self.ci = CiOutputs(config)
            config.pluginmanager.register(self.ci, "verdryx-ci")
        if self.settings.sequential:
            from pytest_verdryx.sequential import SequentialGatePlugin, check_sequential

            check_sequential(config, self.context)
            SequentialGatePlugin(self.context, self.scoring).register(config)
        if config.pluginmanager.hasplugin("xdist"):
            self.xdist = XdistHooks(self.context.state, self.prefetch, self.controller_state)
            config.pluginmanager.register(self.xdist, "verdryx-xdist")

    def joined(self, session: pytest.Session, *, read_since: Sequence[object] = ()) -> None:
        """Registered after `pytest_sessionstart` (activated by an eval case): what that hook
        would have done, here and in the CI outputs, now. pytest replays only
        `pytest_configure` for a plugin registered late. `read_since`: the plugins registered
        since the session started (the conftest.py files collection read), which the target
        hook is not asked of, as at session start (docs/targets.md)."""
        self.prefetch.session = session
        if self.ci is not None:
            self.ci.pytest_sessionstart(session)
        manager = self.config.pluginmanager
        self._build_target(
            manager.subset_hook_caller("pytest_verdryx_target", remove_plugins=read_since)
        )

    def check(self) -> None:
        """At configure time (activated by an eval case: after collection, before anything
        runs): the exports, the typed client and the baseline, so a typo is exit 4 before
        anything is collected (or run) or paid for."""
        settings, context = self.settings, self.context
        check_shard_settings(settings)
        try:
            if settings.batch:
                check_batchable(settings.model, cache=settings.cache)
            # The add-ons check their own settings (--verdryx-events...): verdryx_core.hooks.
            configure_addons(context.addons)
            check_report(settings)
            context.evaluation.check_graders()
            if settings.save_baseline:
                # A label that cannot name a file is refused now, before any call is paid
                # for, not after the whole run (docs/troubleshooting.md).
                check_label(settings.save_baseline)
            # A worker leaves the import to its first call: the controller has loaded the
            # target (exit 4 there), and when it calls every case the worker makes none.
            context.evaluation.check_target(load=not context.is_worker)
            if not context.is_worker and settings.pairwise_judge is not None:
                from pytest_verdryx.pairwise import check_pairwise

                check_pairwise(context)
            self._load_baseline()
        except VerdryxError as exc:
            raise _usage_error(exc) from None

    def _load_baseline(self) -> None:
        context, label = self.context, self.settings.baseline
        if context.is_worker or not label:
            return
        root = Path(self.config.rootpath)
        # A store that does not exist yet holds no baseline: do not create it just to look.
        store = context.store.open() if context.store.exists() else None
        if self.config.getoption("verdryx_baseline") is None:
            # Named in the ini: a session with no eval cases (plain unit tests) must not
            # fail on it, and a first `--verdryx-save-baseline` must be able to create it.
            try:
                find_baseline(label, store=store, root=root, flags=FLAGS)
            except UsageError as exc:
                context.missing_baseline = MissingBaseline(
                    label=label, why=worded(exc), named_in="verdryx_baseline in the ini"
                )
                return
        baseline = find_baseline(label, store=store, root=root, flags=FLAGS)
        # A model change is refused now (exit 4), before anything is paid for; allowed,
        # it is a warning.
        evaluation = context.evaluation
        probe = EvalRun(
            id="-",
            model=evaluation.settings.model,
            judge_model=evaluation.settings.judge_model,
            started_at=evaluation.started_at,
        )
        from verdryx_core.gating.comparison import check_models  # the gate's statistics

        warning = check_models(probe, baseline, allow=self.settings.allow_model_change)
        if warning:
            context.messages.append(f"WARNING: {warning}")
        context.gate_against(baseline)

    def controller_state(self) -> dict[str, Any]:
        """What workers need from the controller (through xdist's workerinput)."""
        context = self.context
        baseline = context.baseline
        return {
            "run_id": context.run_id,
            "started_at": context.evaluation.started_at.isoformat(),
            "baseline": baseline.to_dict() if baseline is not None else None,
        }

    # -- session start -----------------------------------------------------------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """A conftest.py may build the agent under test now (docs/targets.md)."""
        self._build_target(self.config.hook.pytest_verdryx_target)

    def _build_target(self, hook: Callable[..., Any]) -> None:
        config = self.config
        try:
            built = hook(config=config)
        except Exception as exc:  # the user's set-up code: one line, not a traceback
            text = " ".join(str(exc).split())
            raise pytest.UsageError(
                f"verdryx: the pytest_verdryx_target hook raised {type(exc).__name__}"
                + (f": {text}" if text else "")
            ) from None
        if built is None:
            self.started = True
            return
        if not callable(built):
            raise pytest.UsageError(
                f"verdryx: the pytest_verdryx_target hook returned a {type(built).__name__}, "
                "not a callable; return the function (or async function, or bound method) "
                "verdryx calls with each case"
            )
        target = Target.of(built)
        evaluation = self.context.evaluation
        evaluation.settings = dataclasses.replace(
            evaluation.settings, target=target.spec, built_target=target
        )
        self.started = True

    # -- collection --------------------------------------------------------------------------

    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        shard = self.settings.shard
        if shard is None:
            return
        kept, dropped = split_items(items, shard)
        self.shard_deselected = len(dropped)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept

    def pytest_report_collectionfinish(self) -> list[str]:
        if self.settings.shard is None or not self.shard_deselected:
            return []
        return [f"{self.shard_deselected} deselected by --verdryx-shard {self.settings.shard}"]

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # An xdist worker's error here would crash it: there each pass@K case short of
        # samples is unmeasured, with the reason, when it is scored.
        worker = self.context.is_worker
        items = [item for item in session.items if isinstance(item, EvalCaseItem)]
        cases = [] if worker else items
        try:
            # Before anything runs: a pass@K case needs K repeats (docs/options.md); under
            # --verdryx-repeat=auto the allocation gives each at least K.
            if not self.settings.repeat_auto:
                self.context.evaluation.check_aggregates(
                    (item.evalset, item.case) for item in cases
                )
            notes = run_notes(
                (item.case for item in items),
                repeat=self.settings.repeat,
                unsafe_exec=self.settings.unsafe_exec,
                flags=FLAGS,
            )
        except VerdryxError as exc:
            raise _usage_error(exc) from None
        if worker:
            # The controller collects nothing: it says the workers' notes, once.
            self.context.state.notes = notes
        else:
            self.context.messages.extend(notes)
        state = self.context.state
        state.order = {item.nodeid: index for index, item in enumerate(session.items)}
        state.expected = {
            item.nodeid
            for item in session.items
            if isinstance(item, EvalCaseItem) or item.get_closest_marker("verdryx") is not None
        }
        state.expected_count = len(state.expected)
        state.targets = self.context.evaluation.targets_of(
            (item.evalset.id, item.case) for item in session.items if isinstance(item, EvalCaseItem)
        )
        state.human_labels = _human_labels(session.items)
        if self.settings.repeat_auto:
            self._allocate(session)

    def _allocate(self, session: pytest.Session) -> None:
        """`--verdryx-repeat=auto`: each case's samples from the baseline's per-case variance
        (docs/statistics.md). Every process computes it from the same items and baseline."""
        from verdryx_core.evaluation.aggregate import aggregate_k
        from verdryx_core.evaluation.allocation import allocate

        items = [item for item in session.items if isinstance(item, EvalCaseItem)]
        keys = [f"{item.evalset.id}::{item.case.id}" for item in items]
        floors = {
            key: k
            for key, item in zip(keys, items, strict=True)
            if (k := aggregate_k(item.case.aggregate)) is not None
        }
        context = self.context
        budget = self.settings.max_samples or 3 * len(keys)
        baseline = context.baseline.case_map() if context.baseline is not None else {}
        allocation = allocate(keys, baseline, budget, floors=floors)
        if context.baseline is None:
            allocation = dataclasses.replace(
                allocation,
                fallback=allocation.fallback
                and "no baseline to allocate by: " + allocation.fallback.split(": ", 1)[-1],
            )
        context.allocation = allocation
        context.evaluation.repeats_for = allocation

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        # Under xdist the controller sees the workers' failed reports too (deduplicated by
        # node id); the run then lacks those files' cases and is stored as incomplete.
        if report.failed:
            self.context.state.collection_errors.add(report.nodeid or "<session>")

    def pytest_itemcollected(self, item: pytest.Item) -> None:
        # Custom cases are known cases too (before -k), or the gate would call a custom case
        # of the baseline "removed" whenever an eval set file is collected beside it.
        marker = item.get_closest_marker("verdryx")
        if not isinstance(item, EvalCaseItem) and marker is not None:
            self.context.state.known_keys.add("::".join(custom_case_identity(item)))
            # A custom case's tags select it with -k, as an eval item's do.
            tags = marker.kwargs.get("tags")
            if isinstance(tags, list | tuple):
                item.extra_keyword_matches.update(str(tag) for tag in tags)

    # -- the items ---------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        self.scoring.items = list(session.items)
        interrupted = False
        try:
            if not self.context.is_worker:
                self.prefetch.for_items(session)
            return (yield)
        except KeyboardInterrupt as exc:
            if type(exc) is not KeyboardInterrupt:
                # pytest or xdist stopping the loop (collection errors, --stepwise, -x under
                # xdist) with their own subclasses: a stop, not a Ctrl-C.
                raise
            interrupted = True
            # The user wants out: skip the exit-time collection of every object the SDKs
            # built (~0.5 s with the anthropic SDK loaded). Registered now, so it runs first.
            atexit.register(gc.freeze)
            # Raised afresh, from here: pytest renders every frame of a Ctrl-C's traceback
            # with its source before it stops (~50 ms a frame with an SDK loaded), and the
            # frames below this one (a wait on a call) say nothing the user needs.
            raise KeyboardInterrupt from None
        finally:
            # Calls not started when the loop ends (-x, --maxfail, Ctrl-C) are never made.
            self.prefetch.end(interrupted=interrupted)
            self.context.evaluation.finish_calls()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if item.nodeid in self.context.state.expected:
            self.scoring.begin_attempt(item)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        state = self.context.state
        if isinstance(item, EvalCaseItem):
            _report_latency(item, call.when, report)
        if (
            call.when == "call"
            and report.passed
            and item.nodeid in state.expected
            and item.nodeid not in state.scores
            and not isinstance(item, EvalCaseItem)
        ):
            # A marked test that passes without a score would leave the run incomplete with
            # every item green; say what is missing where it is missing.
            report.outcome = "failed"
            report.longrepr = (
                f"{item.nodeid}: marked @pytest.mark.verdryx but never called "
                "verdryx.grade(...) or verdryx.record(...): the case has no score"
            )
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        state = self.context.state
        if report.skipped and report.nodeid in state.expected:
            state.not_run.add(report.nodeid)

    @pytest.hookimpl(wrapper=True)
    def pytest_report_teststatus(
        self, report: pytest.TestReport, config: pytest.Config
    ) -> Generator[None, Any, Any]:
        """`-v` shows each case's score beside its outcome (`PASSED (score 0.950)`), from the
        score the plugin put on the report, so it also works on the xdist controller."""
        result = yield
        if result is None or report.when != "call" or config.get_verbosity() <= 0:
            return result
        score = next(
            (value for name, value in report.user_properties if name == "verdryx.score"), None
        )
        if not score:  # not a verdryx case, or unmeasured (its reason is shown already)
            return result
        category, letter, word = result
        shown = f"(score {float(str(score)):.3f})"
        if isinstance(word, tuple):
            return category, letter, (f"{word[0]} {shown}", word[1])
        return category, letter, f"{word} {shown}" if word else word

    # -- the end -----------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        context = self.context
        if not self.started:
            context.store.close()
            return
        if context.is_worker:
            context.state.stopped_early = bool(session.shouldfail or session.shouldstop)
            self.config.workeroutput[PAYLOAD_KEY] = context.state.to_payload()  # type: ignore[attr-defined]
            return
        # Here, before the terminal's summary: pytest writes it after every sessionfinish.
        drop_unshown_phases(self.config, evalset_patterns(self.config))
        try:
            if not context.state.active or self.config.option.collectonly:
                return  # listing cases measures nothing: no run, not even an incomplete one
            pairwise = None
            if exitstatus != pytest.ExitCode.INTERRUPTED:
                pairwise = self._pairwise()
            self.end = finish_session(
                context,
                session,
                call_seconds=self.prefetch.seconds,
                call_kinds=self.prefetch.kinds,
                pairwise=pairwise,
            )
            session.exitstatus = self.end.exit_status
        finally:
            context.store.close()
            if not self.nested:
                exit_past_leftover_threads(self.threads_at_start, lambda: int(session.exitstatus))

    def _pairwise(self) -> PairwiseResult | None:
        """The pairwise judge's verdicts (docs/targets.md, "A pairwise judge"), or None."""
        if self.settings.pairwise_judge is None:
            return None
        from pytest_verdryx.pairwise import judge_session_pairs

        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()  # the progress line, not after the last `[100%]`
        items = {
            item.nodeid: item.case for item in self.scoring.items if isinstance(item, EvalCaseItem)
        }
        return judge_session_pairs(
            self.context,
            self.prefetch.cases_of,
            items=items,
            stream=TerminalStream(self.config),
        )

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.end is not None:
            write_summary(terminalreporter, self.end)

    def close(self) -> None:
        self.context.store.close()
        handoff = self.context.evaluation.target_handoff
        if handoff is not None:
            handoff.close()


def _human_labels(items: list[pytest.Item]) -> dict[tuple[str, str, str], str | float]:
    """The `human_label` of each selected case with a recorded text output, keyed as the
    labels files are matched (docs/calibrating-the-judge.md)."""
    labelled = [
        item
        for item in items
        if isinstance(item, EvalCaseItem)
        and item.case.human_label is not None
        and isinstance(item.case.output, str)
    ]
    if not labelled:
        return {}
    from verdryx_core.judge.calibration.labels import output_sha256

    labels: dict[tuple[str, str, str], str | float] = {}
    for item in labelled:
        label = item.case.human_label
        if label is not None:
            labels[(item.evalset.id, item.case.id, output_sha256(str(item.case.output)))] = label
    return labels
