"""The per-session plugin object: hooks only, each handing its moment to the object whose job
it is (collection -> `SessionState`, calls ahead -> `AheadCalls`, scores -> `ItemScoring`,
the end -> `end_session`, the summary -> `terminal`).

One instance per pytest session. Only the controller (or a run without xdist) writes the
store or a baseline file; workers send their state as a payload (see `xdist.py`).
"""

from __future__ import annotations

import atexit
import dataclasses
import gc
import os
import uuid
from collections.abc import Generator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pytest_verdryx.baseline import BaselineView, find_session_baseline
from pytest_verdryx.exports import check_exports
from pytest_verdryx.finish import SessionEnd, end_session
from pytest_verdryx.fixture import custom_case_identity
from pytest_verdryx.items import EvalCaseItem
from pytest_verdryx.options import Settings, eval_settings, worded
from pytest_verdryx.prefetch import AheadCalls
from pytest_verdryx.scoring import SCORING_KEY, ItemScoring
from pytest_verdryx.shard import check_shard_settings, split_items
from pytest_verdryx.state import SessionState
from pytest_verdryx.storehandle import StoreHandle, session_store_path
from pytest_verdryx.terminal import write_summary
from pytest_verdryx.xdist import PAYLOAD_KEY, XdistHooks
from verdryx_core.addons.events.otlp import SpanExporter
from verdryx_core.errors import UsageError, VerdryxError
from verdryx_core.evaluation import Pipeline
from verdryx_core.gating.baselines import check_label, find_baseline
from verdryx_core.llm.batch import check_batchable
from verdryx_core.runs import Baseline
from verdryx_core.targets import Target

__all__ = ["VerdryxPlugin"]


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


def _usage_error(exc: VerdryxError) -> pytest.UsageError:
    return pytest.UsageError(f"verdryx: {worded(exc)}")


