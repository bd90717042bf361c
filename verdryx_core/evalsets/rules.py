"""The eval set rules a JSON Schema cannot say, and the set's `defaults` applied to cases.

`effective_case` merges the defaults into a case; `check_case` checks the merged case and
returns it normalised for `EvalCase.from_dict` (a numeric or JSON expectation as its JSON
text). Each failure is one `EvalSetError` naming the file, the line, the case and the field.
"""

from __future__ import annotations

import json
import math
import random
import re
import string
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from verdryx_core.cases import GRADER_KINDS, OPTION_FIELDS
from verdryx_core.errors import EvalSetError
from verdryx_core.evalsets.conversation import check_messages, check_user
from verdryx_core.evalsets.workspace import resolve_workspace
from verdryx_core.graders.plugins import case_problem, field_owners, usable_in_checks
from verdryx_core.graders.registry import (
    installed_grader_names,
    is_grader,
    registered_grader_names,
)
from verdryx_core.graders.text import TEXT_OPTIONS, normalize
from verdryx_core.untrusted.json_input import item_label, parse_json
from verdryx_core.untrusted.text import first_hidden_character

__all__ = ["OPTIONS_BY_GRADER", "check_case", "check_defaults", "effective_case", "id_problem"]

#: Which options each built-in grader takes; a custom grader takes `options`.
OPTIONS_BY_GRADER: Final[Mapping[str, frozenset[str]]] = {
    "exact": frozenset(TEXT_OPTIONS),
    "contains": frozenset(TEXT_OPTIONS),
    "icontains": frozenset(TEXT_OPTIONS),
    "json": frozenset({"schema", "fields"}),
    "numeric": frozenset({"tolerance", "relative"}),
    # The text options compare string arguments (docs/graders.md, "Tool traces").
    "tool_trace": frozenset({"argument_match", "tool_match", "check_types", *TEXT_OPTIONS}),
    "exec": frozenset({"tests", "command", "timeout"}),
}
_CUSTOM_OPTIONS: Final = frozenset({"options"})
_TOOL_FIELDS: Final = ("tools", "expected_tools", "expected_tool_calls", "expected_tool_calls_any")
_EXPECTATIONS: Final = ("expected_tools", "expected_tool_calls", "expected_tool_calls_any")
#: Graders a check may not use: a check reads a part of the case's one output, and an
#: outcome tag is not an output.
_NOT_IN_CHECKS: Final = frozenset({"outcome_tag"})
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
_NEEDS_EXPECTED: Final = frozenset(
    {"exact", "regex", "contains", "icontains", "numeric", "f1", "final_state"}
)
#: Anthropic's rule for tool names, and a dot: a dotted name (`math.factorial`, common in
#: function-calling benchmarks) is fine where no provider is asked (a target, a recorded
#: output); a case that asks the model refuses it then (`evaluation/sources.py`).
TOOL_NAME: Final = re.compile(r"^[a-zA-Z0-9_.-]{1,64}$")


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


def _accepts(grader: str) -> frozenset[str]:
    if grader in GRADER_KINDS:
        return OPTIONS_BY_GRADER.get(grader, frozenset())
    return _CUSTOM_OPTIONS


def _apply_options(target: dict[str, Any], defaults: Mapping[str, Any], grader: str) -> None:
    accepted = _accepts(grader)
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
    if "tools" in defaults:
        _check_tools(defaults["tools"], lambda f, m: fail(f, m), "tools")
    if "schema" in defaults:
        _check_json_schema(defaults["schema"], lambda m: fail("schema", m))


