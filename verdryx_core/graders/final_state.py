"""`final_state`: the end state a target reports (its order database, say) equals the one
the case expects (docs/scenarios.md, "Simulated users").

Compared as tau2 compares databases: the two values' canonical JSON texts are equal (keys
sorted, a float with an integral value written as the integer), so 1.0 or 0.0 and nothing
between. A difference is told path by path in the reason (`users.u1.balance: expected 10,
got 0`), the first few of them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar, Final, final

from verdryx_core.cases import EvalCase
from verdryx_core.graders.base import Grade, GradeContext
from verdryx_core.graders.case_rules import CaseProblem, json_text, require_expected
from verdryx_core.untrusted.json_input import parse_json

__all__ = ["FinalStateGrader", "canonical_state", "state_differences"]

#: Differences named in a reason; the count of the rest follows.
_SHOWN: Final = 5
_VALUE_PREVIEW: Final = 60


def _canonical(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(key): _canonical(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(item) for item in value]
    return value


def canonical_state(value: Any) -> str:
    """The canonical JSON text two states are compared by."""
    return json.dumps(_canonical(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _shown(value: Any) -> str:
    text = canonical_state(value)
    return text if len(text) <= _VALUE_PREVIEW else text[: _VALUE_PREVIEW - 3] + "..."


def state_differences(expected: Any, got: Any, path: str = "") -> list[str]:
    """Where `got` differs from `expected`, one line per differing path (objects walked key
    by key, lists position by position when their lengths agree)."""
    here = path or "(the state)"
    if isinstance(expected, Mapping) and isinstance(got, Mapping):
        lines: list[str] = []
        for key in sorted(set(expected) | set(got), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in got:
                lines.append(f"{where}: missing (expected {_shown(expected[key])})")
            elif key not in expected:
                lines.append(f"{where}: unexpected (got {_shown(got[key])})")
            else:
                lines.extend(state_differences(expected[key], got[key], where))
        return lines
    if isinstance(expected, list) and isinstance(got, list) and len(expected) == len(got):
        lines = []
        for index, (want, have) in enumerate(zip(expected, got, strict=True)):
            lines.extend(state_differences(want, have, f"{path}.{index}" if path else str(index)))
        return lines
    if canonical_state(expected) == canonical_state(got):
        return []
    return [f"{here}: expected {_shown(expected)}, got {_shown(got)}"]


@final
class FinalStateGrader:
    kind: ClassVar[str] = "final_state"
    #: A state is right or wrong: it passes only when equal.
    default_min_score: ClassVar[float] = 1.0

    @staticmethod
    def check_case(case: dict[str, Any]) -> None:
        """The expectation is any JSON value, the end state (a string: its JSON text), kept
        as its JSON text."""
        require_expected(case, "final_state")
        expected = case["expected"]
        if expected is None:
            return
        if isinstance(expected, str):
            try:
                expected = parse_json(expected, unique_keys=True)
            except ValueError as exc:
                raise CaseProblem(
                    "expected",
                    "a string expectation of grader 'final_state' is JSON text (a CSV cell "
                    f"is text), and this is not ({exc})",
                ) from None
        case["expected"] = json_text(expected)

    def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Grade:
        if output is None:
            return Grade(
                value=0.0,
                reason="the target reported no state (a result's 'state' is what is compared)",
            )
        expected = json.loads(case.expected) if case.expected is not None else None
        if canonical_state(expected) == canonical_state(output):
            return Grade(value=1.0, reason="the final state is the expected one")
        differences = state_differences(expected, output)
        shown = "; ".join(differences[:_SHOWN])
        more = len(differences) - _SHOWN
        tail = f"; and {more} more" if more > 0 else ""
        return Grade(value=0.0, reason=f"the final state differs: {shown}{tail}")
