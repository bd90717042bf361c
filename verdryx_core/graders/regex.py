"""`regex`: the expected pattern searched anywhere in the output, in bounded time.

The `regex` package in VERSION0 mode reads patterns as stdlib `re` does, and unlike `re`
it can stop a catastrophically backtracking search, so one bad pattern cannot hang CI.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, ClassVar, Final, final

import regex

from verdryx_core.graders.base import Grade, GradeContext
from verdryx_core.model import EvalCase

__all__ = ["DEFAULT_REGEX_TIMEOUT_S", "RegexGrader"]

DEFAULT_REGEX_TIMEOUT_S: Final = 1.0


@lru_cache(maxsize=4096)
def _compiled(pattern: str) -> regex.Pattern[str]:
    return regex.compile(pattern, flags=regex.VERSION0)


@final
class RegexGrader:
    kind: ClassVar[str] = "regex"

    def __init__(self, *, timeout_s: float = DEFAULT_REGEX_TIMEOUT_S) -> None:
        self.timeout_s = timeout_s

    def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Grade:
        assert case.expected is not None  # guaranteed by eval set validation
        try:
            found = _compiled(case.expected).search(str(output), timeout=self.timeout_s)
        except TimeoutError:
            return Grade.unmeasured_because(
                f"regex {case.expected!r} did not finish within {self.timeout_s:g}s "
                "(catastrophic backtracking); simplify the pattern"
            )
        return Grade(value=1.0 if found else 0.0)
