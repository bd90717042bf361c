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

from collections.abc import Iterator, Mapping, Sequence
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
    "addon_flag",
    "declare_addon_words",
    "located",
    "word_hint",
]


class _HintWords(Mapping[str, str]):
    """How one face names each setting a hint may point at: the table's settings
    (verdryx_core.settings_table, read on first use: this module is imported before
    anything else of the core, the table only when a hint is worded), then the options of
    the add-ons that declared their words (`declare_addon_words`)."""

    def __init__(self, face: str) -> None:
        self._face = face
        self._table: dict[str, str] | None = None

    def _settings(self) -> Mapping[str, str]:
        if self._table is None:
            from verdryx_core.settings_table import hint_words

            self._table = hint_words(self._face)
        return self._table

    def _words(self) -> Mapping[str, str]:
        return {**self._settings(), **_ADDON_WORDS[self._face]}

    def __getitem__(self, key: str) -> str:
        found = self._settings().get(key)
        return found if found is not None else _ADDON_WORDS[self._face][key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._words())

    def __len__(self) -> int:
        return len(self._words())


#: The add-on options a hint may name, by face (`declare_addon_words`).
_ADDON_WORDS: Final[Mapping[str, dict[str, str]]] = {"cli": {}, "python": {}}


def addon_flag(name: str) -> str:
    """How the command line spells the add-on option `name`: `--NAME`, dashes for `_`."""
    return "--" + name.replace("_", "-")


def declare_addon_words(name: str, *, python: str) -> None:
    """An add-on's option `name`, which its hints name as `{name}`: the command line spells
    it `--NAME` (verdryx_core.hooks, `AddonOption`), the Python API as `python` says (pytest
    lists the add-ons' options itself)."""
    _ADDON_WORDS["cli"][name] = addon_flag(name)
    _ADDON_WORDS["python"][name] = python


#: How the command line spells the settings a hint may name (the table's `--KEY` flags).
CLI_FLAGS: Final[Mapping[str, str]] = _HintWords("cli")

#: How the Python API spells the same settings (docs/python-api.md): a keyword argument of
#: the object or call that takes it, never a command-line flag. Hints read "pass {setting}
#: to ..." or "{setting} MODEL", so a switch is the argument set to True and a value is the
#: field it goes in.
PYTHON_FLAGS: Final[Mapping[str, str]] = _HintWords("python")


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
