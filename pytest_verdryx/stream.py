"""A text stream onto pytest's terminal writer, for the progress line of calls made ahead."""

from __future__ import annotations

import sys

import pytest

__all__ = ["TerminalStream"]


class TerminalStream:
    def __init__(self, config: pytest.Config) -> None:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        self._writer = getattr(reporter, "_tw", None)
        self._fallback = sys.stderr

    def write(self, text: str) -> int:
        if self._writer is not None:
            self._writer.write(text, flush=True)
        else:
            self._fallback.write(text)
        return len(text)

    def flush(self) -> None:
        if self._writer is None:
            self._fallback.flush()

    def isatty(self) -> bool:
        # The file, not `hasmarkup`: `--color=yes` in a CI log must still get plain lines.
        file = getattr(self._writer, "_file", None) if self._writer is not None else None
        target = file if file is not None else self._fallback
        return bool(getattr(target, "isatty", lambda: False)())
