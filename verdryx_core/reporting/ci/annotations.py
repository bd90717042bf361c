"""GitHub Actions workflow commands: one `::error` annotation per failed case, one for the gate.

The runner reads `::error file=F,line=L,title=T::message` lines from a step's output and pins
them to the file and line in the pull request. Its escaping, as in the Actions toolkit: `%`,
CR and LF in the message; those plus `:` and `,` in a property (they delimit properties).
See docs/ci.md.

Before that escaping, every part is made printable by the text rule (untrusted/text.py): an
output quoted in a failure message may hold U+2028, an escape sequence or a bidi override,
which the runner's escaping leaves alone and a reader's log would act on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from verdryx_core.reporting.ci.failures import CaseFailure
from verdryx_core.reporting.ci.verdict import verdict_line
from verdryx_core.untrusted.text import printable

if TYPE_CHECKING:
    # Types only: what CI sees is built without importing the gate (numpy) until it runs.
    from verdryx_core.gating.compare import GateOutcome

__all__ = [
    "case_annotation",
    "command",
    "escape_data",
    "escape_property",
    "gate_annotation",
    "github_annotations",
]


def escape_data(text: str) -> str:
    """A command's message: `%` first, so an escape is never escaped twice."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, properties: Mapping[str, str | int | None]) -> str:
    """`::name k=v,k=v::message`, one line whatever the parts hold; properties that are None
    are left out. `name` and the property names are verdryx's own."""
    shown = ",".join(
        f"{key}={escape_property(printable(str(value), keep_newlines=False))}"
        for key, value in properties.items()
        if value is not None
    )
    return f"::{name}{' ' + shown if shown else ''}::{escape_data(printable(message))}"


def case_annotation(failure: CaseFailure) -> str:
    """An error for a failed case, a warning for a dropped one (the verdict decides)."""
    level, word = ("warning", "dropped") if failure.dropped else ("error", "failed")
    return command(
        level,
        failure.message,
        {"file": failure.file, "line": failure.line, "title": f"verdryx: {failure.key} {word}"},
    )


def gate_annotation(gate: GateOutcome, *, file: str | None = None) -> str | None:
    """One annotation for a regressed or refused gate; None when the gate is on track (or
    nothing was compared): a green gate needs no annotation. `file`: the baseline's file."""
    if gate.refused is None and not gate.regressed:
        return None
    title = "verdryx gate: refused" if gate.refused is not None else "verdryx gate: regressed"
    return command("error", verdict_line(gate), {"file": file, "title": title})


def github_annotations(
    failures: Iterable[CaseFailure], gate: GateOutcome | None, *, baseline_file: str | None = None
) -> str:
    """Every annotation of a run, one per line (with a final newline), or "" when none."""
    lines = [case_annotation(failure) for failure in failures]
    if gate is not None:
        line = gate_annotation(gate, file=baseline_file)
        if line is not None:
            lines.append(line)
    return "".join(line + "\n" for line in lines)
