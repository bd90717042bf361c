"""`json`: the output is JSON, and says what the case expects.

The output is parsed (surrounding whitespace and one Markdown code fence are tolerated). Not
JSON is 0.0, and so is an object with a key given twice (the reason says which key).
Otherwise each condition the case sets is checked: `expected` (the whole value equals it),
`schema` (a JSON Schema it satisfies), and each entry of `fields` (a dotted path, `a.b.0.c`,
whose value equals the one given); the score is the fraction of conditions met, 1.0 when the
case sets none (valid JSON is all it asks).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any, ClassVar, Final, final

from verdryx_core.cases import EvalCase
from verdryx_core.graders.base import Grade, GradeContext
from verdryx_core.graders.case_rules import CaseProblem, check_json_schema, json_text
from verdryx_core.graders.values import value_matches
from verdryx_core.untrusted.json_input import StrictJSONError, parse_json

if TYPE_CHECKING:
    import jsonschema

__all__ = ["MISSING", "JsonGrader", "json_score", "parse_output", "read_output", "resolve_path"]

_FENCE: Final = re.compile(r"^```[A-Za-z0-9_-]*\s*\n(.*)\n```$", re.DOTALL)
_MISSING: Final = object()
#: What `resolve_path` returns for a path the document does not have.
MISSING: Final = _MISSING


def parse_output(text: str) -> tuple[bool, Any]:
    ok, document, _ = read_output(text)
    return ok, document


def read_output(text: str) -> tuple[bool, Any, str | None]:
    """(parsed, the value, why not when it says more than "not JSON")."""
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    try:
        # Depth-limited (untrusted/json_input.py): an agent's `[` x 100,000 is not JSON here,
        # not a RecursionError that loses the case. A key given twice is not JSON either:
        # which of its values the output means is unknown, and taking the last one would
        # score `{"a": 2, "a": 1}` as `{"a": 1}`.
        return True, parse_json(stripped, allow_nan=False, unique_keys=True), None
    except StrictJSONError as exc:
        return False, None, str(exc)
    except ValueError:
        return False, None, None


def resolve_path(document: Any, path: str) -> Any:
    """The value at a dotted path (list positions are numbers), or a private MISSING."""
    current = document
    for part in path.split(".") if path else []:
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdecimal() and int(part) < len(current):
            current = current[int(part)]
        else:
            return _MISSING
    return current


@lru_cache(maxsize=256)
def _validator(schema_text: str) -> jsonschema.protocols.Validator:
    import jsonschema  # only when a case names a schema: most runs never need it

    schema = json.loads(schema_text)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema)


def json_score(
    text: str,
    *,
    expected: str | None = None,
    schema: Mapping[str, Any] | None = None,
    fields: Mapping[str, Any] | None = None,
) -> tuple[float, list[str]]:
    """(score, what failed) for an output text against the conditions given."""
    ok, document, why = read_output(text)
    if not ok:
        return 0.0, ["the output is not JSON" + (f": {why}" if why else "")]
    failed: list[str] = []
    total = 0
    if expected is not None:
        total += 1
        if not value_matches(parse_json(expected), document):
            failed.append("the value differs from expected")
    if schema is not None:
        total += 1
        from jsonschema.exceptions import best_match

        error = best_match(_validator(json.dumps(schema, sort_keys=True)).iter_errors(document))
        if error is not None:
            failed.append(f"schema: {error.message}")
    for path, want in (fields or {}).items():
        total += 1
        found = resolve_path(document, path)
        if found is _MISSING:
            failed.append(f"field {path!r} is missing")
        elif not value_matches(want, found):
            failed.append(f"field {path!r} is {json.dumps(found)}, expected {json.dumps(want)}")
    if total == 0:
        return 1.0, []
    return (total - len(failed)) / total, failed


@final
class JsonGrader:
    kind: ClassVar[str] = "json"
    options: ClassVar[frozenset[str]] = frozenset({"schema", "fields"})

    @staticmethod
    def check_case(case: dict[str, Any]) -> None:
        """The expectation is JSON (text of it, or the value), kept as its JSON text; the
        `schema` a valid JSON Schema."""
        expected = case.get("expected")
        if isinstance(expected, str):
            try:
                # As the grader reads an output: a key given twice is not one value.
                parse_json(expected, unique_keys=True)
            except ValueError as exc:
                raise CaseProblem(
                    "expected",
                    f"a string expectation of grader 'json' is JSON text, and this is not ({exc})",
                ) from None
        elif expected is not None:
            case["expected"] = json_text(expected)
        if "schema" in case:
            check_json_schema(case["schema"], "schema")

    def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Grade:
        value, failed = json_score(
            "" if output is None else str(output),
            expected=case.expected,
            schema=case.options.get("schema"),
            fields=case.options.get("fields"),
        )
        return Grade(value=value, reason="; ".join(failed) or None)
