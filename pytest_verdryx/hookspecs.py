"""The hooks verdryx offers a `conftest.py` (docs/targets.md, "Building the target in
conftest.py")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

__all__ = ["pytest_verdryx_target"]


@pytest.hookspec(firstresult=True)
def pytest_verdryx_target(config: pytest.Config) -> Callable[..., Any] | None:
    """Build the agent under test once, at session start, and return the callable verdryx
    calls with each case (a function, an `async def` function, a bound method or an object
    with `__call__`); None leaves the target to `--verdryx-target`.

    Runs in every process of the session (under xdist: the controller and each worker).
    Release what it set up with `config.add_cleanup(...)`."""