def _check_tools(tools: Sequence[Any], fail: Any, field: str) -> list[str]:
    names: list[str] = []
    for index, tool in enumerate(tools):
        where = f"{field}[{index}]"
        name = tool.get("name")
        if not isinstance(name, str):
            raise fail(f"{where}.name", "required but missing; a tool has a string 'name'")
        if not TOOL_NAME.match(name):
            raise fail(
                f"{where}.name",
                f"{name!r} is not a usable tool name: 1 to 64 letters, digits, '_', '-' or '.'",
            )
        if name in names:
            raise fail(f"{where}.name", f"tool {name!r} is offered twice")
        if "input_schema" not in tool:
            hint = (
                " ('parameters' is the OpenAI shape; rename it to 'input_schema')"
                if "parameters" in tool
                else ""
            )
            raise fail(f"{where}.input_schema", f"required but missing{hint}; add it")
        if not isinstance(tool["input_schema"], Mapping):
            raise fail(f"{where}.input_schema", "expected object, a JSON Schema of the input")
        names.append(name)
    return names


def _check_json_schema(schema: Any, fail: Any) -> None:
    import jsonschema  # only for a case that offers tools: most eval sets never need it

    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise fail(f"not a valid JSON Schema: {exc.message}") from None


def _expected_text(grader: str, expected: Any, fail: Any, field: str) -> str | None:
    """The expectation as the grader reads it, or an error naming what was expected."""
    if expected is None:
        return None
    if grader == "numeric":
        if isinstance(expected, bool):
            raise fail(field, "expected a number, got a boolean")
        if isinstance(expected, int | float):
            return json.dumps(expected)
        try:
            number = float(str(expected))
        except ValueError:
            raise fail(field, f"grader 'numeric' expects a number, got {expected!r}") from None
        if not math.isfinite(number):
            raise fail(field, f"grader 'numeric' expects a finite number, got {expected!r}")
        return str(expected).strip()
    if grader == "json":
        if isinstance(expected, str):
            try:
                # As the grader reads an output: a key given twice is not one value.
                parse_json(expected, unique_keys=True)
            except ValueError as exc:
                raise fail(
                    field,
                    f"a string expectation of grader 'json' is JSON text, and this is not ({exc})",
                ) from None
            return expected
        return json.dumps(expected, ensure_ascii=False, sort_keys=True)
    if grader == "final_state":  # any JSON value: the end state (a string: its JSON text)
        if isinstance(expected, str):
            try:
                expected = parse_json(expected, unique_keys=True)
            except ValueError as exc:
                raise fail(
                    field,
                    "a string expectation of grader 'final_state' is JSON text (a CSV cell "
                    f"is text), and this is not ({exc})",
                ) from None
        return json.dumps(expected, ensure_ascii=False, sort_keys=True)
    if grader in GRADER_KINDS and not isinstance(expected, str):
        raise fail(field, f"expected string for grader {grader!r}, got {type(expected).__name__}")
    return expected if isinstance(expected, str) else json.dumps(expected, ensure_ascii=False)


#: Outputs unlike one another: every printable ASCII character, lines, other scripts, digits,
#: and random text (seeded: the same probes every run).
_PROBES: Final = (
    "",
    "x",
    "\n\n",
    string.printable,
    "\u00e9\u6f22\u0416\n second line \U0001f600",
    "0123456789" * 4,
    *(
        "".join(random.Random(seed).choices(string.printable + "\u00e9\u6f22\u2028", k=64))
        for seed in range(3)
    ),
)
#: The stdlib syntax (`compile_pattern` takes only what `re` reads) that looks at the text
#: around where a match starts, by what it looks at.
_BEFORE: Final = re.compile(r"\^|\(\?<[=!]")  # `^`, a lookbehind
_AFTER: Final = re.compile(r"\$|\(\?[=!]")  # `$`, a lookahead
_ATOMIC: Final = re.compile(r"\(\?>|[*+?}]\+")  # no backtracking into it


