"""Custom graders: registered in code (a `conftest.py` calls `register_grader`) or installed
through the `verdryx.graders` entry point group, and usable by name in eval set files.

Entry points are listed lazily (on the first name that is not a built-in) and loaded only
when a case uses them. A custom grader has the built-in shape, `grade(case, output, context)`,
and may answer a `Grade`, a number in [0, 1] or a bool; anything else is an error naming
the grader and the case, never a made-up score.

Every grader's load rules, a built-in's as a plugged-in one's, are found here by its name
(`grader_rules`, `case_problem`, `accepted_options`; verdryx_core.graders.plugins lists what
a grader may declare), importing only the grader named.
"""

from __future__ import annotations

import contextvars
import importlib
import math
import re
import threading
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from typing import Any, ClassVar, Final, final

from verdryx_core.cases import CHECKS_GRADER, GRADER_KINDS, EvalCase, declare_model_free
from verdryx_core.errors import GraderError, VerdryxError
from verdryx_core.graders.base import Grade, GradeContext, Grader
from verdryx_core.graders.case_rules import CaseProblem
from verdryx_core.limits import cost_problem, token_problem

__all__ = [
    "ENTRY_POINT_GROUP",
    "accepted_options",
    "case_problem",
    "check_installed_graders",
    "checked_grader",
    "custom_grader_names",
    "default_min_score",
    "grader_rules",
    "grader_source",
    "installed_grader_names",
    "is_grader",
    "load_custom_grader",
    "refresh_entry_points",
    "register_grader",
    "registered_grader_names",
    "unregister_grader",
]

ENTRY_POINT_GROUP: Final = "verdryx.graders"


_NAME: Final = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True, slots=True)
class _Registered:
    make: Callable[[], Any]
    default_min_score: float | None
    #: What was registered (a grader, a class or a factory), unbuilt.
    source: Any = None


_lock = threading.Lock()
_registered: dict[str, _Registered] = {}
_loaded: dict[str, Grader] = {}
#: Entry points loaded so far (the object each names, unbuilt).
_sources: dict[str, Any] = {}


def register_grader(
    name: str,
    grader: Any,
    *,
    default_min_score: float | None = None,
    replace: bool = False,
) -> None:
    """Make `grader` usable as `"grader": name` in eval set files (and in `checks`).

    `grader` is an object with `grade(case, output, context)`, or a class / zero-argument
    factory returning one (built on first use). `default_min_score` is its own pass bar.
    """
    _check_name(name)
    if default_min_score is not None and not _unit(default_min_score):
        raise GraderError(
            f"grader {name!r}: default_min_score {default_min_score!r} is not a number in [0, 1]"
        )
    if not callable(getattr(grader, "grade", None)) and not callable(grader):
        raise GraderError(
            f"grader {name!r}: {grader!r} has no grade(case, output, context) method and is not "
            "a class or factory building one"
        )
    with _lock:
        if name in _registered and not replace:
            raise GraderError(
                f"grader {name!r} is already registered; pass replace=True to replace it"
            )
        _registered[name] = _Registered(_maker(grader), default_min_score, grader)
        if getattr(grader, "model_free", False):
            declare_model_free(name)
        _loaded.pop(name, None)


def unregister_grader(name: str) -> None:
    """Forget a grader registered in code (tests register and unregister their own)."""
    with _lock:
        _registered.pop(name, None)
        _loaded.pop(name, None)


def registered_grader_names() -> tuple[str, ...]:
    """The graders registered in code (`register_grader`), sorted."""
    with _lock:
        return tuple(sorted(_registered))


def installed_grader_names() -> tuple[str, ...]:
    """The graders installed through entry points (verdryx's own add-ons among them), sorted,
    less those a registration in code overrides."""
    with _lock:
        registered = set(_registered)
    return tuple(sorted(set(_entry_points()) - registered))


def custom_grader_names() -> tuple[str, ...]:
    """Registered in code, then installed entry points, each name once, sorted."""
    with _lock:
        names = set(_registered)
    return tuple(sorted(names | set(_entry_points())))


