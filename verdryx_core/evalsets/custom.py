"""A custom case's fields (a test's `@pytest.mark.verdryx(...)`), checked as an eval set
file's case is: the same schema and rules, so a field means the same in both places
(docs/custom-cases.md).

The test supplies the output, so the case needs no `tools` to ask a model with; a case that
names no grader may record a score of its own, so it needs no expectation until it grades.
Each problem is one `EvalSetError` naming the field; the face says which test it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from typing import Any, Final

from verdryx_core.cases import EvalCase
from verdryx_core.errors import EvalSetError
from verdryx_core.evalsets.load import evalset_from_data
from verdryx_core.evalsets.schema import evalset_schema

__all__ = ["CUSTOM_ONLY_FIELDS", "custom_case", "custom_case_fields"]

#: Fields of a file's case a custom case cannot take: its id is `case_id` (or the test's
#: node id), its output is what the test grades, and the test itself is the agent.
_NOT_CUSTOM: Final = frozenset({"id", "output", "target"})
#: The marker's own field: the case id (a file case's `id`).
CUSTOM_ONLY_FIELDS: Final = ("case_id",)
#: Schema-valid stand-in: a custom case id may hold what a file's may not (brackets of a
#: parametrized test, `::`), and it was checked where it was read.
_PLACEHOLDER_ID: Final = "custom"


@cache
def custom_case_fields() -> tuple[str, ...]:
    """Every field the marker accepts, sorted: a file case's fields but id, output and
    target, and `case_id`."""
    case_fields = evalset_schema()["$defs"]["case"]["properties"]
    return tuple(sorted({*case_fields, *CUSTOM_ONLY_FIELDS} - _NOT_CUSTOM))


def custom_case(
    fields: Mapping[str, Any], *, case_id: str, default_prompt: str, where: str
) -> EvalCase:
    """The EvalCase the marker's `fields` describe (`case_id` left out: it is `case_id`
    here). `default_prompt` stands in when no `prompt` or `messages` is given; `where` names
    the test in an error. Raises EvalSetError naming the field."""
    allowed = custom_case_fields()
    for name in fields:
        if name not in allowed:
            raise EvalSetError(
                where,
                f"not a field of a custom case; use one of {', '.join(allowed)}",
                field=str(name),
            )
    data: dict[str, Any] = {
        "id": _PLACEHOLDER_ID,
        **{name: value for name, value in fields.items() if name not in CUSTOM_ONLY_FIELDS},
    }
    if "prompt" not in data and "messages" not in data:
        data["prompt"] = default_prompt
    evalset = evalset_from_data(
        {"id": "custom", "cases": [data]}, where, custom=True, header_line=None
    )
    return replace(evalset.cases[0], id=case_id)
