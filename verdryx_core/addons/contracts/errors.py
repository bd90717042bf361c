"""The errors of contract verification: a bad contract, a bad bundle, a check that cannot run."""

from __future__ import annotations

from verdryx_core.errors import VerdryxError

__all__ = ["BundleError", "CheckError", "ContractError"]


class ContractError(VerdryxError):
    """A contract is unreadable or invalid; the message names the source, criterion and field."""

    def __init__(
        self,
        source: str,
        message: str,
        *,
        criterion: str | None = None,
        field: str | None = None,
    ) -> None:
        self.source = source
        self.criterion = criterion
        self.field = field
        self.detail = message
        where = source
        if criterion is not None:
            where += f": criterion {criterion}"
        if field is not None:
            where += f": field '{field}'"
        super().__init__(f"{where}: {message}")


class BundleError(VerdryxError):
    """A file is not an evidence bundle at all (unreadable, not JSON, unknown format).

    A bundle that parses but whose artifacts do not match their hashes is not this error:
    that is evidence of tampering, and the verdict is FAIL naming the artifact.
    """


class CheckError(VerdryxError):
    """A check cannot run (unreadable path, escaping symlink, locked database, truncated
    evidence). The check's status is then `error`, never `pass`."""
