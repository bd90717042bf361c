"""The installed version of verdryx (stored with every run and printed by `verdryx version`)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__"]

try:
    __version__ = version("verdryx")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"
