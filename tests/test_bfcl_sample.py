"""A BFCL sample converted by scripts/convert_bfcl.py scores as BFCL's checker does
(docs/graders.md, "Tool traces"): every case's verdict from verdryx's tool_trace grader
(string options, `check_types`, optional arguments, dotted names) against an independent
checker written here from BFCL's documented AST-checker rules, reading BFCL's own records
(`bfcl-sample.source.jsonl`), never the converted cases.

BFCL's rules, as its checker documents them: the function's name must be the one expected;
every parameter the function requires must be given; every parameter given must be one of
the function's and one the answer lists; a value must have the parameter's type (Python
`type()` equality: a bool is not an integer, 12.0 is not an integer, but an int is accepted
for a float), or else the type of the parameter's first possible answer (its "variable" rule,
which takes a `null` default for a string), a value so taken then compared by plain equality;
a string is compared after removing spaces and `,./-_*^`, lower-cased, single quotes as
double; an array element-wise the same way; anything else by equality; a parameter not given
is fine only when its possible answers include "".
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from verdryx_core.evalsets.load import load_evalset
from verdryx_core.graders.base import GradeContext
from verdryx_core.graders.tool_trace import ToolTraceGrader

HERE = Path(__file__).parent / "fixtures" / "bfcl"
_PYTHON_TYPES = {
    "integer": int,
    "float": float,
    "string": str,
    "boolean": bool,
    "array": list,
    "dict": dict,
}


def _standard(text: str) -> str:
    return re.sub(r"[ ,./\-_*^]", "", text).lower().replace("'", '"')


def _same(value: Any, allowed: Any) -> bool:
    if isinstance(value, str) and isinstance(allowed, str):
        return _standard(value) == _standard(allowed)
    if isinstance(value, list) and isinstance(allowed, list):
        return len(value) == len(allowed) and all(map(_same, value, allowed))
    return bool(value == allowed)  # Python's `in` of BFCL's checker: 5.0 equals 5


def bfcl_valid(record: dict[str, Any]) -> bool:
    ((name, answers),) = record["ground_truth"][0].items()
    output = record["model_output"]
    if name not in output:
        return False
    function = next(f for f in record["function"] if f["name"] == name)
    properties = function["parameters"]["properties"]
    params = output[name]
    if any(p not in params for p in function["parameters"].get("required", [])):
        return False
    for param, value in params.items():
        if param not in properties or param not in answers:
            return False
        kind = properties[param]["type"]
        if kind == "float" and type(value) is int:
            value = float(value)
        given = [allowed for allowed in answers[param] if allowed != ""]
        if type(value) is not _PYTHON_TYPES[kind]:
            if not given or type(value) is not type(given[0]):
                return False
            if value not in given:  # the answer's own type: compared as it is
                return False
            continue
        if kind == "array":
            inner = _PYTHON_TYPES[properties[param]["items"]["type"]]
            if any(type(item) is not inner for item in value):
                return False
        if not any(_same(value, allowed) for allowed in answers[param] if allowed != ""):
            return False
    return all(p in params or "" in answers[p] for p in answers)


def test_every_case_of_the_bfcl_sample_scores_as_bfcls_checker() -> None:
    records = {
        r["id"]: r
        for r in map(json.loads, (HERE / "bfcl-sample.source.jsonl").read_text().splitlines())
    }
    evalset = load_evalset(HERE / "bfcl-sample.evalset.json")
    assert len(evalset.cases) == len(records) == 316
    grader = ToolTraceGrader()
    context = GradeContext(eval_set_id=evalset.id)
    mismatches = []
    verdicts: Counter[tuple[str, bool]] = Counter()
    for case in evalset.cases:
        grade = grader.grade(case, case.output, context)
        ours = grade.value == 1.0
        theirs = bfcl_valid(records[case.id])
        verdicts[(case.tags[1], theirs)] += 1
        if ours != theirs:
            mismatches.append((case.id, ours, theirs, grade.reason))
    assert mismatches == []
    # The sample exercises what BFCL forgives and what it does not.
    for change in ("as-is", "upper-case", "extra-spaces", "drop-optional"):
        assert verdicts[(change, True)] >= 10, change
    for change in ("float-for-int", "wrong-value", "unexpected-param", "wrong-function"):
        assert verdicts[(change, False)] >= 20, change
    # A `null` default where the schema says string or integer, as BFCL takes it (the value is
    # of its answer's own type): the converted tool's type is widened by it.
    nulls = [
        case
        for case in evalset.cases
        if case.tags == ("live_simple", "as-is")
        and any(value is None for value in (case.output[0].arguments or {}).values())
    ]
    assert len(nulls) >= 3
    assert all(grader.grade(case, case.output, context).value == 1.0 for case in nulls)
    assert any("." in case.output[0].name for case in evalset.cases)  # dotted names load


def test_without_the_options_bfcls_forgiven_cases_fail() -> None:
    """The options are what make the verdicts agree: without them, upper-cased strings and
    12.0 for an integer score as plain JSON equality scores them."""
    evalset = load_evalset(HERE / "bfcl-sample.evalset.json")
    grader = ToolTraceGrader()
    context = GradeContext(eval_set_id=evalset.id)
    upper = [c for c in evalset.cases if c.tags[1] == "upper-case"]
    floats = [c for c in evalset.cases if c.tags[1] == "float-for-int"]
    plain = [c.__class__.from_dict({**c.to_dict(), "ignore_case": False}) for c in upper]
    assert sum(grader.grade(c, c.output, context).value == 1.0 for c in plain) < len(upper) / 2
    assert not any(grader.grade(c, c.output, context).value == 1.0 for c in floats)
    untyped = [c.__class__.from_dict({**c.to_dict(), "check_types": False}) for c in floats]
    assert sum(grader.grade(c, c.output, context).value == 1.0 for c in untyped) >= 20
