"""Convert BFCL (the Berkeley Function Calling Leaderboard, Apache-2.0) into a verdryx eval set
of tool_trace cases, graded as BFCL's AST checker grades them (docs/graders.md, "BFCL
differences").

    pip download --no-deps bfcl-eval -d /tmp/bfcl && python scripts/convert_bfcl.py \\
        /tmp/bfcl/bfcl_eval-*.whl tests/fixtures/bfcl
    python scripts/convert_bfcl.py --all /tmp/bfcl/bfcl_eval-*.whl evals/

Each BFCL question (the functions offered, the possible answers) becomes one case: the
functions become `tools` (BFCL's types as JSON Schema: float -> number, dict -> object, tuple
-> array, any -> no type; each parameter's type widened by the type of its first possible
answer, which BFCL's checker takes whatever the schema says), the possible answers the
expected calls, each argument `{"one_of": [...]}` (`"optional": true` where BFCL lists "" and
the function does not require the parameter; a dict's answer an object of those), graded with
`ignore_case`, `ignore_punctuation`, `normalize_whitespace` and `check_types`; a parallel
category's calls in any order.

`--all`: every question of the simple, multiple, parallel and parallel_multiple categories,
live ones too, with no recorded output (`bfcl.evalset.json`). Without it, the tests' sample:
BFCL ships no model outputs, so each case records one: the first possible answer, changed as
models change it (upper case, extra spaces, 12.0 for 12, an int for a float, optional
parameters left out, a wrong value, a parameter not offered, a wrong function), one change per
case, in turn. Descriptions (of functions and parameters) are left out of both files: no
grading reads them, and they are most of the size. Written next to the eval set:
`bfcl-sample.source.jsonl`, BFCL's own records and the recorded output, which the tests'
independent BFCL-style checker reads (never the converted cases). Kept in the sample: the
simple (Python) and multiple categories, and live_simple questions whose first possible answer
is of a type the schema does not take (a `null` default), with one expected call of
parameters that are strings, numbers, booleans or arrays of those but floats (BFCL's dict,
tuple and "any" types, arrays of floats, and answers that name variables, are left out).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

#: The sample: (category, cases, only the questions whose first possible answer has a type
#: of its own, which BFCL accepts where the schema disagrees: mostly `null`).
CATEGORIES: Final = (
    ("simple_python", 200, False),
    ("multiple", 100, False),
    ("live_simple", 16, True),
)
_SCALARS: Final = {"string", "integer", "float", "boolean"}
_TYPES: Final = {
    "string": "string",
    "integer": "integer",
    "float": "number",
    "boolean": "boolean",
    "array": "array",
    "tuple": "array",
    "dict": "object",
}
#: Every category of BFCL's single-turn AST checking, each whole (`--all`).
ALL_CATEGORIES: Final = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
)
#: What every converted case is graded with: BFCL's string comparison, near enough (see
#: docs/graders.md, "BFCL differences"), and its types.
DEFAULTS: Final = {
    "min_score": 1.0,
    "ignore_case": True,
    "ignore_punctuation": True,
    "normalize_whitespace": True,
    "check_types": True,
}
#: The changes of a sample case whose answer has a type of its own: what a `null` takes.
ANSWER_TYPED_CHANGES: Final = ("as-is", "wrong-value", "drop-optional", "upper-case")
CHANGES: Final = (
    "as-is",
    "upper-case",
    "extra-spaces",
    "float-for-int",
    "int-for-float",
    "drop-optional",
    "wrong-value",
    "unexpected-param",
    "wrong-function",
)


def _lines(wheel: zipfile.ZipFile, name: str) -> Iterator[dict[str, Any]]:
    with wheel.open(name) as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


#: A possible answer's JSON type, as BFCL's checker reads it (Python's `type()`: an int is not a
#: float, a bool is neither).
_KINDS: Final = {
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    list: "array",
    dict: "object",
    type(None): "null",
}


def _answer_kind(values: Any) -> str | None:
    """The JSON type of a parameter's first possible answer ("" marks "optional" and is not
    one), the type BFCL's checker accepts whatever the schema says; None when there is none."""
    first = next((v for v in values if v != ""), None) if isinstance(values, list) else None
    if first is None and not (isinstance(values, list) and None in values):
        return None
    return _KINDS.get(type(first))