def is_grader(name: str) -> bool:
    """Whether an eval set may name this grader: a built-in, registered or installed."""
    if name in GRADER_KINDS:
        return True
    with _lock:
        if name in _registered:
            return True
    return name in _entry_points()


def default_min_score(grader: str) -> float | None:
    """The grader's own pass bar, or None when the run's `--verdryx-min-score` applies.

    Built-in: `tool_trace` 1.0 (a trace passes only when right); every other built-in None.
    A custom grader's is the `default_min_score` it was registered with, or its
    `default_min_score` attribute (entry points)."""
    if grader in GRADER_KINDS or grader == CHECKS_GRADER:
        return _builtin_min_score(grader)
    with _lock:
        entry = _registered.get(grader)
    if entry is not None and entry.default_min_score is not None:
        return entry.default_min_score
    if not is_grader(grader):
        return None
    # Read off what was registered first: a grader built per run (`for_run`) is never built
    # here, without the run's settings.
    source = grader_source(grader)
    bar = getattr(source, "default_min_score", None)
    if bar is None and not hasattr(source, "for_run"):
        bar = getattr(load_custom_grader(grader), "default_min_score", None)
    return float(bar) if bar is not None and _unit(bar) else None


def _builtin_min_score(grader: str) -> float | None:
    """A built-in grader's own pass bar (its class's `default_min_score`), where it has one.
    A grader's module is imported when asked about that grader, whose cases import it anyway."""
    if grader == CHECKS_GRADER:
        return None
    bar = getattr(grader_rules(grader), "default_min_score", None)
    return None if bar is None else float(bar)


def load_custom_grader(name: str) -> Grader:
    """The custom grader named `name`, built once; GraderError when there is none."""
    with _lock:
        found = _loaded.get(name)
        entry = _registered.get(name)
    if found is not None:
        return found
    if entry is not None:
        built = entry.make()
    else:
        source = grader_source(name)
        if source is None:
            raise GraderError(
                f"no grader named {name!r}: register it with "
                "verdryx_core.graders.register_grader or install a package that provides it "
                f"(entry point group {ENTRY_POINT_GROUP!r})"
            )
        try:
            built = _maker(source)()
        except Exception as exc:
            raise GraderError(f"grader {name!r}: building {source!r} failed: {exc}") from exc
    checked = checked_grader(name, built)
    with _lock:
        return _loaded.setdefault(name, checked)


def checked_grader(name: str, built: Any) -> Grader:
    """`built` held to the built-in rules (see `_Checked`); GraderError when it has no
    `grade` method."""
    if not callable(getattr(built, "grade", None)):
        raise GraderError(f"grader {name!r}: {built!r} has no grade(case, output, context)")
    return _Checked(name, built)


def grader_source(name: str) -> Any | None:
    """What makes the custom grader `name`, unbuilt: the object given to `register_grader`,
    or the one its entry point names (loaded once); None when there is no such grader."""
    with _lock:
        entry = _registered.get(name)
        if entry is not None:
            return entry.source
        if name in _sources:
            return _sources[name]
    point = _entry_points().get(name)
    if point is None:
        return None
    try:
        loaded = point.load()
    except Exception as exc:
        raise GraderError(
            f"grader {name!r}: loading entry point {point.value!r}{_from(point)} failed: "
            f"{_one_line(exc)}"
        ) from exc
    if not callable(getattr(loaded, "grade", None)) and not callable(loaded):
        # Refused where it is first named (an eval set's load), not when a case is graded.
        raise GraderError(
            f"grader {name!r}: entry point {point.value!r}{_from(point)} names "
            f"{_shown(loaded)}, which has no grade(case, output, context) method and is not a "
            "class or factory building one"
        )
    if getattr(loaded, "model_free", False):
        # Its cases read their output from the world (verdryx_core.graders.plugins).
        declare_model_free(name)
    with _lock:
        return _sources.setdefault(name, loaded)


