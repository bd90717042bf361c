"""An eval case's failure report: the whole text in the normal report, one line for `--tb=line`.

pytest renders a report's `longrepr` with `toterminal`, and for `--tb=line` (and the JUnit
`message` attribute, and `-r` summary lines) reads `longrepr.reprcrash`: its `str()` is the
`path:line: message` line and its `message` the one-line reason. This mirrors the shape of
pytest's own `ReprFileLocation` without importing pytest's private modules."""

from __future__ import annotations

import sys
from collections.abc import Generator
from typing import Any, Protocol

import pytest

__all__ = ["CaseCrash", "CaseFailureRepr", "CrashOverXdist"]


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


_KEY = "verdryx_crash"


class CrashOverXdist:
    """Carries a case's crash line from an xdist worker to the controller: pytest serializes
    a longrepr without a traceback as its text alone, which would lose the `--tb=line` line."""

    @pytest.hookimpl(wrapper=True)
    def pytest_report_to_serializable(
        self, report: pytest.TestReport
    ) -> Generator[None, dict[str, Any] | None, dict[str, Any] | None]:
        data = yield
        longrepr = getattr(report, "longrepr", None)
        if isinstance(data, dict) and isinstance(longrepr, CaseFailureRepr):
            crash = longrepr.reprcrash
            data[_KEY] = {
                "path": crash.path,
                "lineno": crash.lineno,
                "message": crash.message,
                "terse": longrepr.terse,
            }
        return data

    @pytest.hookimpl(wrapper=True)
    def pytest_report_from_serializable(self, data: dict[str, Any]) -> Generator[None, Any, Any]:
        report = yield
        properties = getattr(report, "user_properties", None)
        if properties:
            # Each report arrives with its own copies of the same few names and values
            # ("verdryx.grader", "exact", "1"): shared, the controller holds them once.
            report.user_properties = [_shared(pair) for pair in properties]
        crash = data.get(_KEY)
        if isinstance(crash, dict) and isinstance(getattr(report, "longrepr", None), str):
            report.longrepr = CaseFailureRepr(
                report.longrepr,
                CaseCrash(str(crash["path"]), int(crash["lineno"]), str(crash["message"])),
                terse=bool(crash.get("terse")),
            )
        return report


#: The (name, value) properties seen so far, each held once however many reports carry it.
_PAIRS: dict[tuple[str, str], tuple[str, str]] = {}
_MAX_PAIRS = 4096


def _shared(pair: Any) -> Any:
    """A (name, value) property shared with every report carrying the same one (short
    values only: a long value is most likely unique)."""
    if isinstance(pair, (tuple, list)) and len(pair) == 2:
        name, value = pair
        if isinstance(name, str) and isinstance(value, str) and len(value) <= 32:
            key = (name, value)
            shared = _PAIRS.get(key)
            if shared is None:
                shared = (sys.intern(name), sys.intern(value))
                if len(_PAIRS) < _MAX_PAIRS:
                    _PAIRS[shared] = shared
            return shared
    return pair
