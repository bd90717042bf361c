"""The eval set rules a JSON Schema cannot say, and the set's `defaults` applied to cases.

`effective_case` merges the defaults into a case; `check_case` checks the merged case and
returns it normalised for `EvalCase.from_dict` (a numeric or JSON expectation as its JSON
text). The rules here are those every case shares; each grader's own, built in or plugged
in, are its `check_case` (`verdryx_core.graders.registry.grader_rules`). Each failure is one
`EvalSetError` naming the file, the line, the case and the field.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from verdryx_core.cases import GRADER_KINDS, OPTION_FIELDS, TOOL_EXPECTATIONS
from verdryx_core.errors import EvalSetError
from verdryx_core.evalsets.conversation import check_messages, check_user
from verdryx_core.evalsets.workspace import resolve_workspace
from verdryx_core.graders.case_rules import CaseProblem, check_json_schema, check_tools
from verdryx_core.graders.plugins import field_owners, usable_in_checks
from verdryx_core.graders.registry import (
    accepted_options,
    case_problem,
    installed_grader_names,
    is_grader,
    registered_grader_names,
)
from verdryx_core.untrusted.json_input import item_label
from verdryx_core.untrusted.text import first_hidden_character

__all__ = ["check_case", "check_defaults", "effective_case", "id_problem"]

_TOOL_FIELDS: Final = ("tools", *TOOL_EXPECTATIONS)
#: The case fields the core reads itself; any other field belongs to a grader that plugs in.
_CORE_FIELDS: Final = frozenset(
    {
        "id",
        "description",
        "prompt",
        "grader",
        "expected",
        "rubric",
        "output",
        "min_score",
        "required",
        "cluster",
        "tags",
        "checks",
        "system",
        "messages",
        "metadata",
        "target",
        "aggregate",
        "user",
        "combine",
        "workspace",
        *_TOOL_FIELDS,
        *OPTION_FIELDS,
    }
)
#: What a failing rule raises: `fail(field, message)`, naming the file, case and line.
_Fail = Callable[[str, str], EvalSetError]


def id_problem(value: str) -> str | None:
    """Why `value` cannot be an id (of a case, an eval set, a custom case), or None.

    An id is shown in every listing (pytest's progress and `FAILED` lines, annotations, the
    summary, the CLI's tables) and cannot be escaped in all of them, so an id holding a
    control or format character (Unicode Cc, Cf, Zl, Zp: ESC, NUL, the C1 controls, a bidi
    override, a zero-width character) is refused where it is read (docs/evalset-reference.md).
    The schema's id pattern lists these characters for the Basic Multilingual Plane; this
    check covers the rest (the tag characters, for one)."""
    hidden = first_hidden_character(value)
    if hidden is None:
        return None
    return (
        f"{value!r} holds the control or format character '{hidden}', which would act on a "
        "terminal or hide what the id says wherever it is listed; remove it"
    )


def _apply_options(target: dict[str, Any], defaults: Mapping[str, Any], grader: str) -> None:
    accepted = accepted_options(grader)
    for name in OPTION_FIELDS:
        if name in defaults and name in accepted and name not in target:
            target[name] = defaults[name]


def effective_case(
    case: Mapping[str, Any], defaults: Mapping[str, Any], target: str | None
) -> dict[str, Any]:
    """The case with the set's defaults filled in where it sets nothing of its own. Options
    go only to cases (and checks) whose grader takes them, tools only to tool_trace cases."""
    merged = dict(case)
    if not defaults and target is None:
        return merged
    if "grader" not in merged and "checks" not in merged and "grader" in defaults:
        merged["grader"] = defaults["grader"]
    grader = merged.get("grader", "exact")
    for name in ("min_score", "system", "required", "workspace", "cluster", "aggregate"):
        if name in defaults:
            merged.setdefault(name, defaults[name])
    checks = merged.get("checks")
    traced = isinstance(checks, list) and any(
        isinstance(check, Mapping) and check.get("grader") == "tool_trace" for check in checks
    )
    if "tools" in defaults and (traced or (grader == "tool_trace" and checks is None)):
        merged.setdefault("tools", defaults["tools"])
    if isinstance(merged.get("checks"), list):
        checks = []
        for check in merged["checks"]:
            if isinstance(check, Mapping):
                check = dict(check)
                _apply_options(check, defaults, str(check.get("grader")))
            checks.append(check)
        merged["checks"] = checks
    else:
        _apply_options(merged, defaults, grader)
    if target is not None:
        merged.setdefault("target", target)
    return merged


def known_graders_text() -> str:
    """The graders a case may name: built in, installed (the add-ons'), registered in code."""
    text = ", ".join(GRADER_KINDS)
    installed = installed_grader_names()
    registered = registered_grader_names()
    if installed:
        text += f"; installed: {', '.join(installed)}"
    return text + (f"; registered: {', '.join(registered)}" if registered else "")


def check_defaults(defaults: Mapping[str, Any], path: str | Path, line: int | None) -> None:
    def fail(field: str, message: str) -> EvalSetError:
        return EvalSetError(path, message, field=f"defaults.{field}", line=line)

    grader = defaults.get("grader")
    if grader is not None and not is_grader(grader):
        raise fail("grader", f"{grader!r} is not a grader; expected one of {known_graders_text()}")
    try:
        if "tools" in defaults:
            check_tools(defaults["tools"], "tools")
        if "schema" in defaults:
            check_json_schema(defaults["schema"], "schema")
    except CaseProblem as problem:
        raise fail(problem.field, str(problem)) from None


def _check_grading(
    spec: dict[str, Any],
    grader: str,
    fail: _Fail,
    prefix: str,
    *,
    of_case: Mapping[str, Any] | None = None,
    expectation_optional: bool = False,
) -> None:
    """The options a grader takes, then the grader's own rules (its `check_case`), on a case
    or on a check of `of_case`. A check's grader reads it as a case of its own, with the
    case's id, workspace and tools."""
    accepted = accepted_options(grader)
    for name in OPTION_FIELDS:
        if name in spec and name not in accepted:
            owners = sorted(g for g in GRADER_KINDS if name in accepted_options(g))
            where = ", ".join(owners) if owners else "a custom grader"
            raise fail(f"{prefix}{name}", f"only valid with grader {where} (this is {grader!r})")
    # A custom case that names no grader needs no expectation until it grades.
    if not (expectation_optional and "expected" not in spec):
        view = dict(spec) if of_case is None else {**spec, **_seen_by_check(of_case)}
        problem = case_problem(grader, view)
        if problem is not None:
            raise fail(f"{prefix}{problem.field}", str(problem))
        if "expected" in view:
            spec["expected"] = view["expected"]
    expected = spec.get("expected")
    if expected is None:
        spec.pop("expected", None)
    elif not isinstance(expected, str):
        spec["expected"] = json.dumps(expected, ensure_ascii=False)
    if of_case is not None and "rubric" in spec and grader != "llm_judge":
        raise fail(f"{prefix}rubric", f"only valid with grader 'llm_judge' (this is {grader!r})")


def check_case(
    case: dict[str, Any], index: int, path: str | Path, line: int | None, *, custom: bool = False
) -> dict[str, Any]:
    """Check one case (defaults applied); returns it normalised for `EvalCase.from_dict`.

    A `custom` case (a test marked `@pytest.mark.verdryx`, docs/custom-cases.md) supplies its
    own output and may record a score of its own: when it names no grader, it needs no
    expectation until it grades."""
    label = item_label(case, index)

    def fail(field: str, message: str) -> EvalSetError:
        return EvalSetError(path, message, case=label, field=field, line=line)

    problem = id_problem(case["id"])
    if problem is not None:
        raise fail("id", problem)

    checks = case.get("checks")
    if checks is not None and "grader" in case:
        raise fail("checks", "a case has either 'grader' or 'checks', not both")
    grader = case.get("grader", "exact") if checks is None else "checks"
    if checks is None and not is_grader(grader):
        raise fail("grader", f"{grader!r} is not a grader; expected one of {known_graders_text()}")
    if "user" in case:
        check_user(case, fail)
    if "prompt" not in case and (grader == "outcome_tag" or "messages" not in case):
        why = "" if grader == "outcome_tag" else " (or give 'messages')"
        raise fail("prompt", f"required but missing{why}; add it")
    output = case.get("output")
    if "human_label" in case and not isinstance(output, str):
        raise fail(
            "human_label",
            "a human label judges the recorded output: give the case a text 'output', or "
            "keep the label in a labels file",
        )
    messages = case.get("messages")
    if messages:
        check_messages(messages, fail)
    if messages and output is None and messages[-1]["role"] not in ("user", "tool"):
        raise fail(
            f"messages[{len(messages) - 1}].role",
            "the last message must be from the user (or a tool's result) when no output is "
            "recorded (the model answers it)",
        )
    traced = checks is not None and any(check.get("grader") == "tool_trace" for check in checks)
    if grader != "tool_trace":
        for name in _TOOL_FIELDS:
            if name in case and not (traced and name == "tools"):
                if checks is not None and name != "tools":
                    raise fail(name, "a multi-check case sets it on its tool_trace check")
                raise fail(name, f"only valid with grader 'tool_trace' (this case is {grader!r})")
        if isinstance(output, list) and (grader in GRADER_KINDS or checks is not None):
            raise fail("output", f"a recorded output is a string for grader {grader!r}")
        if traced and output is not None:
            raise fail(
                "output",
                "a recorded output is text, and this case has a tool_trace check, which grades "
                "the tool calls made; record the calls in a tool_trace case of their own, or "
                "let a target or the model make them",
            )
        if "tools" in case:
            try:
                check_tools(case["tools"], "tools")
            except CaseProblem as refused:
                raise fail(refused.field, str(refused)) from None
    if "combine" in case and checks is None:
        raise fail("combine", "only valid on a multi-check case (one with 'checks')")
    if "workspace" in case:
        # Relative to the file the case was read from, wherever the run starts.
        case["workspace"] = resolve_workspace(case["workspace"], path, fail)
    if checks is not None:
        for name in OPTION_FIELDS:
            if name in case:
                raise fail(name, "a multi-check case sets options on each check, not on the case")
        for number, check in enumerate(checks):
            prefix = f"checks[{number}]."
            kind = check["grader"]
            if not is_grader(kind):
                raise fail(
                    f"{prefix}grader",
                    f"{kind!r} is not a grader; expected one of {known_graders_text()}",
                )
            if not usable_in_checks(kind, workspace="workspace" in case):
                raise fail(
                    f"{prefix}grader",
                    f"grader {kind!r} cannot be a check (checks grade parts of one output); "
                    "give it a case of its own"
                    + (
                        ", or give the case a 'workspace' for it to check"
                        if usable_in_checks(kind, workspace=True)
                        else ""
                    ),
                )
            _check_on(check, kind, fail, prefix, case)
            if "contract" in check and field_owners().get("contract") != kind:
                raise fail(
                    f"{prefix}contract",
                    f"only valid with grader {field_owners().get('contract', 'contract')!r} "
                    f"(this check is {kind!r})",
                )
            if kind != "tool_trace":
                for name in TOOL_EXPECTATIONS:
                    if name in check:
                        raise fail(
                            f"{prefix}{name}",
                            f"only valid with grader 'tool_trace' (this check is {kind!r})",
                        )
            _check_grading(check, kind, fail, prefix, of_case=case)
    else:
        _check_grading(case, grader, fail, "", expectation_optional=custom and "grader" not in case)
    # Graders that plug in check their own fields (the contracts add-on its `contract`).
    for field in case.keys() - _CORE_FIELDS:
        owner = field_owners().get(field)
        if owner is not None and grader != owner:
            raise fail(field, f"only valid with grader {owner!r} (this case is {grader!r})")
    return case


def _seen_by_check(case: Mapping[str, Any]) -> dict[str, Any]:
    """What a check's grader reads of its case: the id, the workspace (an exec check's test
    file is read from it; a contract check then keeps an evidence bundle) and the tools
    offered (a tool_trace check's expected tools are among them)."""
    return {name: case[name] for name in ("id", "workspace", "tools") if name in case}


def _check_on(
    check: Mapping[str, Any], kind: str, fail: Any, prefix: str, case: Mapping[str, Any]
) -> None:
    """A check's `on`: a part the result has (docs/scenarios.md, "Checks over the whole
    result"); tool_trace reads the calls, nothing else."""
    on = check.get("on")
    if on is None:
        return
    from verdryx_core.graders.check_parts import on_problem

    problem = on_problem(on)
    if problem is None and kind == "tool_trace" and on != "tool_calls":
        problem = f"a tool_trace check reads the tool calls ('on': 'tool_calls'), not {on!r}"
    if problem is None and on == "transcript" and case.get("user") is None:
        problem = (
            "'transcript' is a simulated dialogue's, and this case has no 'user'; read "
            "'output' (the reply) or give the case a user"
        )
    if problem is not None:
        raise fail(f"{prefix}on", problem)
