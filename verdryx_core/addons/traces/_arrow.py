"""Lazy access to pyarrow: installing verdryx without the `traces` extra costs nothing."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from verdryx_core.addons.errors import TracesExtraMissing

__all__ = ["INSTALL_HINT", "require_pyarrow"]

INSTALL_HINT = "pip install 'verdryx[traces]'"


def require_pyarrow(what: str) -> tuple[ModuleType, Any, Any]:
    """(pyarrow, pyarrow.compute, pyarrow.parquet), or an error saying how to get them."""
    try:
        import pyarrow
        import pyarrow.compute
        import pyarrow.parquet
    except ImportError as exc:
        raise TracesExtraMissing(
            f"{what} needs pyarrow, which is not installed ({exc}); "
            f"install the traces extra: {INSTALL_HINT}"
        ) from exc
    return pyarrow, pyarrow.compute, pyarrow.parquet
