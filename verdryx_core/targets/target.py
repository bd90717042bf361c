"""A loaded target: the callable, the name it was loaded by, whether it is `async def`, and
what it is called with: the `TargetCase`, or, for a plain function whose one parameter is
annotated `str`, the case's text (docs/targets.md, "A plain function")."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verdryx_core.targets.case import TargetCase
from verdryx_core.targets.loader import load_target

__all__ = ["Target"]


def _is_async(function: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(function):
        return True
    # An object whose __call__ is `async def` (inspect does not look through instances).
    if inspect.isfunction(function) or inspect.ismethod(function):
        return False
    return inspect.iscoroutinefunction(type(function).__call__)


def _takes_text(function: Callable[..., Any]) -> bool:
    """Whether `function` has one required positional parameter, annotated `str` (the
    annotation read as written when it names something not importable here)."""
    try:
        signature = inspect.signature(function, eval_str=True)
    except (NameError, SyntaxError, TypeError):
        try:
            signature = inspect.signature(function)
        except (TypeError, ValueError):
            return False
    except ValueError:
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    required = [
        parameter
        for parameter in signature.parameters.values()
        if parameter.kind in positional and parameter.default is inspect.Parameter.empty
    ]
    return len(required) == 1 and required[0].annotation in (str, "str")


@dataclass(frozen=True, slots=True)
class Target:
    """`spec` names the target in every message (`module:callable`, or the repr of a
    callable handed over directly). `takes_text`: it is called with the case's text, not
    the `TargetCase`."""

    spec: str
    function: Callable[..., Any]
    is_async: bool
    takes_text: bool = False
    #: What else its results depend on, for the cache key: a dialogue's user
    #: (verdryx_core.targets.dialogue); None for a target called once per case.
    variant: Mapping[str, Any] | None = None

    def argument(self, case: TargetCase) -> Any:
        """What one call passes: the case, or its text for a `str` target."""
        return case.user_text() if self.takes_text else case

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
        return cls(spec, function, _is_async(function), _takes_text(function))
