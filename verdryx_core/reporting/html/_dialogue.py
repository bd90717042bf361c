"""A dialogue's transcript on the report page, as structured turns: each turn a block of its
own under its role, so words an agent wrote that read like another role's (`user: ...`,
`[ended: ...]`) show inside the agent's block (docs/scenarios.md, "Simulated users")."""

from __future__ import annotations

from typing import Final

from verdryx_core.reporting.html._svg import esc
from verdryx_core.transcript import TranscriptLine, transcript_lines

__all__ = ["DIALOGUE_CSS", "dialogue_html"]

DIALOGUE_CSS: Final = """\
.dialogue { margin: 2px 0; }
.turn { border-left: 3px solid #d0d7de; margin: 4px 0; padding: 0 0 0 8px; }
.turn.user { border-left-color: #0969da; }
.turn.assistant { border-left-color: #8250df; }
.turn .role { font-size: 12px; font-weight: 600; color: #57606a; }
.turn pre { margin: 1px 0; }
.turn pre.call { background: #fff8c5; }
.ended { font-size: 12px; color: #57606a; margin: 4px 0; }
"""
_CLASSES: Final = {"user": "user", "assistant": "assistant", "system": "system"}


def dialogue_html(text: str) -> str | None:
    """The transcript `text` as turn blocks, or None when it is not a transcript."""
    lines = transcript_lines(text)
    if lines is None:
        return None
    blocks: list[str] = []
    open_turn = False
    for line in lines:
        if line.kind == "turn":
            if open_turn:
                blocks.append("</div>")
            kind = _CLASSES.get(line.role, "tool")
            blocks.append(
                f'<div class="turn {kind}"><div class="role">{esc(line.role)}</div>'
                f"<pre>{esc(line.text)}</pre>"
            )
            open_turn = True
        elif line.kind == "call" and open_turn:
            blocks.append(f'<pre class="call">-&gt; {esc(line.text)}</pre>')
        else:
            if open_turn:
                blocks.append("</div>")
                open_turn = False
            blocks.append(_plain(line))
    if open_turn:
        blocks.append("</div>")
    return f'<div class="dialogue">{"".join(blocks)}</div>'


def _plain(line: TranscriptLine) -> str:
    css = "ended" if line.kind == "ended" else "note"
    return f'<div class="{css}">{esc(line.text)}</div>'
