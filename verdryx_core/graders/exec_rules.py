"""The load-time rules of an `exec` case (or check): it runs `tests` or a `command`, exactly
one, within a timeout; a test file named by path is read from the case's workspace
(docs/workspaces-and-execution.md)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from verdryx_core.graders.case_rules import CaseProblem, text_expectation

__all__ = ["check_exec_case", "is_test_path"]


def is_test_path(tests: str) -> bool:
    """Whether `tests` names a file in the workspace (one line ending in .py) rather than
    holding the test code itself."""
    return "\n" not in tests and tests.strip().endswith(".py")


def check_exec_case(case: Mapping[str, Any]) -> None:
    """An exec case (or a check, given its case's workspace) runs `tests` or a `command`."""
    text_expectation(case, "exec")
    given = [name for name in ("tests", "command") if name in case]
    if not given:
        raise CaseProblem(
            "tests",
            "grader 'exec' requires 'tests' (Python test code, or a .py file in the "
            "workspace) or 'command' (an argv list)",
        )
    if len(given) > 1:
        raise CaseProblem("command", "give one of 'tests' and 'command', not both")
    if "tests" in case:
        tests = case["tests"]
        if not isinstance(tests, str) or not tests.strip():
            raise CaseProblem("tests", "expected non-empty text: test code, or a .py path")
        if is_test_path(tests):
            if "workspace" not in case:
                raise CaseProblem(
                    "tests",
                    f"{tests.strip()!r} names a test file, and the case has no 'workspace' to "
                    "read it from; give the test code itself, or a workspace holding the file",
                )
            if Path(tests.strip()).is_absolute() or ".." in Path(tests.strip()).parts:
                raise CaseProblem("tests", "a test file is a path inside the workspace")
    command = case.get("command")
    if command is not None and (
        not isinstance(command, list)
        or not command
        or not all(isinstance(part, str) and part for part in command)
    ):
        raise CaseProblem("command", "expected a non-empty list of non-empty strings (argv)")
    timeout = case.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or not 0 < timeout <= 3600
    ):
        raise CaseProblem("timeout", f"expected seconds in (0, 3600], got {timeout!r}")
