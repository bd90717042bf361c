"""A failed (or dropped) case as CI shows it: where it lives (file and line) and what went
wrong."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CaseFailure"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CaseFailure:
    #: `eval_set_id::case_id`, the identity cases are compared by.
    key: str
    #: The eval set file, relative to the repository root (what GitHub pins annotations to).
    file: str | None
    #: 1-based line of the case in `file`; None when it could not be found.
    line: int | None
    #: The failure report, as the terminal shows it (may span lines).
    message: str
    #: Below its bar but not failing the session: the verdict decides (docs/outcomes.md).
    dropped: bool = False
