"""A case with a simulated user, driven as a dialogue (docs/scenarios.md, "Simulated users").

The dialogue is one target call as the runner sees it (one slot, one timeout over the whole
dialogue, one cached result under a declared target version): `dialogue_target` wraps the
user's target in a driver that calls it once per turn with the transcript so far as
`TargetCase.messages`, appends its reply (with the tool calls it reports and their results),
then asks the case's user for its next turn. It ends when the agent says it is done (a result's
`done`), when the user does, or after `max_turns` replies. The result is the whole sample:
the last reply, the calls of every turn in order, the summed usage (a model user's
included), the last `state` reported, and the transcript.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
from collections.abc import Mapping
from typing import Any

from verdryx_core.targets.case import TargetCase
from verdryx_core.targets.result import TargetResult, TargetUsage, normalise_result
from verdryx_core.targets.spans import merge_current, outside_call
from verdryx_core.targets.target import Target
from verdryx_core.targets.users import DEFAULT_MAX_TURNS, SimulatedUser, SimulatedUsers

__all__ = ["dialogue_target", "reply_turns"]


class _Dialogue:
    """One dialogue's progress: the transcript, the results so far, how it ended."""

    def __init__(self, case: TargetCase, user: SimulatedUser, max_turns: int) -> None:
        self.case = case
        self.user = user
        self.max_turns = max_turns
        self.transcript: list[dict[str, Any]] = case.conversation()
        self.results: list[TargetResult] = []
        self.ended: str | None = None

    def turn_case(self) -> TargetCase:
        return dataclasses.replace(self.case, messages=tuple(dict(m) for m in self.transcript))

    def take_reply(self, value: object) -> bool:
        """Record the agent's reply (with what its turn's spans say and it does not,
        docs/targets.md "Frameworks"); True when the user is to speak next."""
        result = merge_current(normalise_result(value))
        self.results.append(result)
        self.transcript.extend(reply_turns(result))
        if result.done:
            self.ended = "agent_done"
        elif len(self.results) >= self.max_turns:
            self.ended = "max_turns"
        return self.ended is None

    def take_user(self, text: str | None) -> None:
        if text is None:
            self.ended = "user_done"
        else:
            self.transcript.append({"role": "user", "content": text})

    def result(self) -> TargetResult:
        results = self.results
        states = [r.state for r in results if r.state is not None]
        user = self.user  # a model playing the user is paid for as the agent's turns are
        usage = TargetUsage(
            input_tokens=sum(r.usage.input_tokens for r in results) + user.input_tokens,
            output_tokens=sum(r.usage.output_tokens for r in results) + user.output_tokens,
            cost_usd=math.fsum([*(r.usage.cost_usd for r in results), user.cost_usd]),
            # The turns' model, for the price book when they report tokens and no cost.
            model=next((r.usage.model for r in results if r.usage.model), None),
        )
        return TargetResult(
            output=results[-1].output,
            tool_calls=tuple(call for r in results for call in r.tool_calls),
            usage=usage,
            metadata=results[-1].metadata,
            state=states[-1] if states else None,
            done=self.ended == "agent_done",
            transcript=tuple(self.transcript),
            ended=self.ended,
        )


def reply_turns(result: TargetResult) -> list[dict[str, Any]]:
    """One reply of the agent in the neutral form of a case's `messages` (docs/scenarios.md,
    "Simulated users"). Calls with results are written as they happened: a turn with the
    calls, a `tool` turn with each result, then the reply's words, so the next turn can be
    sent to a model as it is. Calls reported without results stay on the reply's turn."""
    calls = [call.to_dict() for call in result.tool_calls]
    if not any(call.result is not None for call in result.tool_calls):
        reply: dict[str, Any] = {"role": "assistant", "content": result.output}
        if calls:
            reply["tool_calls"] = calls
        return [reply]
    turns: list[dict[str, Any]] = [{"role": "assistant", "content": "", "tool_calls": calls}]
    turns += [
        {"role": "tool", "name": call.name, "content": _result_text(call.result)}
        for call in result.tool_calls
        if call.result is not None
    ]
    if result.output:
        turns.append({"role": "assistant", "content": result.output})
    return turns


def _result_text(result: Any) -> str:
    """A tool turn's content is text: a result that is not is its JSON text."""
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)


def dialogue_target(target: Target, block: Mapping[str, Any], users: SimulatedUsers) -> Target:
    """`target` driven through a dialogue with the user `block` describes; its cache key
    takes the block and what plays the user (`Target.variant`)."""
    max_turns = int(block.get("max_turns", DEFAULT_MAX_TURNS))

    def call_argument(dialogue: _Dialogue) -> Any:
        return target.argument(dialogue.turn_case())

    if target.is_async:

        async def drive_async(case: TargetCase) -> TargetResult:
            dialogue = _Dialogue(case, users.user_for(block), max_turns)
            while True:
                value = await target.function(call_argument(dialogue))
                if not dialogue.take_reply(value):
                    return dialogue.result()
                user = dialogue.user
                # The user's words are verdryx's own work, never one of the agent's spans.
                if user.remote:  # a model's turn must not block the targets' event loop
                    text = await asyncio.to_thread(outside_call, user.reply, dialogue.transcript)
                else:
                    text = outside_call(user.reply, dialogue.transcript)
                dialogue.take_user(text)
                if dialogue.ended is not None:
                    return dialogue.result()

        function: Any = drive_async
    else:

        def drive(case: TargetCase) -> TargetResult:
            dialogue = _Dialogue(case, users.user_for(block), max_turns)
            while True:
                if not dialogue.take_reply(target.function(call_argument(dialogue))):
                    return dialogue.result()
                dialogue.take_user(outside_call(dialogue.user.reply, dialogue.transcript))
                if dialogue.ended is not None:
                    return dialogue.result()

        function = drive
    variant = {"user": dict(block), "user_model": users.identity(block)}
    return Target(target.spec, function, target.is_async, takes_text=False, variant=variant)
