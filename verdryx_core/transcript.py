"""A simulated dialogue's transcript as text, with its roles kept as data (docs/scenarios.md,
"Simulated users").

One line per turn: the role as verdryx writes it (`user: `, `assistant: `, `tool "NAME": `),
then the turn's words as one JSON string, so nothing a speaker says (a line break and
`user: ...`, a `[ended: ...]` of its own) can leave its turn: it stays inside the quotes. A
call the agent made is a line `  -> {JSON}` under its turn; the last line, verdryx's own,
says how the dialogue ended. `transcript_lines` reads it back for a report that shows each
turn apart; a transcript stored before the words were quoted reads as plain lines.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Final

from verdryx_core.untrusted.text import printable_json

__all__ = ["TRANSCRIPT_HEAD", "TranscriptLine", "quoted", "transcript_lines"]

#: The first line of every transcript (how a stored output is told apart as one).
TRANSCRIPT_HEAD: Final = "[transcript]"
#: What a turn line starts with: a role verdryx writes, or a tool turn's quoted name.
_TURN: Final = re.compile(r'(?P<role>system|user|assistant|tool (?P<name>"(?:[^"\\]|\\.)*")): ')
_CALL: Final = "  -> "
_ENDED: Final = "[ended: "


def quoted(text: str) -> str:
    """`text` as a JSON string on one line: every line break, control, format or separator
    character written as an escape, so it reads back (`json.loads`) as it was."""
    return printable_json(json.dumps(text, ensure_ascii=False))


@dataclass(frozen=True, slots=True)
class TranscriptLine:
    """One line of a transcript as read back: `kind` is `turn` (a role and its words), `call`
    (a call the turn above made, its JSON text), `ended` (how it ended), or `text` (a line of
    a transcript stored before words were quoted, or one cut short: shown as it is)."""

    kind: str
    text: str
    role: str = ""


def transcript_lines(text: str) -> list[TranscriptLine] | None:
    """The lines of a stored transcript, or None when `text` is not one."""
    head, newline, body = text.partition("\n")
    if head != TRANSCRIPT_HEAD or not newline:
        return None
    lines: list[TranscriptLine] = []
    for line in body.split("\n"):
        turn = _TURN.match(line)
        if turn is not None:
            role = turn["role"]
            if turn["name"] is not None:
                role = f"tool {_decoded(turn['name']) or turn['name']}"
            words = _decoded(line[turn.end() :])
            if words is not None:
                lines.append(TranscriptLine("turn", words, role))
                continue
            # Words cut short in the store (or never quoted): the rest of the line is still
            # that turn's.
            lines.append(TranscriptLine("turn", line[turn.end() :], role))
        elif line.startswith(_CALL):
            lines.append(TranscriptLine("call", line[len(_CALL) :]))
        elif line.startswith(_ENDED) and line.endswith("]"):
            lines.append(TranscriptLine("ended", line))
        else:
            lines.append(TranscriptLine("text", line))
    return lines


def _decoded(text: str) -> str | None:
    if not text.startswith('"'):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, str) else None