#: Where each built-in grader's class is (`module:class`), imported when a case names it.
_BUILT_IN: Final[Mapping[str, str]] = {
    "exact": "verdryx_core.graders.exact:ExactGrader",
    "regex": "verdryx_core.graders.regex:RegexGrader",
    "outcome_tag": "verdryx_core.graders.outcome_tag:OutcomeTagGrader",
    "llm_judge": "verdryx_core.judge.grader:LLMJudgeGrader",
    "tool_trace": "verdryx_core.graders.tool_trace:ToolTraceGrader",
    "contains": "verdryx_core.graders.contains:ContainsGrader",
    "icontains": "verdryx_core.graders.contains:IContainsGrader",
    "json": "verdryx_core.graders.json_output:JsonGrader",
    "numeric": "verdryx_core.graders.numeric:NumericGrader",
    "f1": "verdryx_core.graders.f1:F1Grader",
    "exec": "verdryx_core.graders.execution:ExecGrader",
    "final_state": "verdryx_core.graders.final_state:FinalStateGrader",
}
#: What a plugged-in grader's case takes for options: its own `options` object.
_PLUGGED_IN_OPTIONS: Final = frozenset({"options"})


def grader_rules(name: str) -> Any | None:
    """What declares the load rules of the grader `name` (unbuilt): a built-in's class, or
    the plugged-in grader's class or registered object; None for an unknown name."""
    if name not in _BUILT_IN:
        return grader_source(name)
    return _built_in_class(name)


@cache
def _built_in_class(name: str) -> Any:
    # Asked for twice a case when an eval set loads: the import machinery's lookup is paid
    # once a kind, not once a case.
    module, _, attribute = _BUILT_IN[name].partition(":")
    return getattr(importlib.import_module(module), attribute)


def accepted_options(name: str) -> frozenset[str]:
    """The option fields a case (or check) of the grader `name` may set."""
    if name in _BUILT_IN:
        return frozenset(getattr(grader_rules(name), "options", ()))
    return _PLUGGED_IN_OPTIONS


def case_problem(name: str, case: dict[str, Any]) -> CaseProblem | None:
    """What the grader `name` refuses in `case` (set defaults applied), if anything. A
    built-in may normalise the case in place (its expectation as JSON text)."""
    check = getattr(grader_rules(name), "check_case", None)
    if check is None:
        return None
    try:
        check(case)
    except CaseProblem as problem:
        return problem
    return None


def refresh_entry_points() -> None:
    """Read installed entry points again (after installing a package in the same process)."""
    _entry_points.cache_clear()
    _installed_clash.cache_clear()
    with _lock:
        _loaded.clear()
        _sources.clear()


@cache
def _entry_points() -> Mapping[str, metadata.EntryPoint]:
    # A built-in's name is never a plugged-in grader (`check_installed_graders` refuses it).
    return {
        point.name: point
        for point in metadata.entry_points(group=ENTRY_POINT_GROUP)
        if point.name not in GRADER_KINDS and point.name != CHECKS_GRADER
    }


def check_installed_graders() -> None:
    """At start: no installed entry point takes a built-in grader's name (the built-in would
    silently win over it) and no two installed packages declare one name differently (one of
    them would silently lose). Raises GraderError naming the packages; listed once a process
    (`refresh_entry_points` lists again)."""
    problem = _installed_clash()
    if problem is not None:
        raise GraderError(problem)


@cache
def _installed_clash() -> str | None:
    seen: dict[str, metadata.EntryPoint] = {}
    for point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if point.name in GRADER_KINDS or point.name == CHECKS_GRADER:
            return (
                f"grader {point.name!r} of entry point {point.value!r}{_from(point)} has the "
                "name of a built-in grader, which every eval set naming it gets instead; "
                f"rename the entry point (group {ENTRY_POINT_GROUP!r}) or uninstall the package"
            )
        other = seen.setdefault(point.name, point)
        if other.value != point.value:
            return (
                f"grader {point.name!r} is declared twice: by entry point {other.value!r}"
                f"{_from(other)} and by {point.value!r}{_from(point)}; uninstall one, or "
                "rename its entry point"
            )
    return None


