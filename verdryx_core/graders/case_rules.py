"""What the load rules of the graders share: `CaseProblem`, which a grader's
`check_case(case)` raises (docs/graders.md, "Graders from add-ons"), built in or plugged in
alike, and the checks of an expectation, a JSON Schema and offered tools.

`verdryx_core.evalsets.rules` runs the rules every case shares, then those of the grader the
case names (`verdryx_core.graders.registry.grader_rules`)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from verdryx_core.errors import VerdryxError

__all__ = [
    "TOOL_NAME",
    "CaseProblem",
    "check_json_schema",
    "check_tools",
    "json_text",
    "require_expected",
    "text_expectation",
]

#: Anthropic's rule for tool names, and a dot: a dotted name (`math.factorial`, common in
#: function-calling benchmarks) is fine where no provider is asked (a target, a recorded
#: output); a case that asks the model refuses it then (`evaluation/sources.py`).
TOOL_NAME: Final = re.compile(r"^[a-zA-Z0-9_.-]{1,64}$")


class CaseProblem(VerdryxError):
    """A case a grader refuses at load: `field` names the field at fault."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message)


def require_expected(case: Mapping[str, Any], grader: str) -> None:
    """A grader that compares the output with the case's `expected` needs one."""
    if "expected" not in case:
        raise CaseProblem("expected", f"grader {grader!r} requires the field 'expected'")


def text_expectation(case: Mapping[str, Any], grader: str) -> None:
    """The expectation, when given, is text."""
    expected = case.get("expected")
    if expected is not None and not isinstance(expected, str):
        raise CaseProblem(
            "expected", f"expected string for grader {grader!r}, got {type(expected).__name__}"
        )


def check_json_schema(schema: Any, field: str) -> None:
    import jsonschema  # only for a case that offers tools: most eval sets never need it

    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise CaseProblem(field, f"not a valid JSON Schema: {exc.message}") from None


def check_tools(tools: Sequence[Any], field: str) -> list[str]:
    """The names of the tools offered, each checked (a name, once, and an input schema)."""
    names: list[str] = []
    for index, tool in enumerate(tools):
        where = f"{field}[{index}]"
        name = tool.get("name")
        if not isinstance(name, str):
            raise CaseProblem(f"{where}.name", "required but missing; a tool has a string 'name'")
        if not TOOL_NAME.match(name):
            raise CaseProblem(
                f"{where}.name",
                f"{name!r} is not a usable tool name: 1 to 64 letters, digits, '_', '-' or '.'",
            )
        if name in names:
            raise CaseProblem(f"{where}.name", f"tool {name!r} is offered twice")
        if "input_schema" not in tool:
            hint = (
                " ('parameters' is the OpenAI shape; rename it to 'input_schema')"
                if "parameters" in tool
                else ""
            )
            raise CaseProblem(f"{where}.input_schema", f"required but missing{hint}; add it")
        if not isinstance(tool["input_schema"], Mapping):
            raise CaseProblem(
                f"{where}.input_schema", "expected object, a JSON Schema of the input"
            )
        names.append(name)
    return names


def json_text(value: Any) -> str:
    """A JSON expectation as its canonical text (keys sorted)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