class VerdryxPlugin:
    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
        self.is_worker = self.workerinput is not None
        self.run_id = str(uuid.uuid4())
        self.started_at = datetime.now(UTC)
        self.baseline = BaselineView()
        #: (label, why) when the ini's `verdryx_baseline` names no baseline: refused at the
        #: end of a session with eval cases, unless it saves that label (docs/options.md).
        self.missing_baseline: tuple[str, str] | None = None
        if self.workerinput is not None:
            self._adopt_controller_state(self.workerinput.get(PAYLOAD_KEY) or {})
        self.rootdir = Path(config.rootpath)
        base = config.inipath.parent if config.inipath else self.rootdir
        self.eval_settings = eval_settings(settings, base, self.rootdir)
        self.store = StoreHandle(
            session_store_path(
                config.getoption("verdryx_db"),
                config.getini("verdryx_db"),
                rootdir=self.rootdir,
                inidir=config.inipath.parent if config.inipath else None,
            )
        )
        self.state = SessionState()
        self.pipeline = Pipeline(self.eval_settings, self.store.open, tally=self.state.calls)
        self.scoring = ItemScoring(
            settings=settings,
            pipeline=self.pipeline,
            state=self.state,
            baseline=self.baseline,
            run_id=self.run_id,
        )
        self.ahead = AheadCalls(config, self.scoring, self.store, self.rootdir)
        #: Warnings found at configure time, for the summary.
        self.messages: list[str] = []
        # Read once, at configure time (docs/events-and-otlp.md).
        self.otlp_endpoint = os.environ.get("VERDRYX_OTLP_ENDPOINT") or None
        self.exporter: SpanExporter | None = None
        self.end: SessionEnd | None = None
        #: Items `--verdryx-shard` deselected in this process.
        self.shard_deselected = 0

    def register(self) -> None:
        """Wire this session in: the stash (for items and the fixture), the hooks, xdist's."""
        config = self.config
        config.stash[SCORING_KEY] = self.scoring
        config.pluginmanager.register(self, "verdryx-session")
        from pytest_verdryx import status

        config.pluginmanager.register(status, "verdryx-status")
        if not self.is_worker:  # what CI sees is decided where the verdict is
            from pytest_verdryx.ci import CiOutputs

            config.pluginmanager.register(CiOutputs(config), "verdryx-ci")
        if config.pluginmanager.hasplugin("xdist"):
            hooks = XdistHooks(self.state, self.ahead, self.controller_state)
            config.pluginmanager.register(hooks, "verdryx-xdist")
            from pytest_verdryx.longrepr import CrashOverXdist

            config.pluginmanager.register(CrashOverXdist(), "verdryx-xdist-crash")

    def check(self) -> None:
        """At configure time: the exports, the typed client and the baseline, so a typo is
        exit 4 before anything is collected or paid for."""
        check_shard_settings(self.settings)
        try:
            if self.settings.batch:
                check_batchable(self.settings.model, cache=self.settings.cache)
            self.exporter = check_exports(
                self.settings, on_controller=not self.is_worker, otlp_endpoint=self.otlp_endpoint
            )
            self.pipeline.typed_client()
            if self.settings.save_baseline:
                # A label that cannot name a file is refused now, before any call is paid
                # for, not after the whole run (docs/troubleshooting.md).
                check_label(self.settings.save_baseline)
            self.pipeline.check_target()
            self._load_baseline()
        except VerdryxError as exc:
            raise _usage_error(exc) from None

    def _load_baseline(self) -> None:
        if self.is_worker or not self.settings.baseline:
            return
        # A store that does not exist yet holds no baseline: do not create it just to look.
        store = self.store.open() if self.store.exists() else None
        if self.config.getoption("verdryx_baseline") is None:
            # Named in the ini: a session with no eval cases (plain unit tests) must not
            # fail on it, and a first `--verdryx-save-baseline` must be able to create it.
            try:
                find_baseline(self.settings.baseline, store=store, root=self.rootdir)
            except UsageError as exc:
                self.missing_baseline = (self.settings.baseline, worded(exc))
                return
        baseline, warning = find_session_baseline(
            self.settings.baseline,
            store=store,
            root=self.rootdir,
            settings=self.eval_settings,
            allow_model_change=self.settings.allow_model_change,
            started_at=self.started_at,
        )
        if warning:
            self.messages.append(f"WARNING: {warning}")
        self._set_baseline(baseline)

    def _set_baseline(self, baseline: Baseline) -> None:
        self.baseline = BaselineView(baseline)
        self.scoring.baseline = self.baseline

    def controller_state(self) -> dict[str, Any]:
        """What workers need from the controller (through xdist's workerinput)."""
        baseline = self.baseline.baseline
        return {
            "run_id": self.run_id,
            "started_at": self.started_at.isoformat(),
            "baseline": baseline.to_dict() if baseline is not None else None,
        }

    def _adopt_controller_state(self, state: dict[str, Any]) -> None:
        self.run_id = state.get("run_id", self.run_id)
        if state.get("started_at"):
            self.started_at = datetime.fromisoformat(state["started_at"])
        if state.get("baseline"):
            self.baseline = BaselineView(Baseline.from_dict(state["baseline"]))

    # -- session start -----------------------------------------------------------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """A conftest.py may build the agent under test now (docs/targets.md)."""
        config = self.config
        try:
            built = config.hook.pytest_verdryx_target(config=config)
        except Exception as exc:  # the user's set-up code: one line, not a traceback
            text = " ".join(str(exc).split())
            raise pytest.UsageError(
                f"verdryx: the pytest_verdryx_target hook raised {type(exc).__name__}"
                + (f": {text}" if text else "")
            ) from None
        if built is None:
            return
        if not callable(built):
            raise pytest.UsageError(
                f"verdryx: the pytest_verdryx_target hook returned a {type(built).__name__}, "
                "not a callable; return the function (or async function, or bound method) "
                "verdryx calls with each case"
            )
        target = Target.of(built)
        self.eval_settings = dataclasses.replace(
            self.eval_settings, target=target.spec, built_target=target
        )
        self.pipeline.settings = self.eval_settings

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
        state = self.state
        state.order = {item.nodeid: index for index, item in enumerate(session.items)}
        state.expected = {
            item.nodeid
            for item in session.items
            if isinstance(item, EvalCaseItem) or item.get_closest_marker("verdryx") is not None
        }
        state.expected_count = len(state.expected)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        # Under xdist the controller sees the workers' failed reports too (deduplicated by
        # node id); the run then lacks those files' cases and is stored as incomplete.
        if report.failed:
            self.state.collection_errors.add(report.nodeid or "<session>")

    def pytest_itemcollected(self, item: pytest.Item) -> None:
        # Custom cases are known cases too (before -k), or the gate would call a custom case
        # of the baseline "removed" whenever an eval set file is collected beside it.
        if not isinstance(item, EvalCaseItem) and item.get_closest_marker("verdryx") is not None:
            self.state.known_keys.add("::".join(custom_case_identity(item)))

    # -- the items ---------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        self.scoring.items = list(session.items)
        interrupted = False
        try:
            if not self.is_worker:
                self.ahead.for_items(session)
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
            self.ahead.end(interrupted=interrupted)
            self.pipeline.finish_calls()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if item.nodeid in self.state.expected:
            self.scoring.begin_attempt(item)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        state = self.state
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
        if report.skipped and report.nodeid in self.state.expected:
            self.state.not_run.add(report.nodeid)

    # -- the end -----------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        stopped = session.shouldfail or session.shouldstop
        if self.is_worker:
            self.state.stopped_early = bool(stopped)
            self.config.workeroutput[PAYLOAD_KEY] = self.state.to_payload()  # type: ignore[attr-defined]
            return
        try:
            if not self.state.active or self.config.option.collectonly:
                return  # listing cases measures nothing: no run, not even an incomplete one
            self.end = end_session(
                config=self.config,
                settings=self.settings,
                eval_settings=self.eval_settings,
                state=self.state,
                baseline=self.baseline,
                missing_baseline=self.missing_baseline,
                store=self.store,
                run_id=self.run_id,
                started_at=self.started_at,
                stopped=str(stopped) if stopped else None,
                exit_status=session.exitstatus,
                messages=self.messages,
                exporter=self.exporter,
                otlp_endpoint=self.otlp_endpoint,
                call_seconds=self.ahead.seconds,
            )
            session.exitstatus = self.end.exit_status
        finally:
            self.store.close()

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.end is not None:
            write_summary(terminalreporter, self.end)

    def close(self) -> None:
        self.store.close()
