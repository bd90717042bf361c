"""An eval case's failure report: the whole text in the normal report, one line for `--tb=line`.

pytest renders a report's `longrepr` with `toterminal`, and for `--tb=line` (and the JUnit
`message` attribute, and `-r` summary lines) reads `longrepr.reprcrash`: its `str()` is the
`path:line: message` line and its `message` the one-line reason. This mirrors the shape of
pytest's own `ReprFileLocation` without importing pytest's private modules."""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["CaseCrash", "CaseFailureRepr"]


class _Writer(Protocol):
    def line(self, s: str = "", **markup: bool) -> None: ...


class CaseCrash:
    """Where a case failed and why, in one line (`path:line: message`)."""

    def __init__(self, path: str, lineno: int, message: str) -> None:
        self.path = path
        self.lineno = lineno
        # Only the first line: the crash line is one line whatever the report holds.
        self.message = message.split("\n", 1)[0]

    def toterminal(self, tw: Any) -> None:
        tw.line(str(self))

    def __str__(self) -> str:
        return f"{self.path}:{self.lineno}: {self.message}"


class CaseFailureRepr:
    """A case's full failure text, with its crash line for the one-line views."""

    def __init__(self, text: str, crash: CaseCrash, *, terse: bool = False) -> None:
        self.text = text
        self.reprcrash = crash
        # `--tb=line`: pytest prints the crash line after the report; the report adds nothing.
        self.terse = terse

    def toterminal(self, tw: _Writer) -> None:
        if self.terse:
            return
        for line in self.text.split("\n"):
            tw.line(line)

    def __str__(self) -> str:
        return self.text
