"""The rules of a case's conversation and simulated user that a JSON Schema cannot say
(docs/scenarios.md): tool turns answer the calls of the assistant turn before them, every
call is answered, and a `user` block is a script or a persona with a goal.

`fail(field, message)` makes the one-line error naming the file, the case and the field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from verdryx_core.errors import EvalSetError

__all__ = ["check_messages", "check_user"]

Fail = Callable[[str, str], EvalSetError]


def _unanswered(field: str, waiting: list[str], fail: Fail) -> EvalSetError:
    return fail(
        field,
        f"the assistant's call of {waiting[0]!r} has no result; follow an assistant turn's "
        'tool_calls with one {"role": "tool", "name": ..., "content": ...} turn per call',
    )


def check_messages(messages: Sequence[Mapping[str, Any]], fail: Fail) -> None:
    """Each turn's fields fit its role, and the tool turns pair with the calls."""
    waiting: list[str] = []  # the calls of the last assistant turn not yet answered
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        role = message["role"]
        if "tool_calls" in message and role != "assistant":
            raise fail(
                f"{where}.tool_calls", f"only an assistant turn makes calls (this is {role})"
            )
        if "name" in message and role != "tool":
            raise fail(f"{where}.name", f"only a tool turn names its tool (this is {role})")
        if role == "tool":
            if "name" not in message:
                raise fail(f"{where}.name", "a tool turn names the tool whose result it is")
            if "content" not in message:
                raise fail(f"{where}.content", "a tool turn carries the tool's result as text")
            name = message["name"]
            if name not in waiting:
                asked = ", ".join(waiting) if waiting else "none"
                raise fail(
                    f"{where}.name",
                    f"a result of {name!r}, which the assistant turn before it did not call "
                    f"(calls waiting for a result: {asked})",
                )
            waiting.remove(name)
            continue
        if waiting:
            raise _unanswered(where, waiting, fail)
        if role == "assistant":
            waiting = [str(call["name"]) for call in message.get("tool_calls") or ()]
            if "content" not in message and not waiting:
                raise fail(f"{where}.content", "an assistant turn says something or calls a tool")
        elif "content" not in message:
            raise fail(f"{where}.content", "required but missing; add it")
    if waiting:
        raise _unanswered(f"messages[{len(messages) - 1}]", waiting, fail)


def check_user(case: dict[str, Any], fail: Fail) -> None:
    """A script (`turns`) or a persona with a goal, never both; a persona's goal opens the
    dialogue when the case gives neither `prompt` nor `messages`."""
    block = case["user"]
    if "output" in case:
        raise fail("user", "a recorded output has no dialogue; drop 'output' or 'user'")
    if case.get("grader") == "outcome_tag":
        raise fail("user", "only valid with a grader of what the agent says or does")
    scripted = "turns" in block
    persona = "persona" in block or "goal" in block
    if scripted and persona:
        raise fail("user", "give 'turns' (a scripted user) or 'persona' and 'goal', not both")
    if not scripted and not persona:
        raise fail("user", "give 'turns' (a scripted user) or 'persona' and 'goal'")
    if persona:
        for name in ("persona", "goal"):
            if name not in block:
                raise fail(f"user.{name}", "a simulated user has both 'persona' and 'goal'")
        if "prompt" not in case and "messages" not in case:
            case["prompt"] = block["goal"]
    elif "done_when" in block:
        raise fail("user.done_when", "a scripted user is done when its turns run out")
