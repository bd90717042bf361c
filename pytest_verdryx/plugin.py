"""pytest entry point (`pytest11`): the options, the marker, the hooks a conftest.py may
implement, and the moment verdryx turns on.

pytest imports this module in every session of an environment where verdryx is installed,
a plain unit-test suite included, so it imports only pytest and the option table. The
per-session object (`session.py`, and with it the core: the evaluation, numpy, the store) is
built and registered only when verdryx is in play (docs/options.md, "When verdryx turns on"):

- at configure time, when the session asks for verdryx itself (a verdryx flag, or a verdryx
  ini key set): a bad value is then exit 4 before anything is collected;
- otherwise at the first eval set file collected, or the first test marked `verdryx`;
- on the xdist controller, which collects nothing: when a worker reports eval set items, a
  verdryx case's report arrives, or a worker's verdryx payload does.

The run id and start exist from configure on (workers must be told them before anything is
collected); the few events the session object needs from before it was registered (failed
collection reports, workers gone down) are kept and handed to it when it is.
"""

from __future__ import annotations

import fnmatch
import uuid
from collections.abc import Generator, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_verdryx.options import add_options, evalset_patterns, explicitly_asked, read_settings
from pytest_verdryx.run_folder import HANDOFF_KEY, remove_run_folder, run_folder
from pytest_verdryx.xdist import PAYLOAD_KEY

if TYPE_CHECKING:
    from pytest_verdryx.fixture import VerdryxCase
    from pytest_verdryx.items import EvalSetFile
    from pytest_verdryx.session import VerdryxSession

