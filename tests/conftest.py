"""Fixtures shared by the test modules: the fake Anthropic server the real SDK talks to."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

import pytest
from fakes.anthropic_server import FakeAnthropic

# The suite starts hundreds of Python processes (pytester subprocesses, xdist workers,
# benchmarks). A shell with PYTHONDONTWRITEBYTECODE set (some sandboxes set it) would make
# each one compile every module it imports, and the install compiles nothing up front (uv):
# bytecode is cached here as on a user's machine, for this process and every child.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# Loaded before any in-process pytest session: pytester drops the modules an inner session
# imported when it ends, and the SDKs' HTTP client (httpx2) imports its core (httpcore2) on
# first use while keeping a table of that core's exception classes for good. A core imported
# inside an inner session and dropped after it is imported afresh by the next test, whose
# timeouts then match no entry of the table and escape the SDK's retries unwrapped.
with contextlib.suppress(ImportError):
    import httpcore2  # noqa: F401

# The same forgetting makes every in-process session that turns verdryx on import its machinery
# afresh: ~0.3 s of CPU a session, most of a small session's cost, over hundreds of sessions.
# Imported once here, they stay, as in a user's process (numpy's C extension, which they
# import, cannot be loaded twice in one process anyway).
import numpy  # noqa: E402, F401

import pytest_verdryx.items  # noqa: E402
import pytest_verdryx.session  # noqa: E402, F401

#: Plugins of the dev environment that no pytest session the tests drive uses. Each session
#: started in a process of its own (a subprocess, an xdist worker, a benchmark's session) would
#: import them: about 1 s of CPU together, most of a small session's cost.
_UNUSED_BY_INNER_SESSIONS = "-p no:schemathesis -p no:hypothesispytest -p no:anyio"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    # Set while the test body runs, after every fixture (pytester clears PYTEST_ADDOPTS when
    # it is made; asking for it earlier from a fixture would change the fixtures' order).
    fixtures = getattr(item, "fixturenames", ())
    if "pytester" not in fixtures and "benchmark" not in item.path.name:
        return (yield)
    before = os.environ.get("PYTEST_ADDOPTS")
    os.environ["PYTEST_ADDOPTS"] = _UNUSED_BY_INNER_SESSIONS
    try:
        return (yield)
    finally:
        if before is None:
            os.environ.pop("PYTEST_ADDOPTS", None)
        else:
            os.environ["PYTEST_ADDOPTS"] = before


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
