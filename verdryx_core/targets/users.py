"""Simulated users: who answers the agent in a case's dialogue (docs/scenarios.md,
"Simulated users").

A case's `user` block is a scripted user (`turns`: said in order, one after each reply of
the agent, done when they run out) or a persona with a goal, played by the user model
(`--verdryx-user-model`, default `stub`). The stub is offline and deterministic: it opens
with the goal, says it is done once the agent's reply contains the block's `done_when`
(case-insensitively), and otherwise asks again for what it still needs. A model id plays the
persona with that model, which says `###DONE###` when its goal is met.

Each dialogue gets a fresh simulated user (`SimulatedUsers.user_for`): it keeps its place
in its script, and never sees another dialogue's. "User model" is only ever the model that
plays a persona (`--verdryx-user-model`), never the simulated user it plays.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol

if TYPE_CHECKING:
    from verdryx_core.llm.base import ModelAdapter

__all__ = [
    "DEFAULT_MAX_TURNS",
    "DONE_MARK",
    "STUB_USER_MODEL",
    "ScriptedUser",
    "SimulatedUser",
    "SimulatedUsers",
    "StubUser",
    "opening_of",
]

#: The most replies of the agent in one dialogue when the block sets no `max_turns`.
DEFAULT_MAX_TURNS: Final = 10
STUB_USER_MODEL: Final = "stub"
#: What a model playing the user says when its goal is met.
DONE_MARK: Final = "###DONE###"


class SimulatedUser(Protocol):
    #: True when a turn calls a service (a model): then it runs off an event loop.
    remote: bool
    #: What its turns consumed so far (a model's): counted in the dialogue's usage.
    input_tokens: int
    output_tokens: int
    cost_usd: float

    def reply(self, transcript: Sequence[Mapping[str, Any]]) -> str | None:
        """The user's next message after the agent's last reply, or None: it is done."""
        ...


def _last_reply(transcript: Sequence[Mapping[str, Any]]) -> str:
    for message in reversed(transcript):
        if message.get("role") == "assistant":
            return str(message.get("content") or "")
    return ""


class ScriptedUser:
    """Says its turns in order, one after each reply; done when none is left."""

    remote = False
    input_tokens = output_tokens = 0
    cost_usd = 0.0

    def __init__(self, turns: Sequence[str]) -> None:
        self._turns = list(turns)
        self._said = 0

    def reply(self, transcript: Sequence[Mapping[str, Any]]) -> str | None:
        if self._said >= len(self._turns):
            return None
        self._said += 1
        return self._turns[self._said - 1]


class StubUser:
    """The simulated user the stub user model plays, offline: done once the agent's reply
    contains `done_when`; until then it restates what it still needs (without `done_when` it
    never says it is done, and the dialogue ends by the agent or `max_turns`)."""

    remote = False
    input_tokens = output_tokens = 0
    cost_usd = 0.0

    def __init__(self, goal: str, done_when: str | None) -> None:
        self.goal = goal
        self.done_when = done_when

    def reply(self, transcript: Sequence[Mapping[str, Any]]) -> str | None:
        if self.done_when and self.done_when.casefold() in _last_reply(transcript).casefold():
            return None
        return f"That is not done yet. What I need: {self.goal}"


_USER_SYSTEM: Final = (
    "You play a user talking to a support agent. Stay in character and say only what the "
    "user says, one message at a time. Who you are: {persona}\nWhat you want: {goal}\n"
    "When what you want is done (or cannot be done), reply with exactly " + DONE_MARK + "."
)


class ModelUser:
    """A persona played by a model: the dialogue so far with the roles swapped (the agent's
    replies are its user turns), the persona and goal as its system prompt."""

    remote = True

    def __init__(self, adapter: ModelAdapter, persona: str, goal: str) -> None:
        self.adapter = adapter
        self.system = _USER_SYSTEM.format(persona=persona, goal=goal)
        self.input_tokens = self.output_tokens = 0
        self.cost_usd = 0.0

    def reply(self, transcript: Sequence[Mapping[str, Any]]) -> str | None:
        swapped = [
            {"role": "user" if m.get("role") == "assistant" else "assistant", "content": text}
            for m in transcript
            if m.get("role") in ("user", "assistant") and (text := str(m.get("content") or ""))
        ]
        while swapped and swapped[0]["role"] != "user":  # a chat opens with its user turn
            swapped.pop(0)
        if not swapped:
            return None
        completion = self.adapter.complete(
            swapped[-1]["content"], system=self.system, messages=swapped
        )
        self.input_tokens += completion.input_tokens
        self.output_tokens += completion.output_tokens
        self.cost_usd += completion.cost_usd
        text = completion.text.strip()
        return None if not text or DONE_MARK in text else text


class SimulatedUsers:
    """Makes each dialogue's simulated user: scripted from its turns, else a persona played by
    the run's user model (`name`, and its adapter; None: the stub)."""

    def __init__(self, name: str = STUB_USER_MODEL, adapter: ModelAdapter | None = None) -> None:
        self.name = name
        self.adapter = adapter

    def user_for(self, block: Mapping[str, Any]) -> SimulatedUser:
        turns = block.get("turns")
        if turns is not None:
            return ScriptedUser([str(turn) for turn in turns])
        goal = str(block.get("goal", ""))
        if self.adapter is None:
            done_when = block.get("done_when")
            return StubUser(goal, None if done_when is None else str(done_when))
        return ModelUser(self.adapter, str(block.get("persona", "")), goal)

    def identity(self, block: Mapping[str, Any]) -> str:
        """What plays this block's user, for the cache key: a script is its own."""
        return "scripted" if block.get("turns") is not None else self.name


def opening_of(block: Mapping[str, Any]) -> str | None:
    """A persona's first message when the case gives none: its goal."""
    goal = block.get("goal")
    return None if goal is None else str(goal)