def _schema(
    spec: Mapping[str, Any], answer_kinds: Any = (), item_kinds: Any = ()
) -> dict[str, Any]:
    """BFCL's parameter type as JSON Schema (float -> number, dict -> object, tuple -> array,
    any -> no type). BFCL's checker also accepts a value of the type of the parameter's own
    first possible answer where the schema disagrees (mostly `null` for an optional string or
    integer): `answer_kinds` widens the type by them, `item_kinds` an array's items, so
    `check_types` holds a value to what BFCL's checker holds it to (docs/graders.md, "BFCL
    differences")."""
    # Parameter descriptions are left out: grading never reads them (BFCL's stay in the
    # source file), and they are most of the sample's size.
    kind = _TYPES.get(spec["type"])
    out: dict[str, Any] = {}
    if kind is not None:
        kinds = [kind, *sorted({k for k in answer_kinds if k and k != kind})]
        if kind == "number":  # JSON Schema's number takes integers, as BFCL takes an int
            kinds = [k for k in kinds if k != "integer"]
        out["type"] = kinds[0] if len(kinds) == 1 else kinds
    if spec["type"] in ("array", "tuple") and "items" in spec:
        out["items"] = _schema(spec["items"], item_kinds)
    if spec["type"] == "dict":
        out["properties"] = {k: _schema(v) for k, v in spec.get("properties", {}).items()}
        if spec.get("required"):
            out["required"] = list(spec["required"])
    return out


def _undescribed(value: Any) -> Any:
    """BFCL's record without its descriptions, which no checker reads (the sample's size)."""
    if isinstance(value, Mapping):
        return {k: _undescribed(v) for k, v in value.items() if k != "description"}
    if isinstance(value, list):
        return [_undescribed(item) for item in value]
    return value


def _calls(answer: Mapping[str, Any]) -> list[tuple[str, dict[str, list[Any]]]]:
    return [next(iter(call.items())) for call in answer["ground_truth"]]


