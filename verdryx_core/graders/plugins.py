"""What a grader that plugs in from outside the core may declare besides `grade`.

The add-ons (`contract`, `typed`) and any installed package plug graders in the same way:
by name, through `register_grader` or the `verdryx.graders` entry point group, and the core
never imports them. A plugged-in grader's class (or the object registered) may declare, as
attributes, what the core asks of every grader (docs/graders.md, "Graders from add-ons"):

    default_min_score: float   its own pass bar
    remote: bool               grading calls a service (prefetched, in the bounded pool)
    calls: str                 what those calls are called on the progress line and in the
                               summary ("judge calls", "sandbox runs"; default "grader calls")
    model_free: bool           its cases' outputs never come from the model under test
    in_checks: bool            False: it cannot be one check of a multi-check case
    in_workspace_checks: bool  True: it can be one all the same when the case has a
                               workspace (it reads the workspace, not the one output)
    fields: tuple[str, ...]    case fields that belong to it (refused on other cases)
    check_case(case) -> None   load-time checks of a case (raise CaseProblem)
    for_run(settings) -> grader  build it for one run from the run's settings (raise
                               GraderUnavailable when they do not configure it)
    after_save(store, run)     store what it keeps of a run, once the run is stored

A built-in grader declares its own load rules the same way, on its class (`check_case`,
`in_checks`, and the option fields it takes as `options`; a plugged-in grader's case takes
one `options` object): `verdryx_core.graders.registry.grader_rules` finds the class of the
grader a case names, importing only that one.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from verdryx_core.cases import GRADER_KINDS
from verdryx_core.errors import StoreError, VerdryxError, word_hint
from verdryx_core.graders.case_rules import CaseProblem
from verdryx_core.graders.registry import custom_grader_names, grader_rules, grader_source
from verdryx_core.untrusted.text import printable

if TYPE_CHECKING:
    from verdryx_core.runs import EvalRun
    from verdryx_core.store import Store

__all__ = [
    "AfterSaveFailed",
    "CaseProblem",
    "GraderUnavailable",
    "after_save",
    "field_owners",
    "plugin",
    "usable_in_checks",
]


class GraderUnavailable(VerdryxError):
    """A plugged-in grader this run's settings do not configure. `reason`, with `{setting}`
    placeholders the face words, is the unmeasured reason of the cases that name it."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)

    def worded(self, flags: Mapping[str, str]) -> str:
        return printable(word_hint(self.reason, flags), keep_newlines=False)


def plugin(name: str) -> Any | None:
    """The plugged-in grader `name` (its class or registered object, unbuilt), or None for a
    built-in or an unknown name. Loading it declares whether its cases need the model."""
    if name in GRADER_KINDS:
        return None
    return grader_source(name)


def usable_in_checks(name: str, *, workspace: bool = False) -> bool:
    """Whether `name` can be one check of a multi-check case (with a `workspace` or not)."""
    found = grader_rules(name)
    if found is None or bool(getattr(found, "in_checks", True)):
        return True
    return workspace and bool(getattr(found, "in_workspace_checks", False))


@cache
def field_owners() -> Mapping[str, str]:
    """Case field -> the installed grader it belongs to (loads every installed plugin once)."""
    owners: dict[str, str] = {}
    for name in custom_grader_names():
        try:
            found = plugin(name)
        except VerdryxError:
            continue  # a grader that cannot load is reported where a case names it
        for field in getattr(found, "fields", ()):
            owners[field] = name
    return owners


class AfterSaveFailed(Exception):
    """A plugged-in grader's `after_save` raised its own exception (a bug, not the store
    refusing a row): `name` is the grader, `line` says so in one line."""

    def __init__(self, name: str, line: str) -> None:
        super().__init__(line)
        self.name = name
        self.line = line


def after_save(store: Store, run: EvalRun, *, skip: Collection[str] = ()) -> None:
    """Each plugged-in grader of `run` but those in `skip` stores what it keeps of it (its
    own tables). The store refusing a row is a `StoreError`, as for the run's own rows (one
    transaction: neither is stored); any other exception of a grader's hook is
    `AfterSaveFailed` naming it, so the caller can store the run without that grader."""
    for name in sorted({score.grader for score in run.scores} - set(skip)):
        try:
            hook = getattr(plugin(name), "after_save", None)
            if hook is not None:
                hook(store, run)
        except StoreError:
            raise
        except Exception as exc:
            raise AfterSaveFailed(name, _hook_failed(name, exc)) from exc


def _hook_failed(name: str, exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    what = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    return printable(
        f"grader {name!r}: after_save raised {what}; the run is stored without what {name!r} "
        "keeps of it",
        keep_newlines=False,
    )
