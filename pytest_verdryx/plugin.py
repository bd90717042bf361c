"""pytest entry point (`pytest11`): the options, the marker, the hooks a conftest.py may
implement, and the session's plugin object, registered at configure.

pytest imports this module in every session of an environment where verdryx is installed,
a plain unit-test suite included, so it imports only pytest, the option table (with the
add-ons' options, through `verdryx_core.hooks`), the conftest hooks (`hookspecs.py`) and
xdist's light hooks (`xdist.py`, `run_folder.py`): the rest of the core is imported when
verdryx turns on (docs/options.md, "When verdryx turns on"). The run id and start exist from
configure on (workers must be told them before anything is collected).
"""

from __future__ import annotations

import atexit
import fnmatch
import gc
import uuid
from collections.abc import Callable, Generator, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_verdryx.options import add_options, evalset_patterns, explicitly_asked, read_settings
from pytest_verdryx.run_folder import remove_run_folder
from pytest_verdryx.xdist import PAYLOAD_KEY, XdistHooks

if TYPE_CHECKING:
    from pytest_verdryx.ci import CiOutputs
    from pytest_verdryx.context import SessionContext
    from pytest_verdryx.finish import SessionEnd
    from pytest_verdryx.fixture import VerdryxCase
    from pytest_verdryx.items import EvalCaseItem, EvalSetFile
    from pytest_verdryx.options import Settings
    from pytest_verdryx.prefetch import PrefetchCalls
    from pytest_verdryx.scoring import ItemScoring
    from pytest_verdryx.state import SessionState

__all__ = [
    "VerdryxPlugin",
    "pytest_addhooks",
    "pytest_addoption",
    "pytest_collect_file",
    "pytest_configure",
    "pytest_unconfigure",
    "verdryx",
]

MARKER = (
    "verdryx(case_id=None, grader='exact', expected=None, rubric=None, min_score=None): "
    "a custom verdryx eval case; the test grades with the `verdryx` fixture's "
    "grade(output) or record(score, reason=...), and joins the run and the drift gate"
)


