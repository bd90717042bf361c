"""A package's public names imported on first use (PEP 562), for `verdryx_core`,
`verdryx_core.face` and the core's packages that re-export many names: importing one costs
nothing until a name is asked for."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


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