__all__ = [
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


class Activation:
    """Whether verdryx is on in this session, and what it needs to know to turn on late.

    A plain class, not a dataclass: building one of those costs every pytest session about
    a millisecond at import."""

    __slots__ = (
        "config",
        "failed_reports",
        "nested",
        "nodes_down",
        "patterns",
        "pending_start",
        "plugin",
        "plugins_at_start",
        "run_id",
        "session",
        "started_at",
    )

    def __init__(
        self, config: pytest.Config, *, run_id: str, started_at: datetime, patterns: tuple[str, ...]
    ) -> None:
        self.config = config
        self.run_id = run_id
        self.started_at = started_at
        self.patterns = patterns
        #: The pytest session, once `pytest_sessionstart` has run...
        self.session: pytest.Session | None = None
        #: ...and the plugins registered then (the conftest.py files read later are not
        #: asked to build the target, as at session start).
        self.plugins_at_start: list[object] = []
        self.plugin: VerdryxSession | None = None
        #: Activated after the session started: the configure-time checks and the session
        #: start's work are still to do (`start_late`).
        self.pending_start = False
        #: Before activation: failed collection reports (under xdist, the workers' too)...
        self.failed_reports: list[pytest.CollectReport] = []
        #: ...and xdist workers gone down without a verdryx payload: (node, error).
        self.nodes_down: list[tuple[Any, object]] = []
        #: Configured while another session of this process runs (pytester's in-process
        #: runs): the process's exit is that other session's business.
        self.nested = False

    @classmethod
    def for_config(cls, config: pytest.Config) -> Activation:
        # A worker takes the controller's run id and start (xdist's workerinput): one run,
        # however many processes score it. Both are cheap to make, whether verdryx turns on
        # or not.
        workerinput = getattr(config, "workerinput", None) or {}
        given = workerinput.get(PAYLOAD_KEY) or {}
        started = given.get("started_at")
        return cls(
            config,
            run_id=given.get("run_id") or str(uuid.uuid4()),
            started_at=datetime.fromisoformat(started) if started else datetime.now(UTC),
            patterns=evalset_patterns(config),
        )

    def is_evalset(self, name: str) -> bool:
        return any(fnmatch.fnmatch(name, pattern) for pattern in self.patterns)

    def activate(self) -> VerdryxSession:
        """The session object, built and registered on first call, with what it missed.
        After the session started, its checks wait for `start_late` (a UsageError raised
        from a collector would be a collection error, not exit 4)."""
        if self.plugin is not None:
            return self.plugin
        from pytest_verdryx.session import VerdryxSession

        config = self.config
        plugin = VerdryxSession(
            config, read_settings(config), run_id=self.run_id, started_at=self.started_at
        )
        self.plugin = plugin
        plugin.nested = self.nested
        plugin.register()
        for report in self.failed_reports:
            plugin.pytest_collectreport(report)
        if plugin.xdist is not None:
            for node, error in self.nodes_down:
                plugin.xdist.pytest_testnodedown(node, error)
        self.failed_reports, self.nodes_down = [], []
        self.pending_start = self.session is not None
        return plugin

    def start_late(self) -> None:
        """For a session object activated after the session started: the checks made at
        configure time otherwise, then the session start's work (the target built)."""
        plugin, session = self.plugin, self.session
        if not self.pending_start or plugin is None or session is None:
            return
        self.pending_start = False
        plugin.check()
        at_start = {id(known) for known in self.plugins_at_start}
        since = [
            known for known in self.config.pluginmanager.get_plugins() if id(known) not in at_start
        ]
        plugin.joined(session, read_since=since)

    def activate_now(self) -> VerdryxSession:
        """Activated and started at once, outside collection: a UsageError from the xdist
        controller's hooks ends the session with exit 4; from the fixture, it is the error
        of the test that asked."""
        plugin = self.activate()
        self.start_late()
        return plugin


_ACTIVATION = pytest.StashKey[Activation]()


def activation(config: pytest.Config) -> Activation:
    return config.stash[_ACTIVATION]


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_verdryx import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


#: Sessions configured and not yet unconfigured in this process.
_open_sessions = [0]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    state = config.stash[_ACTIVATION] = Activation.for_config(config)
    state.nested = _open_sessions[0] > 0
    _open_sessions[0] += 1
    if explicitly_asked(config):
        # Asked for by name: a typo or an unknown baseline is exit 4 now, before collection.
        state.activate().check()
        return
    on_controller = getattr(config, "workerinput", None) is None
    if on_controller and config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(ControllerWatch(state), "verdryx-watch")
    else:
        config.pluginmanager.register(Watch(state), "verdryx-watch")


def pytest_sessionstart(session: pytest.Session) -> None:
    state = activation(session.config)
    state.session = session
    # Kept (not only their ids), so no id is reused by another object.
    state.plugins_at_start = list(session.config.pluginmanager.get_plugins())


def pytest_unconfigure(config: pytest.Config) -> None:
    _open_sessions[0] = max(0, _open_sessions[0] - 1)
    state = config.stash.get(_ACTIVATION, None)
    if state is not None and state.plugin is not None:
        state.plugin.close()
    remove_run_folder(config)


# -- collection: the first eval case turns verdryx on -------------------------------------------


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> EvalSetFile | None:
    state = activation(parent.config)
    if not state.is_evalset(file_path.name):
        return None
    state.activate()
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
        state = activation(collector.config)
        for path in broken_links(collector.path, state.patterns):
            if collector.ihook.pytest_ignore_collect(collection_path=path, config=collector.config):
                continue
            state.activate()
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


def pytest_itemcollected(item: pytest.Item) -> None:
    state = activation(item.config)
    if state.plugin is None and item.get_closest_marker("verdryx") is not None:
        # This hook call reaches the session object only from the next item on: it records
        # this one's case key itself (a known case, before -k deselects any).
        state.activate().pytest_itemcollected(item)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    state = activation(config)
    if state.plugin is None and any(item.get_closest_marker("verdryx") for item in items):
        # A marker added by a conftest's own pytest_collection_modifyitems.
        state.activate().pytest_collection_modifyitems(config, items)
    # After collection, before anything runs: a bad setting or a broken target hook is
    # exit 4 from here.
    state.start_late()


# -- until verdryx is on: what the session object would miss --------------------------------


class Watch:
    """Registered while verdryx is off (a hook of the module could not reach the config)."""

    def __init__(self, state: Activation) -> None:
        self.state = state

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        # A file that failed to collect before the first eval case still makes the run
        # incomplete. Once on, the session object records them itself.
        if report.failed and self.state.plugin is None:
            self.state.failed_reports.append(report)


class ControllerWatch(Watch):
    """A `Watch` with xdist's hooks, where verdryx is not on yet: the xdist controller
    collects nothing, so the workers' reports turn it on (registered only when xdist is
    loaded, so a session without it never sees an unknown hook). Once verdryx is on, the
    session's own `XdistHooks` take over and these do nothing."""

    def pytest_configure_node(self, node: Any) -> None:
        if self.state.plugin is None:  # else XdistHooks sends the controller's state
            node.workerinput[PAYLOAD_KEY] = {
                "run_id": self.state.run_id,
                "started_at": self.state.started_at.isoformat(),
                "baseline": None,  # named only explicitly, which activates at configure
                HANDOFF_KEY: str(run_folder(node.config).handoff),
            }

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        state = self.state
        if state.plugin is not None:
            return
        if any(state.is_evalset(Path(nodeid.partition("::")[0]).name) for nodeid in ids):
            plugin = state.activate_now()
            # Registered during this hook call, the session's XdistHooks miss it.
            if plugin.xdist is not None:
                plugin.xdist.pytest_xdist_node_collection_finished(node, ids)

    def pytest_testnodedown(self, node: Any, error: object) -> None:
        state = self.state
        if state.plugin is not None:
            return
        if getattr(node, "workeroutput", {}).get(PAYLOAD_KEY) is None:
            state.nodes_down.append((node, error))
            return
        plugin = state.activate_now()
        if plugin.xdist is not None:
            plugin.xdist.pytest_testnodedown(node, error)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """A verdryx case's report (a marked test's: nothing in its node id says so): on
        before the terminal shows it, so `-v` shows its score."""
        state = self.state
        if state.plugin is not None:
            return
        if not any(name == "verdryx.grader" for name, _ in report.user_properties):
            return
        plugin = state.activate_now()
        plugin.pytest_runtest_logreport(report)
        if plugin.ci is not None:
            plugin.ci.pytest_runtest_logreport(report)


# -- the fixture -------------------------------------------------------------------------------


@pytest.fixture
def verdryx(request: pytest.FixtureRequest) -> Iterator[VerdryxCase]:
    """A custom eval case: `verdryx.grade(output)` or `verdryx.record(score, reason=...)`."""
    from pytest_verdryx.fixture import VerdryxCase

    # On already for a marked test (at its collection); an unmarked test may ask too.
    plugin = activation(request.config).activate_now()
    case = VerdryxCase(request.node, plugin.scoring)
    yield case