class VerdryxPlugin:
    """The session's plugin object, registered at configure in every session: its hooks
    record what the run needs from the start (the failed collection reports, in
    `SessionState`) and, once verdryx is on, hand each moment to the object whose job it is
    (collection and the end -> `session.py`, prefetch -> `PrefetchCalls`, scores ->
    `ItemScoring`, the summary -> `terminal`).

    A plain class, not a dataclass: building one of those costs every pytest session about
    a millisecond at import."""

    def __init__(
        self,
        config: pytest.Config,
        *,
        run_id: str,
        started_at: datetime,
        patterns: tuple[str, ...],
        nested: bool = False,
    ) -> None:
        self.config = config
        #: From configure on: workers must be told them before anything is collected.
        self.run_id = run_id
        self.started_at = started_at
        self.patterns = patterns
        self._state: SessionState | None = None
        #: Configured while another session of this process runs (pytester's in-process
        #: runs): the process's exit is that other session's business.
        self.nested = nested
        self._context: SessionContext | None = None
        self._scoring: ItemScoring | None = None
        self._prefetch: PrefetchCalls | None = None
        #: The pytest session, once `pytest_sessionstart` has run...
        self.session: pytest.Session | None = None
        #: ...and the plugins registered then (the conftest.py files read later are not
        #: asked to build the target, as at session start).
        self.plugins_at_start: list[object] = []
        #: Turned on after the session started: the configure-time checks and the session
        #: start's work are still to do (`start_late`).
        self.pending_start = False
        self.end: SessionEnd | None = None
        #: Items `--verdryx-shard` deselected in this process.
        self.shard_deselected = 0
        self.ci: CiOutputs | None = None
        self.xdist: XdistHooks | None = None
        #: Whether the session start's work is done (the target built): a session whose
        #: start failed (exit 4) measures nothing, and stores or sends nothing at its end.
        self.started = False
        #: Threads a target starts and leaves running may not keep pytest from exiting
        #: (counted when verdryx turns on).
        self.threads_at_start: Any = None

    def register(self) -> None:
        """Wire this session in at configure: its hooks, and xdist's when xdist is loaded (a
        session without it never sees an unknown hook)."""
        manager = self.config.pluginmanager
        manager.register(self, "verdryx-session")
        if manager.hasplugin("xdist"):
            self.xdist = XdistHooks(self)
            manager.register(self.xdist, "verdryx-xdist")

    # -- turning on ----------------------------------------------------------------------------

    @property
    def state(self) -> SessionState:
        """What the session learns, from configure on (merged across xdist workers): made
        at its first use (a session of unit tests that all collect never needs it)."""
        if self._state is None:
            from pytest_verdryx.state import SessionState

            self._state = SessionState()
        return self._state

    @property
    def on(self) -> bool:
        return self._context is not None

    @property
    def context(self) -> SessionContext:
        if self._context is None:
            raise RuntimeError("verdryx is not on in this session")
        return self._context

    @property
    def scoring(self) -> ItemScoring:
        if self._scoring is None:
            raise RuntimeError("verdryx is not on in this session")
        return self._scoring

    @property
    def prefetch(self) -> PrefetchCalls:
        if self._prefetch is None:
            raise RuntimeError("verdryx is not on in this session")
        return self._prefetch

    def is_evalset(self, name: str) -> bool:
        return any(fnmatch.fnmatch(name, pattern) for pattern in self.patterns)

    def activate(self) -> VerdryxPlugin:
        """Turns verdryx on (once): the core imported, the context built and stashed with
        its `ItemScoring` (for the items and the fixture). After the session started, its
        checks wait for `start_late` (a UsageError raised from a collector would be a
        collection error, not exit 4)."""
        if self._context is not None:
            return self
        from pytest_verdryx.context import new_context
        from pytest_verdryx.prefetch import PrefetchCalls, models_prefetched
        from pytest_verdryx.scoring import SCORING_KEY, ItemScoring
        from pytest_verdryx.session import ci_in_play
        from verdryx_core.leftover_threads import threads_now

        config = self.config
        self.threads_at_start = threads_now()
        settings = read_settings(config)
        is_worker = getattr(config, "workerinput", None) is not None
        context = new_context(
            config,
            settings,
            self.state,
            run_id=self.run_id,
            started_at=self.started_at,
            answers_prefetched=is_worker and models_prefetched(config, settings),
        )
        self._context = context
        self._scoring = ItemScoring(context)
        self._prefetch = PrefetchCalls(self._scoring)
        config.stash[SCORING_KEY] = self._scoring
        if not context.is_worker and ci_in_play(self.settings):
            # What CI sees is decided where the verdict is: on the controller.
            from pytest_verdryx.ci import CiOutputs

            self.ci = CiOutputs(config)
            config.pluginmanager.register(self.ci, "verdryx-ci")
        if self.settings.sequential:
            from pytest_verdryx.sequential import SequentialGatePlugin, check_sequential

            check_sequential(config, context)
            SequentialGatePlugin(context, self._scoring).register(config)
        self.pending_start = self.session is not None
        return self

    def start_late(self) -> None:
        """Turned on after the session started: the checks made at configure time otherwise,
        then the session start's work (the target built)."""
        session = self.session
        if not self.pending_start or session is None:
            return
        self.pending_start = False
        self.check()
        at_start = {id(known) for known in self.plugins_at_start}
        since = [
            known for known in self.config.pluginmanager.get_plugins() if id(known) not in at_start
        ]
        self.joined(session, read_since=since)

    def activate_now(self) -> VerdryxPlugin:
        """Turned on and started at once, outside collection: a UsageError from the xdist
        controller's hooks ends the session with exit 4; from the fixture, it is the error
        of the test that asked."""
        self.activate()
        self.start_late()
        return self

    @property
    def settings(self) -> Settings:
        return self.context.settings

    def joined(self, session: pytest.Session, *, read_since: Sequence[object] = ()) -> None:
        """Turned on after `pytest_sessionstart` (by an eval case): what that hook would have
        done, here and in the CI outputs (registered when verdryx turns on), now.
        `read_since`: the plugins registered since the session started (the conftest.py
        files collection read), which the target hook is not asked of, as at session start
        (docs/targets.md)."""
        self.prefetch.session = session
        if self.ci is not None:
            self.ci.pytest_sessionstart(session)
        manager = self.config.pluginmanager
        self._build_target(
            manager.subset_hook_caller("pytest_verdryx_target", remove_plugins=read_since)
        )

    def check(self) -> None:
        """The configure-time checks: a typo is exit 4 before anything is paid for."""
        from pytest_verdryx.session import check

        check(self.config, self.context)

    def controller_state(self) -> dict[str, Any]:
        """What workers need from the controller (through xdist's workerinput); before
        verdryx is on, no baseline (named only explicitly, which turns it on at configure)."""
        baseline = self.context.baseline if self.on else None
        return {
            "run_id": self.run_id,
            "started_at": self.started_at.isoformat(),
            "baseline": baseline.to_dict() if baseline is not None else None,
        }

    # -- session start -----------------------------------------------------------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """A conftest.py may build the agent under test now (docs/targets.md)."""
        self.session = session
        # Kept (not only their ids), so no id is reused by another object.
        self.plugins_at_start = list(self.config.pluginmanager.get_plugins())
        if self.on:
            self._build_target(self.config.hook.pytest_verdryx_target)

    def _build_target(self, hook: Callable[..., Any]) -> None:
        from pytest_verdryx.session import build_target

        build_target(self.config, self.context, hook)
        self.started = True

    # -- collection --------------------------------------------------------------------------

    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        if self.on:
            self.split_shard(config, items)

    def split_shard(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        shard = self.settings.shard
        if shard is None:
            return
        from pytest_verdryx.shard import split_items

        kept, dropped = split_items(items, shard)
        self.shard_deselected = len(dropped)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept

    def pytest_report_collectionfinish(self) -> list[str]:
        if not self.on or self.settings.shard is None or not self.shard_deselected:
            return []
        return [f"{self.shard_deselected} deselected by --verdryx-shard {self.settings.shard}"]

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if not self.on:
            return
        from pytest_verdryx.session import collection_finished

        collection_finished(self.context, session)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        # Under xdist the controller sees the workers' failed reports too (deduplicated by
        # node id); the run then lacks those files' cases and is stored as incomplete. Kept
        # from the start: a file that failed before the first eval case counts too.
        if report.failed:
            self.state.collection_errors.add(report.nodeid or "<session>")

    def pytest_itemcollected(self, item: pytest.Item) -> None:
        # Custom cases are known cases too (before -k), or the gate would call a custom case
        # of the baseline "removed" whenever an eval set file is collected beside it.
        marker = item.get_closest_marker("verdryx")
        if marker is None:
            return
        self.activate()  # the first marked test turns verdryx on
        from pytest_verdryx.fixture import custom_case_identity
        from pytest_verdryx.items import EvalCaseItem

        if not isinstance(item, EvalCaseItem):
            self.state.known_keys.add("::".join(custom_case_identity(item)))
            # A custom case's tags select it with -k, as an eval item's do.
            tags = marker.kwargs.get("tags")
            if isinstance(tags, list | tuple):
                item.extra_keyword_matches.update(str(tag) for tag in tags)

    # -- the items ---------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        if not self.on:
            return (yield)
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
        if self.on and item.nodeid in self.state.expected:
            self.scoring.begin_attempt(item)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if not self.on:
            return report
        from pytest_verdryx.items import EvalCaseItem

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

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not self.on:
            # The xdist controller collects nothing: a verdryx case's report (a marked
            # test's: nothing in its node id says so) turns verdryx on, before the terminal
            # shows it, so `-v` shows its score.
            if not any(name == "verdryx.grader" for name, _ in report.user_properties):
                return
            self.activate_now()
            if self.ci is not None:  # registered during this hook call, which it misses
                self.ci.pytest_runtest_logreport(report)
        state = self.state
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
        if not self.on:
            return
        from pytest_verdryx.session import finish

        context = self.context
        if not self.started:
            context.store.close()
            return
        if context.is_worker:
            self.state.stopped_early = bool(session.shouldfail or session.shouldstop)
            self.config.workeroutput[PAYLOAD_KEY] = self.state.to_payload()  # type: ignore[attr-defined]
            return
        self.end = finish(
            context,
            session,
            exitstatus,
            prefetch=self.prefetch,
            items=self.scoring.items,
            threads_at_start=self.threads_at_start,
            nested=self.nested,
        )

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.end is not None:
            from pytest_verdryx.terminal import write_summary

            write_summary(terminalreporter, self.end)

    def close(self) -> None:
        if not self.on:
            return
        self.context.store.close()
        handoff = self.context.evaluation.target_handoff
        if handoff is not None:
            handoff.close()


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


_SESSION = pytest.StashKey[VerdryxPlugin]()


def session_of(config: pytest.Config) -> VerdryxPlugin:
    return config.stash[_SESSION]


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_verdryx import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


#: Sessions configured and not yet unconfigured in this process.
_open_sessions = [0]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    # A worker takes the controller's run id and start (xdist's workerinput): one run,
    # however many processes score it.
    workerinput = getattr(config, "workerinput", None) or {}
    given = workerinput.get(PAYLOAD_KEY) or {}
    started = given.get("started_at")
    plugin = config.stash[_SESSION] = VerdryxPlugin(
        config,
        run_id=given.get("run_id") or str(uuid.uuid4()),
        started_at=datetime.fromisoformat(started) if started else datetime.now(UTC),
        patterns=evalset_patterns(config),
        nested=_open_sessions[0] > 0,
    )
    _open_sessions[0] += 1
    plugin.register()
    if explicitly_asked(config):
        # Asked for by name: a typo or an unknown baseline is exit 4 now, before collection.
        plugin.activate().check()


def pytest_unconfigure(config: pytest.Config) -> None:
    _open_sessions[0] = max(0, _open_sessions[0] - 1)
    plugin = config.stash.get(_SESSION, None)
    if plugin is not None:
        plugin.close()
    remove_run_folder(config)


# -- collection: the first eval case turns verdryx on -------------------------------------------


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> EvalSetFile | None:
    plugin = session_of(parent.config)
    if not plugin.is_evalset(file_path.name):
        return None
    plugin.activate()
    from pytest_verdryx.items import EvalSetFile

    return EvalSetFile.from_parent(parent, path=file_path)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """pytest walks a folder with `is_file()`, which is False for a dangling symbolic link or
    a loop of them: such an eval set would vanish from the run without a word. It becomes a
    collector here, whose read fails as a one-line collection error naming the link."""
    report = yield
    if isinstance(collector, pytest.Dir | pytest.Package) and report.passed:
        plugin = session_of(collector.config)
        for path in broken_links(collector.path, plugin.patterns):
            if collector.ihook.pytest_ignore_collect(collection_path=path, config=collector.config):
                continue
            plugin.activate()
            from pytest_verdryx.items import EvalSetFile

            report.result.append(EvalSetFile.from_parent(collector, path=path))
    return report


def broken_links(folder: Path, patterns: Sequence[str]) -> list[Path]:
    """Entries of `folder` named like an eval set that are symbolic links to nothing."""
    found = []
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return []
    for path in entries:
        if not any(fnmatch.fnmatch(path.name, pattern) for pattern in patterns):
            continue
        try:
            broken = path.is_symlink() and not path.exists()  # dangling, or a loop (ELOOP)
        except OSError:
            continue
        if broken:
            found.append(path)
    return found


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    plugin = session_of(config)
    if not plugin.on and any(item.get_closest_marker("verdryx") for item in items):
        # A marker added by a conftest's own pytest_collection_modifyitems: on now, after
        # the session object's own call of this hook.
        plugin.activate().split_shard(config, items)
    # After collection, before anything runs: a bad setting or a broken target hook is
    # exit 4 from here.
    plugin.start_late()


# -- the fixture -------------------------------------------------------------------------------


@pytest.fixture
def verdryx(request: pytest.FixtureRequest) -> Iterator[VerdryxCase]:
    """A custom eval case: `verdryx.grade(output)` or `verdryx.record(score, reason=...)`."""
    from pytest_verdryx.fixture import VerdryxCase

    # On already for a marked test (at its collection); an unmarked test may ask too.
    plugin = session_of(request.config).activate_now()
    case = VerdryxCase(request.node, plugin.scoring)
    yield case
