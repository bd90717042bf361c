"""The one error family of verdryx: every message says what, why, and what to do.

What to do often means a setting, and the two faces spell settings differently
(`verdryx eval --judge`, `pytest --verdryx-judge`). So an error keeps the fact apart from
its `hint`, written with `{setting}` placeholders; each face words it with its own flag
names (`worded`). `str()` words it as the command line does (the CLI is the core's face);
the Python API's calls raise theirs in a Python caller's words (`PYTHON_FLAGS`, `in_words`).

Every error verdryx raises on purpose derives from `VerdryxError`. The core's are all here;
the add-ons' are in `verdryx_core/addons/errors.py`, deriving from these (an add-on imports
the core, never the reverse):

    VerdryxError                  the base: one printable line, with an optional hint
    ├── UsageError                asked for something that cannot be done as asked
    │   ├── BaselineFileError     a committed baseline file is unreadable or invalid
    │   ├── GroupError            a run group's shard runs do not make one run
    │   ├── ModelChangeError      the run and the baseline measured different models
    │   └── SloInputError         (add-on) an SLO parameter out of range or unknown
    ├── EvalSetError              an eval set file is unreadable or invalid
    ├── StoreError                the store cannot be opened, read or written
    │   └── RunNotStoredError     a graded run could not be saved (nothing of it was)
    ├── ModelCallError            a model provider refused or could not be reached
    ├── GraderError               a custom grader that cannot be used, or a bad score
    │   └── AfterSaveError        the run is stored, what a plugged-in grader keeps is not
    ├── TargetLoadError           `module:callable` names no callable target
    ├── TargetResultError         a target returned something that is not a result
    ├── TargetCallError           a target call produced no output (that case's error)
    └── (add-ons) ContractError, BundleError, CheckError, TraceError,
        TracesExtraMissing, TypedGradeError, VerificationServiceError > AuthError,
        RefusedRequestError

Not in the family, on purpose: the ValueErrors a parser hands its own caller
(`verdryx_core.untrusted.json_input`'s, `verdryx_core.llm.wire.MalformedAnswer`), which the
caller always words as one of these, naming the file or the call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from verdryx_core.untrusted.text import printable

__all__ = [
    "CLI_FLAGS",
    "PYTHON_FLAGS",
    "AfterSaveError",
    "BaselineFileError",
    "EvalSetError",
    "GraderError",
    "GroupError",
    "ModelCallError",
    "ModelChangeError",
    "RunNotStoredError",
    "StoreError",
    "TargetCallError",
    "TargetLoadError",
    "TargetResultError",
    "UsageError",
    "VerdryxError",
    "located",
    "word_hint",
]

#: How the command line spells the settings a hint may name.
CLI_FLAGS: Final[Mapping[str, str]] = {
    "allow_model_change": "--allow-model-change",
    "allow_partial_baseline": "--allow-partial",
    "baseline_runs": "--runs",
    "batch": "--batch",
    "cache": "--cache",
    "concurrency": "--concurrency",
    "db": "--db",
    "detect": "--detect",
    "fail_on": "--fail-on",
    "gate_metric": "--gate-metric",
    "judge": "--judge",
    "labels": "--labels",
    "min_coverage": "--min-coverage",
    "model": "--model",
    "repeat": "--repeat",
    "require_power": "--require-power",
    "save_baseline": "`verdryx baseline RUN_ID --label LABEL`",
    "target": "--target",
    "target_version": "--target-version",
    "timeout": "--timeout",
    "typed_key_file": "--typed-key-file",
    "typed_template": "--typed-template",
    "typed_url": "--typed-url",
    "unsafe_exec": "--unsafe-exec",
    "exec_disk": "--exec-disk",
    "user_model": "--user-model",
    "otel": "--otel",
}


#: How the Python API spells the same settings (docs/python-api.md): a keyword argument of
#: the object or call that takes it, never a command-line flag. Hints read "pass {setting}
#: to ..." or "{setting} MODEL", so a switch is the argument set to True and a value is the
#: field it goes in.
PYTHON_FLAGS: Final[Mapping[str, str]] = {
    "allow_model_change": "GatePolicy(allow_model_change=True)",
    "allow_partial_baseline": (
        "allow_partial=True to save_baseline (RunPolicy(allow_partial_baseline=True) to conclude)"
    ),
    "baseline_runs": "RunPolicy.baseline_runs",
    "batch": "EvalSettings(batch=True)",
    "cache": "EvalSettings.cache",
    "concurrency": "EvalSettings.concurrency",
    "db": "store=",
    "detect": "GatePolicy.detect",
    "fail_on": "RunPolicy.fail_on",
    "gate_metric": "GatePolicy.metric",
    "judge": "EvalSettings.judge",
    "labels": "RunPolicy.labels",
    "min_coverage": "GatePolicy.min_coverage",
    "model": "EvalSettings.model",
    "repeat": "EvalSettings.repeat",
    "require_power": "GatePolicy(require_power=True)",
    "save_baseline": "save_baseline(run, LABEL)",
    "target": "evaluate(..., target=...)",
    "target_version": "EvalSettings.target_version",
    "timeout": "EvalSettings.call_timeout",
    "typed_key_file": "EvalSettings.grader_options['typed']['key_file']",
    "typed_template": "EvalSettings.grader_options['typed']['template']",
    "typed_url": "EvalSettings.grader_options['typed']['url']",
    "unsafe_exec": "EvalSettings(unsafe_exec=True)",
    "exec_disk": "EvalSettings.exec_disk_mib",
    "user_model": "EvalSettings.user_model",
    "otel": "EvalSettings.otel",
}


def located(
    place: str,
    message: str,
    *,
    case: str | None = None,
    criterion: str | None = None,
    field: str | None = None,
) -> str:
    """`place: case C: field 'F': message` with the parts that are given (a contract's
    criterion stands where a file's case would): how every file error says where."""
    where = place
    if case is not None:
        where += f": case {case}"
    if criterion is not None:
        where += f": criterion {criterion}"
    if field is not None:
        where += f": field '{field}'"
    return f"{where}: {message}"


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

    def in_words(self, flags: Mapping[str, str]) -> VerdryxError:
        """This error, its `str()` in the words of `flags` from now on: how a call of the
        Python API raises what the core below it raised (a hint to a Python caller names a
        keyword argument, not `--allow-model-change`). Returns itself."""
        if self.hint is not None:
            self.args = (self.worded(flags), *self.args[1:])
        return self

    def __str__(self) -> str:
        # A message quotes what it refuses (a file name, an id, a provider's words): printed
        # raw, a lone surrogate would crash the print and a control character would garble
        # the terminal, so every message is made printable and kept to one line here.
        return printable(super().__str__(), keep_newlines=False)


class UsageError(VerdryxError):
    """The user asked for something that cannot be done as asked (bad flag value, unknown label)."""


class BaselineFileError(UsageError):
    """A committed baseline file is unreadable or invalid; names the file, case and field."""

    def __init__(
        self, path: object, message: str, *, case: str | None = None, field: str | None = None
    ) -> None:
        self.path, self.case, self.field = str(path), case, field
        super().__init__(
            located(self.path, message, case=case, field=field),
            hint="fix the file or re-create it with {save_baseline}",
        )


class GroupError(UsageError):
    """The group's shard runs cannot be assembled into one run; the message says why."""


class ModelChangeError(UsageError):
    """The run and the baseline measured different models (or judges)."""


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
        place = self.path if line is None else f"{self.path}:{line}"
        super().__init__(located(place, message, case=case, field=field))


class StoreError(VerdryxError):
    """The SQLite store cannot be opened, read or written; the message names the file."""


class RunNotStoredError(StoreError):
    """A graded run could not be saved: "the run was not stored: <why>". Nothing of it is in
    the store (its save is one transaction); `run` is what was graded, `reason` the store's
    own line."""

    def __init__(self, reason: str, *, run: object = None) -> None:
        self.reason = reason
        self.run = run
        super().__init__(f"the run was not stored: {reason}")


class ModelCallError(VerdryxError):
    """A model provider refused or could not be reached: an infrastructure failure, not a score.

    `status` is the HTTP status when there was one. The message never carries a credential.
    """

    def __init__(self, message: str, *, status: int | None = None, hint: str | None = None) -> None:
        self.status = status
        super().__init__(message, hint=hint)


class GraderError(VerdryxError):
    """A custom grader that cannot be registered, loaded, or that answered something that
    is not a score."""


class AfterSaveError(GraderError):
    """The run is stored, but the `after_save` of one or more plugged-in graders failed, so
    what they keep of it in their own tables is not: `lines`, one per grader, each naming it.
    `run` is the run that was stored."""

    def __init__(self, lines: Sequence[str], *, run: object = None) -> None:
        self.lines = tuple(lines)
        self.run = run
        super().__init__("; ".join(self.lines))


class TargetLoadError(VerdryxError):
    """`module:callable` does not name a callable; the message names the spec and why.
    A usage error in effect: raised before any case runs."""


class TargetResultError(VerdryxError):
    """A target returned something that is not a result; one line, naming the field."""


class TargetCallError(VerdryxError):
    """A target call produced no output; the message is the call's one-line error."""
