"""Turn `module:callable` into the callable (docs/targets.md, "Naming a target").

The module is imported the way pytest imports a conftest's neighbours: from `sys.path`, with
the rootdir put in front of it when the caller names one, so `my_agent:run` finds
`<rootdir>/my_agent.py` without an install. Every failure is one line naming the spec.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from verdryx_core.errors import TargetLoadError

__all__ = ["load_target", "parse_spec"]

_MODULE: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_FORM: Final = "expected module:callable, e.g. my_agent:run or my_pkg.agents:Agent.run"


def parse_spec(spec: str) -> tuple[str, tuple[str, ...]]:
    """(`module`, attribute path) of `module:attr[.attr...]`."""
    module, sep, attribute = spec.strip().partition(":")
    if not sep or not _MODULE.match(module) or not _MODULE.match(attribute):
        raise TargetLoadError(f"target {spec!r} is not a target name; {_FORM}")
    return module, tuple(attribute.split("."))


def _import(spec: str, module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        # Only "the named module (or a package on its path) is missing" means a bad spec; a
        # module that exists but imports something missing says what it imports.
        missing = exc.name or ""
        if missing == module or module.startswith(missing + "."):
            raise TargetLoadError(
                f"target {spec!r}: no module named {module!r} on sys.path; put it under the "
                "rootdir or install it, and check the spelling"
            ) from None
        raise TargetLoadError(
            f"target {spec!r}: importing {module!r} failed: it imports {missing!r}, which is "
            "not installed"
        ) from None
    except Exception as exc:
        raise TargetLoadError(
            f"target {spec!r}: importing {module!r} raised {_one_line(exc)}"
        ) from None


def load_target(spec: str, *, rootdir: str | Path | None = None) -> Callable[..., Any]:
    """The callable `spec` names; `rootdir`, when given, is importable first."""
    module_name, attributes = parse_spec(spec)
    if rootdir is not None:
        root = str(Path(rootdir).resolve())
        if root not in sys.path:
            sys.path.insert(0, root)
    found: Any = _import(spec, module_name)
    where = module_name
    for name in attributes:
        if not hasattr(found, name):
            origin = getattr(sys.modules.get(module_name), "__file__", None) or module_name
            raise TargetLoadError(
                f"target {spec!r}: {where!r} has no attribute {name!r} (module file {origin})"
            )
        found = getattr(found, name)
        where = f"{where}.{name}" if where != module_name else f"{module_name}:{name}"
    if not callable(found):
        raise TargetLoadError(
            f"target {spec!r} is a {type(found).__name__}, not callable; name a function, "
            "an async function or an object with __call__"
        )
    return found


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
