"""The add-ons' errors, in one place: each derives from the core family (`VerdryxError`,
documented with the whole hierarchy in `verdryx_core/errors.py`), so every face prints it
as one line.

* contracts: `ContractError` (a bad contract), `BundleError` (a file that is no evidence
  bundle), `CheckError` (a check that cannot run: its status is `error`, never `pass`);
* traces: `TraceError` (a trace file that cannot be read as asked), `TracesExtraMissing`;
* SLO: `SloInputError` (a parameter out of range or unknown; a `UsageError`);
* typed grading: `TypedGradeError` (a case that cannot be graded as written);
* the verification service: `VerificationServiceError` and its `AuthError` (what the client
  sees), `RefusedRequestError` (what the server answers instead of a success).
"""

from __future__ import annotations

from verdryx_core.errors import UsageError, VerdryxError, located

__all__ = [
    "AuthError",
    "BundleError",
    "CheckError",
    "ContractError",
    "RefusedRequestError",
    "SloInputError",
    "TraceError",
    "TracesExtraMissing",
    "TypedGradeError",
    "VerificationServiceError",
]


# -- contracts --------------------------------------------------------------------------------


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
        super().__init__(located(source, message, criterion=criterion, field=field))


class BundleError(VerdryxError):
    """A file is not an evidence bundle at all (unreadable, not JSON, unknown format).

    A bundle that parses but whose artifacts do not match their hashes is not this error:
    that is evidence of tampering, and the verdict is FAIL naming the artifact.
    """


class CheckError(VerdryxError):
    """A check cannot run (unreadable path, escaping symlink, locked database, truncated
    evidence). The check's status is then `error`, never `pass`."""


# -- traces -----------------------------------------------------------------------------------


class TraceError(VerdryxError):
    """A trace or record file cannot be read as asked; the message names the file and where."""


class TracesExtraMissing(VerdryxError):
    """Parquet traces need pyarrow, which is the optional `traces` extra."""


# -- SLO --------------------------------------------------------------------------------------


class SloInputError(UsageError, ValueError):
    """An SLO parameter is out of range or unknown; the message names it and the fix."""


# -- typed grading ----------------------------------------------------------------------------


class TypedGradeError(VerdryxError):
    """A typed case that cannot be graded as written: a choice template, a label that does
    not fit the template's type. Fixing the case or the template fixes it."""


# -- the verification service -----------------------------------------------------------------


class VerificationServiceError(VerdryxError):
    """The service could not be reached, timed out, refused the request or answered in a way
    that is not its API. `status` is the HTTP status when there was one."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        self.status = status
        super().__init__(message)


class AuthError(VerificationServiceError):
    """The service refused the API key (401 or 403): missing, unknown or revoked."""


class RefusedRequestError(VerdryxError):
    """The server's answer other than success, raised where the request is refused: the HTTP
    `status` and the one `message` the response carries as `{"error": ...}`."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        self.message = message
        super().__init__(message)
