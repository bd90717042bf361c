"""A tool trace against its expectation, one line per call (docs/graders.md, "Tool traces").

For example:

    ok          lookup_order {"order_id": "A-1001"}  (call 1)
    wrong args  refund_order (call 2, expected 2): amount: expected 25, got 30
    missing     lookup_order {"order_id": "A-1002"}  (expected 3)
    unexpected  send_email {"to": "x@example.com"}  (call 3)

Calls are paired as the score pairs them (the longest common subsequence for `ordered`, a
largest one-to-one matching otherwise); an expected call left over and a call made of the
same tool left over (in the same stretch of the trace, for `ordered`) are one call with
wrong arguments, its differences named argument by argument. The values are the agent's:
the report is printed through the printable rule by whoever shows it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any, Final

from verdryx_core.cases import ToolCall

__all__ = ["trace_report"]

Match = Callable[[ToolCall, ToolCall], bool]
#: The differences of a call made from the expected call of the same tool, in words.
ArgumentDiff = Callable[[ToolCall, ToolCall], list[str]]

_WIDTH: Final = 12
_PLAIN: Final = re.compile(r"[\w.\-]{1,64}", re.ASCII)


def _ordered_pairs(
    a: Sequence[ToolCall], b: Sequence[ToolCall], match: Match
) -> list[tuple[int, int]]:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        for j in range(len(b) - 1, -1, -1):
            table[i][j] = (
                table[i + 1][j + 1] + 1
                if match(a[i], b[j])
                else max(table[i + 1][j], table[i][j + 1])
            )
    pairs, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        if match(a[i], b[j]) and table[i][j] == table[i + 1][j + 1] + 1:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def _any_pairs(a: Sequence[ToolCall], b: Sequence[ToolCall], match: Match) -> list[tuple[int, int]]:
    edges = [[j for j, other in enumerate(b) if match(item, other)] for item in a]
    owner: list[int | None] = [None] * len(b)

    def augment(i: int, seen: list[bool]) -> bool:
        for j in edges[i]:
            if not seen[j]:
                seen[j] = True
                holder = owner[j]
                if holder is None or augment(holder, seen):
                    owner[j] = i
                    return True
        return False

    for i in range(len(a)):
        augment(i, [False] * len(b))
    return sorted((i, j) for j, i in enumerate(owner) if i is not None)


def _name(name: str) -> str:
    # A made call's name is the agent's: anything but a plain name is quoted, so a newline
    # in it cannot start a line of its own that reads as this report's.
    return name if _PLAIN.fullmatch(name) else json.dumps(name, ensure_ascii=False)


def _call(call: ToolCall) -> str:
    if call.arguments is None:
        return _name(call.name)
    return f"{_name(call.name)} {json.dumps(dict(call.arguments), ensure_ascii=False, default=str)}"


def _line(kind: str, text: str) -> str:
    return f"  {kind:<{_WIDTH}}{text}"


def trace_report(
    actual: Sequence[ToolCall],
    expected: Sequence[ToolCall],
    *,
    tool_match: str,
    match: Match,
    argument_diff: ArgumentDiff,
) -> str:
    """The lines of the module docstring, with a first line of counts."""
    ordered = tool_match == "ordered"
    pairs = (_ordered_pairs if ordered else _any_pairs)(actual, expected, match)
    made_done = {i for i, _ in pairs}
    wanted_done = {j for _, j in pairs}

    def gap(index: int, side: int) -> int:
        # Which stretch between matched pairs a left-over call is in (ordered only).
        return sum(1 for pair in pairs if pair[side] < index) if ordered else 0

    events: list[tuple[tuple[Any, ...], str]] = []
    for k, (i, j) in enumerate(pairs):
        where = f"call {i + 1}" if i == j else f"call {i + 1}, expected {j + 1}"
        events.append(
            ((k if ordered else 0, 1, 0, i), _line("ok", f"{_call(actual[i])}  ({where})"))
        )
    left_made = [i for i in range(len(actual)) if i not in made_done]
    for j in (j for j in range(len(expected)) if j not in wanted_done):
        wanted = expected[j]
        twin = next(
            (i for i in left_made if actual[i].name == wanted.name and gap(i, 0) == gap(j, 1)),
            None,
        )
        if twin is not None:
            left_made.remove(twin)
            why = "; ".join(argument_diff(actual[twin], wanted)) or "arguments differ"
            text = f"{_name(wanted.name)} (call {twin + 1}, expected {j + 1}): {why}"
            events.append(((gap(j, 1), 0, 0, j), _line("wrong args", text)))
        else:
            text = f"{_call(wanted)}  (expected {j + 1})"
            events.append(((gap(j, 1), 0, 0, j), _line("missing", text)))
    for i in left_made:
        text = f"{_call(actual[i])}  (call {i + 1})"
        events.append(((gap(i, 0), 0, 1, i), _line("unexpected", text)))
    head = f"{len(pairs)} of {len(expected)} expected calls matched, {len(actual)} made"
    return "\n".join([head, *(line for _, line in sorted(events, key=lambda e: e[0]))])
