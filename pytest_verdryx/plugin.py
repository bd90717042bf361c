"""pytest entry point (`pytest11`): options, configure, collection, the marker, the fixture.

Module-level hooks only wire things up; the per-session object in `hooks.py` does the work.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_verdryx.fixture import VerdryxCase
from pytest_verdryx.hooks import VerdryxPlugin
from pytest_verdryx.items import EvalSetFile
from pytest_verdryx.options import add_options, read_settings
from pytest_verdryx.scoring import scoring_of

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

_PLUGIN_KEY = pytest.StashKey[VerdryxPlugin]()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    plugin = VerdryxPlugin(config, read_settings(config))
    config.stash[_PLUGIN_KEY] = plugin
    plugin.register()
    plugin.check()


def pytest_unconfigure(config: pytest.Config) -> None:
    plugin = config.stash.get(_PLUGIN_KEY, None)
    if plugin is not None:
        plugin.close()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> EvalSetFile | None:
    patterns = scoring_of(parent.config).settings.patterns
    if any(fnmatch.fnmatch(file_path.name, pattern) for pattern in patterns):
        return EvalSetFile.from_parent(parent, path=file_path)
    return None


@pytest.fixture
def verdryx(request: pytest.FixtureRequest) -> Iterator[VerdryxCase]:
    """A custom eval case: `verdryx.grade(output)` or `verdryx.record(score, reason=...)`."""
    case = VerdryxCase(request.node, scoring_of(request.config))
    yield case
