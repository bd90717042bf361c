"""The graders of one run, by kind: the built-ins configured for it, then graders that plug
in (the add-ons', installed packages', those registered in code)."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Final

from verdryx_core.cases import CHECKS_GRADER, GRADER_KINDS
from verdryx_core.errors import CLI_FLAGS, VerdryxError
from verdryx_core.graders.base import Grader
from verdryx_core.graders.plugins import GraderUnavailable
from verdryx_core.graders.registry import grader_rules, is_grader, load_custom_grader

if TYPE_CHECKING:
    from verdryx_core.llm.base import ModelAdapter

__all__ = ["GraderTable", "PlugIn", "build_graders"]

#: Built-in kinds never resolve to a custom grader, configured for this run or not (an
#: unconfigured llm_judge stays "missing", with its reason).
_BUILTIN_NAMES = frozenset(GRADER_KINDS)

#: The built-in kinds whose grader takes some of the run's settings; every other one is
#: built from its class alone (`graders/registry.py`, where each built-in is found) when a
#: case first uses the kind.
_BUILT_WITH_SETTINGS: Final = frozenset({"outcome_tag", "exec", "llm_judge"})

#: How a run builds a plugged-in grader by name (verdryx_core.graders.plugins, `for_run`);
#: raises GraderUnavailable when the run's settings do not configure it.
PlugIn = Callable[[str], Grader]


class GraderTable(dict[str, Grader]):
    """The graders of one run: the built-ins configured for it, then graders that plug in
    (registered or installed). Each is built the first time a case uses it.

    A plain dict underneath, so looking up a grader already used (every case does) costs no
    Python call; `table[name]` builds or loads one on a miss; `find` and `has` never raise."""

    def __init__(
        self,
        builtins: Mapping[str, Callable[[], Grader]],
        flags: Mapping[str, str] = CLI_FLAGS,
        *,
        plug_in: PlugIn = load_custom_grader,
    ) -> None:
        super().__init__()
        self._builtins = {**builtins, CHECKS_GRADER: self._checks}
        self._plug_in = plug_in
        self._flags = flags
        #: Plugged-in graders this run cannot use, and why (in the face's words).
        self._unavailable: dict[str, str] = {}

    def _checks(self) -> Grader:
        from verdryx_core.graders.checks import ChecksGrader

        return ChecksGrader(self, self._flags)

    def __missing__(self, name: str) -> Grader:
        make = self._builtins.get(name)
        if make is not None:
            grader = self[name] = make()
            return grader
        # A built-in kind never resolves to a custom grader: an unconfigured llm_judge stays
        # "missing", with its reason.
        if name in _BUILTIN_NAMES or name in self._unavailable or not is_grader(name):
            raise KeyError(name)
        try:
            grader = self[name] = self._plug_in(name)
        except GraderUnavailable as exc:
            self._unavailable[name] = exc.worded(self._flags)
            raise KeyError(name) from None
        return grader

    def find(self, name: str) -> Grader | None:
        """The grader named `name` for this run, or None when it is not available (or cannot
        be built: its cases report why when they are scored)."""
        try:
            return self[name]
        except (KeyError, VerdryxError):
            return None

    def prepare(self, names: Iterable[str]) -> None:
        """Build the graders of `names` now, once, rather than in whichever case comes first;
        one that cannot be built is left for its cases to report."""
        for name in names:
            with contextlib.suppress(KeyError, VerdryxError):
                self[name]

    def has(self, name: str) -> bool:
        """Whether a case naming `name` gets a grader (without building or loading it)."""
        if name in self or name in self._builtins:
            return True
        if name in self._unavailable:
            return False
        return name not in _BUILTIN_NAMES and is_grader(name)

    def missing_reason(self, name: str) -> str:
        """Why a case naming `name` is skipped, naming the face's flag that enables it."""
        from verdryx_core.graders.missing import missing_grader_reason

        return self._unavailable.get(name) or missing_grader_reason(name, self._flags)


def build_graders(
    *,
    outcome_map: Mapping[str, float] | None = None,
    judge: ModelAdapter | None = None,
    flags: Mapping[str, str] = CLI_FLAGS,
    plug_in: PlugIn = load_custom_grader,
    unsafe_exec: bool = False,
    exec_disk_mib: int = 256,
) -> GraderTable:
    """The graders for one run. Graders that cost money (the LLM judge; plugged-in ones such
    as the typed verdict service) are present only when configured: nothing is paid by
    default. `plug_in` builds the graders that plug in (default: as registered)."""
    # Each kind's module is imported when a case first uses the kind (`GraderTable`).
    graders: dict[str, Callable[[], Grader]] = {
        name: functools.partial(_built_in, name)
        for name in GRADER_KINDS
        if name not in _BUILT_WITH_SETTINGS
    }
    graders["outcome_tag"] = lambda: _outcome_tag(outcome_map)
    graders["exec"] = lambda: _exec_grader(unsafe_exec, flags, exec_disk_mib)
    if judge is not None:

        def llm_judge() -> Grader:
            from verdryx_core.judge.grader import LLMJudgeGrader

            return LLMJudgeGrader(judge)

        graders["llm_judge"] = llm_judge
    return GraderTable(graders, flags, plug_in=plug_in)


def _built_in(name: str) -> Grader:
    make = grader_rules(name)
    assert make is not None, name  # a built-in kind is always found
    built: Grader = make()
    return built


def _outcome_tag(outcome_map: Mapping[str, float] | None) -> Grader:
    from verdryx_core.graders.outcome_tag import OutcomeTagGrader

    return OutcomeTagGrader(outcome_map)


def _exec_grader(unsafe: bool, flags: Mapping[str, str], disk_mib: int) -> Grader:
    # A run without exec cases never looks for a sandbox either.
    from verdryx_core.graders.execution import ExecGrader

    return ExecGrader(unsafe=unsafe, flags=flags, disk_mib=disk_mib)