def _context_syntax(pattern: str) -> frozenset[str]:
    """What in `pattern` reads the text around a match: `before` (`^`, `\\A`, a lookbehind),
    `after` (`$`, `\\Z`, a lookahead), `boundary` (`\\b`, `\\B`: the characters on both
    sides), `atomic` (an atomic group or a possessive quantifier). Read off the text with
    escapes taken whole and character classes not told apart, so it may find more than the
    pattern has (`[$]`), never less: finding more only ever keeps a pattern."""
    plain: list[str] = []
    escaped: set[str] = set()
    chars = iter(pattern)
    for char in chars:
        if char == "\\":
            escaped.add(next(chars, ""))
            plain.append("_")
        else:
            plain.append(char)
    text = "".join(plain)
    found = set()
    if _BEFORE.search(text) or "A" in escaped:
        found.add("before")
    if _AFTER.search(text) or "Z" in escaped:
        found.add("after")
    if escaped & {"b", "B"}:
        found.add("boundary")
    if _ATOMIC.search(text):
        found.add("atomic")
    return frozenset(found)


def _matches_anything(pattern: Any) -> bool:
    """Whether `pattern` finds a match in every output, so its case can never fail. Decided by
    proof, never guessed from samples (`^(?!.*secret)` matches every probe, and a case may
    rightly require it): the pattern matches the empty output, and

    - nothing in it reads the text before where a match starts (`^`, a lookbehind, `\\b`):
      then it matches at the end of every output, where it sees what it saw in the empty
      one (`.*`, `x*`, `(?:)`, `$|x`, `(?=)`, `(?=.*)`, `(?!x)`); or
    - nothing in it reads the text after (`$`, a lookahead, `\\b`) nor stops backtracking:
      then it matches at the start of every output, as in the empty one (`^`, `^.*`); or
    - what it reads around the start is only `\\b` / `\\B` besides `^` and lookbehinds:
      then what it sees there is whether the output starts with a word character, a
      non-word character or nothing, and it matches emptily there in all three (`\\b|\\B`).

    Each proof is checked against the probes too (the empty output, varied and random text):
    a pattern that misses one is kept, whatever its syntax looked like."""
    syntax = _context_syntax(pattern.pattern)
    try:
        if pattern.match("", timeout=1.0) is None:
            return False
        at_end = not syntax & {"before", "boundary"}
        at_start = not syntax & {"after", "boundary", "atomic"}
        at_boundary = "boundary" in syntax and not syntax & {"after", "atomic"}
        if at_boundary:
            at_boundary = all(
                (found := pattern.match(start, timeout=1.0)) is not None and found.end() == 0
                for start in ("a", "-")
            )
        if not (at_end or at_start or at_boundary):
            return False
        return all(pattern.search(probe, timeout=1.0) is not None for probe in _PROBES)
    except TimeoutError:
        return False


def _check_grading(
    spec: dict[str, Any],
    grader: str,
    fail: Any,
    prefix: str,
    *,
    in_check: bool,
    expectation_optional: bool = False,
) -> None:
    """The rules one grader puts on its expectation and options (a case or a check)."""
    accepted = _accepts(grader)
    for name in OPTION_FIELDS:
        if name in spec and name not in accepted:
            owners = sorted(g for g, opts in OPTIONS_BY_GRADER.items() if name in opts)
            where = ", ".join(owners) if owners else "a custom grader"
            raise fail(f"{prefix}{name}", f"only valid with grader {where} (this is {grader!r})")
    if grader in _NEEDS_EXPECTED and "expected" not in spec and not expectation_optional:
        raise fail(f"{prefix}expected", f"grader {grader!r} requires the field 'expected'")
    spec["expected"] = _expected_text(grader, spec.get("expected"), fail, f"{prefix}expected")
    if spec["expected"] is None:
        del spec["expected"]
    if grader == "regex":
        # A grader's module comes with the first case naming it (verdryx_core.graders).
        from verdryx_core.graders.regex import compile_pattern

        try:
            pattern = compile_pattern(spec["expected"])
        except ValueError as exc:
            raise fail(f"{prefix}expected", str(exc)) from None
        if _matches_anything(pattern):
            raise fail(
                f"{prefix}expected",
                f"the pattern {spec['expected']!r} matches every output (even an empty one), "
                "so the case could never fail; give the pattern the output must match",
            )
    if grader in ("contains", "icontains"):
        options = spec if grader == "contains" else {**spec, "ignore_case": True}
        if normalize(spec["expected"], options) == "":
            shown = repr(spec["expected"])
            left = " once normalised by its options" if spec["expected"] else ""
            raise fail(
                f"{prefix}expected",
                f"{shown} is empty{left}: every output contains it, so the case could never "
                "fail; give the text the output must contain",
            )
    if grader == "llm_judge" and not spec.get("rubric"):
        raise fail(f"{prefix}rubric", "grader 'llm_judge' requires a non-empty 'rubric'")
    if "schema" in spec:
        _check_json_schema(spec["schema"], lambda m: fail(f"{prefix}schema", m))
    if grader == "exec":
        _check_exec(spec, fail, prefix, in_check=in_check)
    if in_check and "rubric" in spec and grader != "llm_judge":
        raise fail(f"{prefix}rubric", f"only valid with grader 'llm_judge' (this is {grader!r})")


