"""The one error family of verdryx: every message says what, why, and what to do."""

from __future__ import annotations

from verdryx_core.text import printable

__all__ = [
    "EvalSetError",
    "ModelCallError",
    "StoreError",
    "UsageError",
    "VerdryxError",
]


class VerdryxError(Exception):
    """Base of every error verdryx raises on purpose; the CLI prints it as one line."""

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

    def __init__(self, message: str, *, status: int | None = None) -> None:
        self.status = status
        super().__init__(message)