def _from(point: metadata.EntryPoint) -> str:
    """` (package NAME VERSION)`: who installed the entry point, when importlib knows."""
    dist = getattr(point, "dist", None)
    if dist is None:
        return ""
    return f" (package {dist.name} {dist.version})"


def _shown(value: Any) -> str:
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    return f"{text} (of type {type(value).__name__})"


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
        raise GraderError(
            f"grader name {name!r} is not usable: a letter, then letters, digits, '_', '.' or "
            "'-' (at most 64)"
        )
    if name in GRADER_KINDS or name == CHECKS_GRADER:
        raise GraderError(f"grader name {name!r} is a built-in grader; choose another name")


def _maker(grader: Any) -> Callable[[], Any]:
    if callable(getattr(grader, "grade", None)) and not isinstance(grader, type):
        return lambda: grader
    return grader  # a class or factory


def _unit(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0.0 <= value <= 1.0
    )


@final
class _Checked:
    """A custom grader held to the built-in rules: its answer is a Grade with a value in
    [0, 1] (or unmeasured with a reason)."""

    kind: ClassVar[str] = "custom"

    def __init__(self, name: str, grader: Any) -> None:
        self.name = name
        self.grader = grader
        self.default_min_score = getattr(grader, "default_min_score", None)
        #: Grading calls a service (verdryx_core.graders.plugins): worth a slot in the pool.
        self.remote = bool(getattr(grader, "remote", False))
        self.calls = str(getattr(grader, "calls", "grader calls"))

    def __repr__(self) -> str:
        return f"custom grader {self.name!r} ({self.grader!r})"

    def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Grade:
        # Imported with the first custom grade: a run of built-in graders never bounds a call.
        from verdryx_core.graders.bounded import CallTimedOut, call_within

        call = contextvars.copy_context().run
        try:
            answer = call_within(
                lambda: call(self.grader.grade, case, output, context), context.timeout_s
            )
        except CallTimedOut:
            raise GraderError(
                f"custom grader {self.name!r} took longer than the call timeout "
                f"({context.timeout_s:g} s) for case {case.id!r}; it was abandoned",
                hint="make it return sooner, or raise {timeout}",
            ) from None
        except VerdryxError:
            raise
        except Exception as error:
            raise GraderError(
                f"custom grader {self.name!r} raised {_one_line(error)} for case {case.id!r}"
                f"{_where(error)}"
            ) from error
        if isinstance(answer, Grade):
            if answer.value is None and not answer.unmeasured:
                raise self._bad(case, "an unmeasured Grade without a reason")
            if answer.value is not None and not _unit(answer.value):
                raise self._bad(case, f"value {answer.value!r}")
            if answer.failed_by_output is not None and (
                answer.value != 0.0 or not isinstance(answer.failed_by_output, str)
            ):
                # Grade.output_failure(reason): what could not be graded scores 0.
                raise self._bad(case, f"a Grade failed by its output with value {answer.value!r}")
            # One grader's calls, bounded as a target's (verdryx_core/limits.py).
            for field, problem in (
                ("tokens", token_problem(answer.tokens)),
                ("cost_usd", cost_problem(answer.cost_usd)),
            ):
                if problem is not None:
                    raise self._bad(case, f"a Grade whose {field} {problem}")
            return answer
        if isinstance(answer, bool):
            return Grade(value=1.0 if answer else 0.0)
        if _unit(answer):
            return Grade(value=float(answer))
        raise self._bad(case, repr(answer))

    def _bad(self, case: EvalCase, what: str) -> GraderError:
        return GraderError(
            f"custom grader {self.name!r} answered {what} for case {case.id!r}; a grader answers "
            "a Grade (value in [0, 1], or unmeasured with a reason), a number in [0, 1] or a bool"
        )


def _one_line(error: BaseException) -> str:
    """`KeyError: 'nope'`: the exception's type and its first line."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def _where(error: BaseException) -> str:
    """` (at conftest.py:8)`: the line that raised, which is all a one-line error can point at."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return ""
    last = frames[-1]
    return f" (at {last.filename}:{last.lineno})"