def _check_exec(spec: Mapping[str, Any], fail: Any, prefix: str, *, in_check: bool) -> None:
    """An exec case (or check) runs `tests` or a `command`, exactly one; a test file named
    by path is read from the case's workspace (docs/workspaces-and-execution.md)."""
    given = [name for name in ("tests", "command") if name in spec]
    if not given:
        raise fail(
            f"{prefix}tests",
            "grader 'exec' requires 'tests' (Python test code, or a .py file in the "
            "workspace) or 'command' (an argv list)",
        )
    if len(given) > 1:
        raise fail(f"{prefix}command", "give one of 'tests' and 'command', not both")
    if "tests" in spec:
        tests = spec["tests"]
        if not isinstance(tests, str) or not tests.strip():
            raise fail(f"{prefix}tests", "expected non-empty text: test code, or a .py path")
        from verdryx_core.graders.execution import is_test_path

        if is_test_path(tests):
            if "workspace" not in spec and not in_check:
                raise fail(
                    f"{prefix}tests",
                    f"{tests.strip()!r} names a test file, and the case has no 'workspace' to "
                    "read it from; give the test code itself, or a workspace holding the file",
                )
            if Path(tests.strip()).is_absolute() or ".." in Path(tests.strip()).parts:
                raise fail(f"{prefix}tests", "a test file is a path inside the workspace")
    command = spec.get("command")
    if command is not None and (
        not isinstance(command, list)
        or not command
        or not all(isinstance(part, str) and part for part in command)
    ):
        raise fail(f"{prefix}command", "expected a non-empty list of non-empty strings (argv)")
    timeout = spec.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or not 0 < timeout <= 3600
    ):
        raise fail(f"{prefix}timeout", f"expected seconds in (0, 3600], got {timeout!r}")


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
    offered: list[str] | None = None
    if grader == "tool_trace":
        _check_tool_case(case, fail)
    else:
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
        offered = _check_tools(case["tools"], fail, "tools") if "tools" in case else None
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
            if kind in _NOT_IN_CHECKS or not usable_in_checks(kind, workspace="workspace" in case):
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
            # A plugged-in grader checks its own fields of a check as of a case of its own.
            refused_check = case_problem(kind, {**check, "id": case["id"], **_workspace_of(case)})
            if refused_check is not None:
                raise fail(f"{prefix}{refused_check.field}", str(refused_check))
            if kind == "tool_trace":
                _check_expectation(check, fail, prefix, offered)
            else:
                for name in _EXPECTATIONS:
                    if name in check:
                        raise fail(
                            f"{prefix}{name}",
                            f"only valid with grader 'tool_trace' (this check is {kind!r})",
                        )
            _check_grading(check, kind, fail, prefix, in_check=True)
    else:
        _check_grading(
            case,
            grader,
            fail,
            "",
            in_check=False,
            expectation_optional=custom and "grader" not in case,
        )
    # Graders that plug in check their own fields (the contracts add-on its `contract`).
    for field in case.keys() - _CORE_FIELDS:
        owner = field_owners().get(field)
        if owner is not None and grader != owner:
            raise fail(field, f"only valid with grader {owner!r} (this case is {grader!r})")
    refused = case_problem(grader, case)
    if refused is not None:
        raise fail(refused.field, str(refused))
    return case


