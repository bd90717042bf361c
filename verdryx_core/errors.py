"""The one error family of verdryx: every message says what, why, and what to do.

What to do often means a setting, and the two faces spell settings differently
(`verdryx eval --judge`, `pytest --verdryx-judge`). So an error keeps the fact apart from
its `hint`, written with `{setting}` placeholders; each face words it with its own flag
names (`worded`). `str()` words it as the command line does (the CLI is the core's face).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from verdryx_core.untrusted.text import printable

__all__ = [
    "CLI_FLAGS",
    "EvalSetError",
    "ModelCallError",
    "StoreError",
    "UsageError",
    "VerdryxError",
    "word_hint",
]

#: How the command line spells the settings a hint may name.
CLI_FLAGS: Final[Mapping[str, str]] = {
    "allow_model_change": "--allow-model-change",
    "batch": "--batch",
    "cache": "--cache",
    "concurrency": "--concurrency",
    "db": "--db",
    "judge": "--judge",
    "model": "--model",
    "repeat": "--repeat",
    "save_baseline": "`verdryx baseline RUN_ID --label LABEL`",
    "target": "--target",
    "target_version": "--target-version",
    "timeout": "--timeout",
    "typed_key_file": "--typed-key-file",
    "typed_template": "--typed-template",
    "typed_url": "--typed-url",
}


def word_hint(hint: str, flags: Mapping[str, str]) -> str:
    """`hint` with each `{setting}` replaced by the face's flag for it."""
    return hint.format_map(flags)


class VerdryxError(Exception):
    """Base of every error verdryx raises on purpose; the CLI prints it as one line.

    `hint`, when given, is what to do, with `{setting}` placeholders (see the module doc)."""

    def __init__(self, message: str = "", *, hint: str | None = None) -> None:
        self.fact = message
        self.hint = hint
        super().__init__(self.worded(CLI_FLAGS))

    def worded(self, flags: Mapping[str, str]) -> str:
        """The whole message, the hint in the words of the face whose `flags` these are."""
        text = self.fact if self.hint is None else f"{self.fact}; {word_hint(self.hint, flags)}"
        # Printable and one line in every face's words too (see `__str__`).
        return printable(text, keep_newlines=False)

    def __str__(self) -> str:
        # A message quotes what it refuses (a file name, an id, a provider's words): printed
        # raw, a lone surrogate would crash the print and a control character would garble
        # the terminal, so every message is made printable and kept to one line here.
        return printable(super().__str__(), keep_newlines=False)


class UsageError(VerdryxError):
    """The user asked for something that cannot be done as asked (bad flag value, unknown label)."""


class EvalSetError(VerdryxError):
    """An eval set file is unreadable or invalid; the message names file, case and field."""

    def __init__(
        self,
        path: object,
        message: str,
        *,
        case: str | None = None,
        field: str | None = None,
        line: int | None = None,
    ) -> None:
        self.path = str(path)
        self.case = case
        self.field = field
        #: The 1-based line of the file the problem is on, when the format has one per case.
        self.line = line
        self.detail = message
        where = self.path if line is None else f"{self.path}:{line}"
        if case is not None:
            where += f": case {case}"
        if field is not None:
            where += f": field '{field}'"
        super().__init__(f"{where}: {message}")


class StoreError(VerdryxError):
    """The SQLite store cannot be opened, read or written; the message names the file."""


class ModelCallError(VerdryxError):
    """A model provider refused or could not be reached: an infrastructure failure, not a score.

    `status` is the HTTP status when there was one. The message never carries a credential.
    """

    def __init__(self, message: str, *, status: int | None = None, hint: str | None = None) -> None:
        self.status = status
        super().__init__(message, hint=hint)
