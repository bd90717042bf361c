"""pytest entry point (`pytest11`): options, configure, collection, the marker, the fixture.

Module-level hooks only wire things up; the per-session object in `session.py` does the work.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Generator, Iterator, Sequence
from pathlib import Path

import pytest

from pytest_verdryx.fixture import VerdryxCase
from pytest_verdryx.items import EvalSetFile
from pytest_verdryx.options import add_options, read_settings
from pytest_verdryx.scoring import scoring_of
from pytest_verdryx.session import VerdryxPlugin

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

_PLUGIN_KEY = pytest.StashKey[VerdryxPlugin]()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_verdryx import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


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


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """pytest walks a folder with `is_file()`, which is False for a dangling symbolic link or
    a loop of them: such an eval set would vanish from the run without a word. It becomes a
    collector here, whose read fails as a one-line collection error naming the link."""
    report = yield
    if isinstance(collector, pytest.Dir | pytest.Package) and report.passed:
        patterns = scoring_of(collector.config).settings.patterns
        for path in broken_links(collector.path, patterns):
            if collector.ihook.pytest_ignore_collect(collection_path=path, config=collector.config):
                continue
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


@pytest.fixture
def verdryx(request: pytest.FixtureRequest) -> Iterator[VerdryxCase]:
    """A custom eval case: `verdryx.grade(output)` or `verdryx.record(score, reason=...)`."""
    case = VerdryxCase(request.node, scoring_of(request.config))
    yield case
