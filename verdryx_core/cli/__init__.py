"""The `verdryx` command line: a face on the core, like the pytest plugin (docs/cli.md)."""

from __future__ import annotations

from verdryx_core.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
