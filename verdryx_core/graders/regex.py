"""`regex`: the expected pattern searched anywhere in the output, in bounded time.

The contract is stdlib `re.search` with no flags. Matching uses the `regex` package in
VERSION0 mode, which reads patterns as `re` does and, unlike `re`, can stop a catastrophically
backtracking search, so one bad pattern cannot hang CI. `regex` accepts more syntax than `re`
(`\\p{L}`, `\\K`, recursion, POSIX classes), so a pattern must also compile under `re`, without
`re`'s ambiguity warning, to be accepted: what passes here means what it means in `re`.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, ClassVar, Final, final

import regex

from verdryx_core.cases import EvalCase
from verdryx_core.graders.base import Grade, GradeContext
from verdryx_core.graders.case_rules import CaseProblem, require_expected, text_expectation

__all__ = ["DEFAULT_REGEX_TIMEOUT_S", "RegexGrader", "compile_pattern"]

DEFAULT_REGEX_TIMEOUT_S: Final = 1.0


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> regex.Pattern[str]:
    """The pattern compiled for matching; ValueError `not a valid regex: ...` when stdlib `re`
    rejects it, or reads it ambiguously (`[[:alpha:]]` is a POSIX class to `regex` but a plain
    set to `re`), or `regex` cannot compile it."""
    try:
        with warnings.catch_warnings():
            # re warns (FutureWarning) where its reading of a set may change; regex already
            # reads it the other way, so the two would disagree on the same text.
            warnings.simplefilter("error", FutureWarning)
            re.compile(pattern)
    except FutureWarning as exc:
        raise ValueError(
            f"not a valid regex: {pattern!r} is ambiguous ({exc}); escape '[' inside a "
            "character class as '\\['"
        ) from None
    except re.error as exc:
        raise ValueError(f"not a valid regex: {pattern!r}: {exc}") from None
    try:
        return regex.compile(pattern, flags=regex.VERSION0)
    except regex.error as exc:  # pragma: no cover - re accepted it; kept as a guard
        raise ValueError(f"not a valid regex: {pattern!r}: {exc}") from None


@final
class RegexGrader:
    kind: ClassVar[str] = "regex"

    def __init__(self, *, timeout_s: float = DEFAULT_REGEX_TIMEOUT_S) -> None:
        self.timeout_s = timeout_s

    @staticmethod
    def check_case(case: Mapping[str, Any]) -> None:
        """The pattern compiles, and some output fails it."""
        from verdryx_core.graders.always_matches import matches_anything  # only at load

        require_expected(case, "regex")
        text_expectation(case, "regex")
        try:
            pattern = compile_pattern(case["expected"])
        except ValueError as exc:
            raise CaseProblem("expected", str(exc)) from None
        if matches_anything(pattern):
            raise CaseProblem(
                "expected",
                f"the pattern {case['expected']!r} matches every output (even an empty one), "
                "so the case could never fail; give the pattern the output must match",
            )

    def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Grade:
        if case.expected is None:
            raise ValueError(
                f"grader 'regex' requires case.expected (the pattern); case {case.id!r} has none"
            )
        compiled = compile_pattern(case.expected)
        try:
            found = compiled.search(str(output), timeout=self.timeout_s)
        except TimeoutError:
            # The pattern is the eval set's, the text is the agent's: an output that makes
            # the search run out of time is the output's failure, never unmeasured.
            return Grade.output_failure(
                f"regex {case.expected!r} did not finish within {self.timeout_s:g}s on this "
                "output (catastrophic backtracking): scored 0; simplify the pattern"
            )
        return Grade(value=1.0 if found is not None else 0.0)
