"""Fixtures shared by the test modules: the fake Anthropic server the real SDK talks to."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fakes.anthropic_server import FakeAnthropic

#: Plugins of the dev environment that no pytest session the tests drive uses. Each session
#: started in a process of its own (a subprocess, an xdist worker, a benchmark's session) would
#: import them: about 1 s of CPU together, most of a small session's cost.
_UNUSED_BY_INNER_SESSIONS = "-p no:schemathesis -p no:hypothesispytest -p no:anyio"


@pytest.fixture(autouse=True)
def _inner_sessions_skip_unused_plugins(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    if "pytester" in request.fixturenames:
        request.getfixturevalue("pytester")  # it clears PYTEST_ADDOPTS: set it after
    elif "benchmark" not in request.node.path.name:
        return
    monkeypatch.setenv("PYTEST_ADDOPTS", _UNUSED_BY_INNER_SESSIONS)


@pytest.fixture
def server() -> Iterator[FakeAnthropic]:
    """A fake Messages API on 127.0.0.1; every request the SDK sent must have the right shape."""
    with FakeAnthropic() as fake:
        yield fake
        assert fake.violations == []


@pytest.fixture
def anthropic_env(server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> FakeAnthropic:
    """`server`, with ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY pointing at it, as a user's
    environment would (for pytest sessions the tests run)."""
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    return server
