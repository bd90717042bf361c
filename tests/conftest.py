"""Fixtures shared by the test modules: the fake Anthropic server the real SDK talks to."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fakes.anthropic_server import FakeAnthropic


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
