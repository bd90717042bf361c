"""A package's public names imported on first use (PEP 562), for `verdryx_core`,
`verdryx_core.face` and the core's packages that re-export many names: importing one costs
nothing until a name is asked for; and the old names of renamed ones, still resolvable with a
DeprecationWarning (docs/python-api.md, "Renamed")."""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["first_use", "renamed", "warn_renamed"]


def first_use(module: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The `__getattr__` of `module`: a name of `homes` (name -> the module defining it) is
    imported when first asked for and kept in `module`, so later lookups skip this."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[module], name, value)
        return value

    return __getattr__


def warn_renamed(old: str, new: str) -> None:
    """Say that `old` is now `new` (a DeprecationWarning at the caller's caller)."""
    warnings.warn(
        f"{old} is renamed {new}; {old} will be removed (docs/python-api.md, 'Renamed')",
        DeprecationWarning,
        stacklevel=3,
    )


def renamed(
    module: str, names: Mapping[str, str], then: Callable[[str], Any] | None = None
) -> Callable[[str], Any]:
    """The `__getattr__` of `module` keeping its renamed names (old -> new) resolvable: an
    old name warns and answers the new one's value, each time it is asked for; any other
    name goes to `then` (a `first_use`), else is an AttributeError."""

    def __getattr__(name: str) -> Any:
        new = names.get(name)
        if new is not None:
            warn_renamed(f"{module}.{name}", new)
            return getattr(sys.modules[module], new)
        if then is not None:
            return then(name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