def tool_of(function: Mapping[str, Any], answer: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The function as a tool; with the case's `answer`, each parameter's type widened by the
    type of its first possible answer in every expected call of the function (`_schema`)."""
    parameters = function["parameters"]
    kinds: dict[str, set[str | None]] = {}
    items: dict[str, set[str | None]] = {}
    for name, params in _calls(answer) if answer is not None else ():
        if name != function["name"]:
            continue
        for param, values in params.items():
            kinds.setdefault(param, set()).add(_answer_kind(values))
            # An array's items: BFCL takes them when they fit any one possible answer.
            for option in values:
                if isinstance(option, list):
                    items.setdefault(param, set()).add(_answer_kind(option))
    return {
        "name": function["name"],
        "input_schema": {
            "type": "object",
            "properties": {
                k: _schema(v, kinds.get(k, ()), items.get(k, ()))
                for k, v in parameters["properties"].items()
            },
            "required": list(parameters.get("required", [])),
        },
    }


def _answer_typed(question: Mapping[str, Any], answer: Mapping[str, Any]) -> bool:
    """Whether a parameter's first possible answer is of a type its schema does not take."""
    ((name, params),) = answer["ground_truth"][0].items()
    function = next(f for f in question["function"] if f["name"] == name)
    properties = function["parameters"]["properties"]
    for param, values in params.items():
        kind = _answer_kind(values)
        wanted = _TYPES.get(properties[param]["type"])
        if kind is not None and kind != wanted and (kind, wanted) != ("integer", "number"):
            return True
    return False


def _usable(question: Mapping[str, Any], answer: Mapping[str, Any]) -> bool:
    if len(answer["ground_truth"]) != 1:
        return False
    ((name, params),) = answer["ground_truth"][0].items()
    function = next((f for f in question["function"] if f["name"] == name), None)
    if function is None:
        return False
    properties = function["parameters"]["properties"]
    for param, values in params.items():
        spec = properties.get(param)
        if spec is None:
            return False
        kind = spec["type"]
        items = spec.get("items", {}).get("type")
        if kind not in _SCALARS and not (kind == "array" and items in _SCALARS - {"float"}):
            # BFCL holds a float array's items to float strictly (no int), where a JSON
            # Schema number takes both: left out rather than scored differently.
            return False
        given = [v for v in values if v != ""]
        if not given:
            return False
        if kind != "string" and isinstance(given[0], str):
            return False  # a variable's name standing for the value: BFCL special-cases it
    return True


def _possible(values: Any) -> Any:
    """BFCL's list of possible values (with "" for "may be left out") as verdryx's `one_of`."""
    if not isinstance(values, list):
        return values
    spec: dict[str, Any] = {"one_of": [v for v in values if v != ""]}
    if "" in values:
        spec["optional"] = True
    return spec


def _expected_value(option: Any, spec: Mapping[str, Any]) -> Any:
    """One possible answer of a parameter. BFCL writes a dict parameter's answer as
    `{key: [possible values]}` (a key whose values include "" may be left out), and an array of
    dicts as a list of those; anything else is the value itself."""
    if spec.get("type") == "dict" and isinstance(option, Mapping):
        return {key: _possible(values) for key, values in option.items()}
    items = spec.get("items") or {}
    if spec.get("type") == "array" and items.get("type") == "dict" and isinstance(option, list):
        return [_expected_value(item, items) for item in option]
    return option


def expected_calls(question: Mapping[str, Any], answer: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every call of the answer, each parameter's possible answers a `one_of` (`"optional":
    true` where BFCL lists "" and the function does not require the parameter)."""
    calls = []
    for name, params in _calls(answer):
        function = next((f for f in question["function"] if f["name"] == name), None)
        parameters = function["parameters"] if function is not None else {}
        required = set(parameters.get("required", []))
        properties = parameters.get("properties", {})
        arguments = {}
        for param, values in params.items():
            spec = properties.get(param, {})
            options = [_expected_value(v, spec) for v in values if v != ""]
            expected: dict[str, Any] = {"one_of": options}
            if "" in values and param not in required:
                expected["optional"] = True
            arguments[param] = expected
        calls.append({"name": name, "arguments": arguments})
    return calls


def expected_call(question: Mapping[str, Any], answer: Mapping[str, Any]) -> dict[str, Any]:
    return expected_calls(question, answer)[0]


def _conversation(question: Mapping[str, Any]) -> dict[str, Any]:
    """The question's first turn: a system message as the case's `system`, one user message as
    its `prompt`, several as its `messages`."""
    turn = [m for m in question["question"][0] if isinstance(m, Mapping)]
    system = "\n\n".join(m["content"] for m in turn if m.get("role") == "system")
    rest = [
        {"role": m["role"], "content": m["content"]}
        for m in turn
        if m.get("role") in ("user", "assistant")
    ]
    out: dict[str, Any] = {"system": system} if system else {}
    if len(rest) == 1 and rest[0]["role"] == "user":
        return out | {"prompt": rest[0]["content"]}
    return out | {"prompt": rest[-1]["content"] if rest else "", "messages": rest}


def case_of(
    question: Mapping[str, Any], answer: Mapping[str, Any], category: str
) -> dict[str, Any]:
    """A whole BFCL question as a tool_trace case with no recorded output: a parallel
    category's calls are expected in any order, as BFCL's checker takes them."""
    case: dict[str, Any] = {
        "id": question["id"],
        **_conversation(question),
        "grader": "tool_trace",
        "tools": [tool_of(f, answer) for f in question["function"]],
        "expected_tool_calls": expected_calls(question, answer),
        "tags": [category],
    }
    if "parallel" in category:
        case["tool_match"] = "unordered"
    return case


def ground_truth_outputs(answer: Mapping[str, Any]) -> list[dict[str, Any]]:
    """BFCL's model-output shape (`[{function name: {param: value}}, ...]`) of every answer
    the possible answers list: the first, where each parameter takes its first possible value
    (left out when it has none but ""), then one per other possible value of a parameter (and
    one leaving it out, when "" is listed), the other parameters as in the first."""
    calls = _calls(answer)
    first = [
        {name: {p: given[0] for p, vs in params.items() if (given := [v for v in vs if v != ""])}}
        for name, params in calls
    ]
    outputs = [first]
    for index, (name, params) in enumerate(calls):
        for param, values in params.items():
            chosen = first[index][name]
            others = [v for v in values if v != ""][1:]
            for value in others:
                outputs.append(_with(first, index, name, {**chosen, param: value}))
            if "" in values and param in chosen:
                outputs.append(
                    _with(first, index, name, {k: v for k, v in chosen.items() if k != param})
                )
    return copy.deepcopy(outputs)


def _with(
    first: list[dict[str, Any]], index: int, name: str, arguments: dict[str, Any]
) -> list[dict[str, Any]]:
    return [*first[:index], {name: arguments}, *first[index + 1 :]]


def _strings(value: Any, change: Any) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [_strings(item, change) for item in value]
    return value


def model_output(
    question: Mapping[str, Any], answer: Mapping[str, Any], change: str
) -> dict[str, Any]:
    """BFCL's model-output shape, `{function name: {param: value}}`: the first possible
    answer, under `change`. A change the case cannot take (no integer parameter for
    float-for-int) falls back to the wrong value, so every change scores something."""
    ((name, params),) = answer["ground_truth"][0].items()
    function = next(f for f in question["function"] if f["name"] == name)
    properties = function["parameters"]["properties"]
    required = set(function["parameters"].get("required", []))
    chosen = {p: copy.deepcopy(next(v for v in vs if v != "")) for p, vs in params.items()}
    kinds = {p: properties[p]["type"] for p in chosen}

    def first(kind: str) -> str | None:
        return next(
            (
                p
                for p in chosen
                if kinds[p] == kind
                and _KINDS.get(type(chosen[p])) == ("number" if kind == "float" else kind)
            ),
            None,
        )

    if change == "as-is":
        pass
    elif change == "upper-case" and any(isinstance(v, str | list) for v in chosen.values()):
        chosen = {p: _strings(v, str.upper) for p, v in chosen.items()}
    elif change == "extra-spaces" and any(isinstance(v, str) for v in chosen.values()):
        chosen = {
            p: _strings(v, lambda s: "  " + s.replace(" ", "   ") + " ") for p, v in chosen.items()
        }
    elif change == "float-for-int" and first("integer"):
        chosen[first("integer")] = float(chosen[first("integer")])  # type: ignore[index]
    elif change == "int-for-float" and any(
        kinds[p] == "float" and isinstance(v, float) and v.is_integer() for p, v in chosen.items()
    ):
        param = next(
            p
            for p, v in chosen.items()
            if kinds[p] == "float" and isinstance(v, float) and v.is_integer()
        )
        chosen[param] = int(chosen[param])
    elif change == "drop-optional" and any("" in params[p] and p not in required for p in chosen):
        chosen = {p: v for p, v in chosen.items() if not ("" in params[p] and p not in required)}
    elif change == "unexpected-param":
        chosen["verbose_output"] = True
    elif change == "wrong-function":
        others = [f["name"] for f in question["function"] if f["name"] != name]
        name = others[0] if others else name + "_v2"
    else:
        param = next(iter(chosen))
        value = chosen[param]
        if value is None:
            chosen[param] = "null"  # the schema's type, never the answer's: no value
        elif isinstance(value, bool):
            chosen[param] = not value
        elif isinstance(value, int | float):
            chosen[param] = value + 1
        elif isinstance(value, str):
            chosen[param] = value + " extra"
        else:
            chosen[param] = [*value, value[0]] if value else ["x"]
    return {name: chosen}


def convert(wheel_path: Path, out: Path) -> tuple[int, int]:
    cases: list[dict[str, Any]] = []
    sources: list[str] = []
    with zipfile.ZipFile(wheel_path) as wheel:
        for category, limit, answer_typed in CATEGORIES:
            questions = _lines(wheel, f"bfcl_eval/data/BFCL_v4_{category}.json")
            answers = {
                a["id"]: a
                for a in _lines(wheel, f"bfcl_eval/data/possible_answer/BFCL_v4_{category}.json")
            }
            kept = 0
            for question in questions:
                answer = answers.get(question["id"])
                if answer is None or not _usable(question, answer):
                    continue
                if answer_typed and not _answer_typed(question, answer):
                    continue
                changes = ANSWER_TYPED_CHANGES if answer_typed else CHANGES
                change = changes[(len(cases) if not answer_typed else kept) % len(changes)]
                made = model_output(question, answer, change)
                ((called, arguments),) = made.items()
                cases.append(
                    {
                        "id": f"{question['id']}.{change}",
                        "prompt": question["question"][0][-1]["content"],
                        "grader": "tool_trace",
                        "tools": [tool_of(f, answer) for f in question["function"]],
                        "expected_tool_calls": [expected_call(question, answer)],
                        "output": [{"name": called, "arguments": arguments}],
                        "tags": [category, change],
                    }
                )
                sources.append(
                    json.dumps(
                        {
                            "id": cases[-1]["id"],
                            "function": [_undescribed(f) for f in question["function"]],
                            "ground_truth": answer["ground_truth"],
                            "model_output": made,
                        },
                        ensure_ascii=False,
                    )
                )
                kept += 1
                if kept == limit:
                    break
    out.mkdir(parents=True, exist_ok=True)
    document = {
        "id": "bfcl-sample",
        "description": (
            "A sample of BFCL v4 (Apache-2.0) simple_python and multiple cases, each with one "
            "recorded output, graded as BFCL's AST checker grades (scripts/convert_bfcl.py)."
        ),
        "defaults": DEFAULTS,
        "cases": cases,
    }
    (out / "bfcl-sample.evalset.json").write_text(
        json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8"
    )
    (out / "bfcl-sample.source.jsonl").write_text("\n".join(sources) + "\n", encoding="utf-8")
    return len(cases), len(sources)


def load_category(
    wheel: zipfile.ZipFile, category: str
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """A category's questions, each with its possible answers."""
    answers = {
        a["id"]: a for a in _lines(wheel, f"bfcl_eval/data/possible_answer/BFCL_v4_{category}.json")
    }
    questions = _lines(wheel, f"bfcl_eval/data/BFCL_v4_{category}.json")
    return [(q, answers[q["id"]]) for q in questions if q["id"] in answers]


def convert_all(wheel_path: Path, out: Path) -> int:
    """Every question of `ALL_CATEGORIES`, whole, as one eval set with no recorded output
    (`bfcl.evalset.json`): for a model or a target to answer."""
    cases = []
    with zipfile.ZipFile(wheel_path) as wheel:
        for category in ALL_CATEGORIES:
            cases += [case_of(q, a, category) for q, a in load_category(wheel, category)]
    document = {
        "id": "bfcl",
        "description": (
            "BFCL v4 (Apache-2.0): the simple, multiple, parallel and parallel_multiple "
            "categories, live ones too, graded as BFCL's AST checker grades "
            "(scripts/convert_bfcl.py)."
        ),
        "defaults": DEFAULTS,
        "cases": cases,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "bfcl.evalset.json").write_text(
        json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8"
    )
    return len(cases)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", type=Path, help="the bfcl-eval wheel (pip download --no-deps)")
    parser.add_argument("out", type=Path, help="the folder to write the eval set into")
    parser.add_argument(
        "--all",
        action="store_true",
        help="every question of the simple, multiple, parallel and parallel_multiple "
        "categories (live ones too), with no recorded output, as bfcl.evalset.json",
    )
    args = parser.parse_args(argv)
    if args.all:
        count = convert_all(args.wheel, args.out)
        print(f"wrote {count} cases to {args.out / 'bfcl.evalset.json'}")
        return 0
    count, _ = convert(args.wheel, args.out)
    print(f"wrote {count} cases to {args.out / 'bfcl-sample.evalset.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