def _workspace_of(case: Mapping[str, Any]) -> dict[str, Any]:
    """The case's workspace, for a check's own grader to know it has one (a contract check
    then keeps an evidence bundle)."""
    return {"workspace": case["workspace"]} if "workspace" in case else {}


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


def _check_tool_case(case: Mapping[str, Any], fail: Any) -> None:
    output = case.get("output")
    if output is not None and not isinstance(output, list):
        raise fail(
            "output",
            "a recorded tool_trace output is the list of calls made (names or {name, arguments})",
        )
    # No `tools` needed: a target owns its tools, and a recorded or custom case's calls were
    # made already. A case asked of the model without them is that case's error (sources.py).
    offered = _check_tools(case["tools"], fail, "tools") if "tools" in case else None
    wants_arguments = _check_expectation(case, fail, "", offered)
    if wants_arguments and isinstance(output, list) and any(isinstance(o, str) for o in output):
        raise fail(
            "output",
            "the recorded calls are names only, and the case expects arguments; record "
            "{name, arguments} objects, or expect names with 'expected_tools'",
        )


def _check_expectation(
    spec: Mapping[str, Any], fail: Any, prefix: str, offered: Sequence[str] | None
) -> bool:
    """A tool_trace case's (or check's) one expectation, each expected tool among those
    `offered` when tools are given; True when some expected call gives arguments."""
    if "expected" in spec:
        raise fail(
            f"{prefix}expected",
            "grader 'tool_trace' reads its expectation from 'expected_tools' (names) or "
            "'expected_tool_calls' (names and arguments), not 'expected'",
        )
    if spec.get("check_types") and offered is None:
        raise fail(
            f"{prefix}check_types",
            "arguments are checked against the tools' input_schema, and the case gives no "
            "'tools'; add them (the target still calls its own)",
        )
    given = [name for name in _EXPECTATIONS if name in spec]
    if not given:
        raise fail(
            f"{prefix}expected_tools",
            "grader 'tool_trace' requires the field 'expected_tools' (names) or "
            "'expected_tool_calls' (names and arguments) or 'expected_tool_calls_any'",
        )
    if len(given) > 1:
        raise fail(
            f"{prefix}{given[1]}",
            f"give one of {', '.join(_EXPECTATIONS)}, not both {given[0]!r} and it",
        )
    field = given[0]
    if field == "expected_tools":
        lists = [[(f"expected_tools[{i}]", name, None) for i, name in enumerate(spec[field])]]
    elif field == "expected_tool_calls":
        lists = [
            [
                (f"{field}[{i}].name", c["name"], c.get("arguments"))
                for i, c in enumerate(spec[field])
            ]
        ]
    else:
        lists = [
            [(f"{field}[{j}][{i}].name", c["name"], c.get("arguments")) for i, c in enumerate(seq)]
            for j, seq in enumerate(spec[field])
        ]
    wants_arguments = False
    for calls in lists:
        for where, name, arguments in calls:
            wants_arguments = wants_arguments or arguments is not None
            if offered is not None and name not in offered:
                raise fail(
                    f"{prefix}{where}",
                    f"tool {name!r} is expected but not offered in 'tools' "
                    f"(offered: {', '.join(offered)})",
                )
    return wants_arguments
