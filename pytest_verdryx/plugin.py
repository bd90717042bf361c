"""pytest entry point (`pytest11`): options, configure, collection, the marker, the fixture.

Module-level hooks only wire things up; the per-session object in `session.py` does the work.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_verdryx.fixture import VerdryxCase
from pytest_verdryx.items import EvalSetFile
from pytest_verdryx.options import add_options, read_settings
from pytest_verdryx.session import SESSION_KEY, VerdryxSession, session_of

__all__ = [
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


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    session = VerdryxSession(config, read_settings(config))
    config.stash[SESSION_KEY] = session
    config.pluginmanager.register(session, "verdryx-session")
    if config.pluginmanager.hasplugin("xdist"):
        from pytest_verdryx.xdist import XdistHooks

        config.pluginmanager.register(XdistHooks(session), "verdryx-xdist")
    from pytest_verdryx import status

    config.pluginmanager.register(status, "verdryx-status")
    if not hasattr(config, "workerinput"):  # the controller, or a run without xdist
        from pytest_verdryx.ci import CiOutputs

        config.pluginmanager.register(CiOutputs(config), "verdryx-ci")
    session.check_wires()
    session.load_baseline()


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(SESSION_KEY, None)
    if session is not None:
        session.close_store()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> EvalSetFile | None:
    patterns = session_of(parent.config).settings.patterns
    if any(fnmatch.fnmatch(file_path.name, pattern) for pattern in patterns):
        return EvalSetFile.from_parent(parent, path=file_path)
    return None


@pytest.fixture
def verdryx(request: pytest.FixtureRequest) -> Iterator[VerdryxCase]:
    """A custom eval case: `verdryx.grade(output)` or `verdryx.record(score, reason=...)`."""
    case = VerdryxCase(request.node, session_of(request.config))
    yield case
