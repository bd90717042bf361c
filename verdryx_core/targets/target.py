"""A loaded target: the callable, the name it was loaded by, and whether it is `async def`."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verdryx_core.targets.loader import load_target

__all__ = ["Target"]


def _is_async(function: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(function):
        return True
    # An object whose __call__ is `async def` (inspect does not look through instances).
    if inspect.isfunction(function) or inspect.ismethod(function):
        return False
    return inspect.iscoroutinefunction(type(function).__call__)


@dataclass(frozen=True, slots=True)
class Target:
    """`spec` names the target in every message (`module:callable`, or the repr of a
    callable handed over directly)."""

    spec: str
    function: Callable[..., Any]
    is_async: bool

    @classmethod
    def load(cls, spec: str, *, rootdir: str | Path | None = None) -> Target:
        """Import `module:callable`; a TargetLoadError of one line when that fails."""
        return cls.of(load_target(spec, rootdir=rootdir), spec=spec.strip())

    @classmethod
    def of(cls, function: Callable[..., Any], *, spec: str | None = None) -> Target:
        """Wrap a callable built in code (a conftest hook, a test)."""
        if spec is None:
            module = getattr(function, "__module__", None)
            name = getattr(function, "__qualname__", None)
            spec = f"{module}:{name}" if module and name else repr(function)
        return cls(spec, function, _is_async(function))
