"""Convert a sample of BFCL (the Berkeley Function Calling Leaderboard, Apache-2.0) into a
verdryx eval set of tool_trace cases, graded as BFCL's AST checker grades them
(docs/graders.md, "Tool traces": "Scoring as function-calling benchmarks do").

    pip download --no-deps bfcl-eval -d /tmp/bfcl && python scripts/convert_bfcl.py \\
        /tmp/bfcl/bfcl_eval-*.whl tests/fixtures/bfcl

Each BFCL case (its question, the functions offered, the possible answers) becomes one case:
the functions become `tools` (BFCL's types as JSON Schema: float -> number, dict -> object),
the possible answers one expected call whose arguments are `{"one_of": [...]}` (`"optional":
true` where BFCL lists "" and the function does not require the parameter), graded with
`ignore_case`, `ignore_punctuation`, `normalize_whitespace` and `check_types`. BFCL ships no
model outputs, so each case records one: the first possible answer, changed as models change
it (upper case, extra spaces, 12.0 for 12, an int for a float, optional parameters left out,
a wrong value, a parameter not offered, a wrong function), one change per case, in turn.

Descriptions (of functions and parameters) are left out of both files: no grading reads them,
and they are most of the size. Written next to the eval set: `bfcl-sample.source.jsonl`,
BFCL's own records and the recorded output, which the tests' independent BFCL-style
checker reads (never the converted cases).
Kept in the sample: the simple (Python) and multiple categories, cases whose parameters are
strings, numbers, booleans or arrays of those but floats (BFCL's dict, tuple and "any" types,
arrays of floats, and answers that name variables, are left out).
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

CATEGORIES: Final = (("simple_python", 200), ("multiple", 100))
_SCALARS: Final = {"string", "integer", "float", "boolean"}
_TYPES: Final = {
    "string": "string",
    "integer": "integer",
    "float": "number",
    "boolean": "boolean",
    "array": "array",
    "dict": "object",
}
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


def _schema(spec: Mapping[str, Any]) -> dict[str, Any]:
    # Parameter descriptions are left out: grading never reads them (BFCL's stay in the
    # source file), and they are most of the sample's size.
    out: dict[str, Any] = {"type": _TYPES[spec["type"]]}
    if spec["type"] == "array" and "items" in spec:
        out["items"] = _schema(spec["items"])
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


def tool_of(function: Mapping[str, Any]) -> dict[str, Any]:
    parameters = function["parameters"]
    return {
        "name": function["name"],
        "input_schema": {
            "type": "object",
            "properties": {k: _schema(v) for k, v in parameters["properties"].items()},
            "required": list(parameters.get("required", [])),
        },
    }


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
        if kind != "string" and any(isinstance(v, str) for v in given):
            return False  # a variable's name standing for the value: BFCL special-cases it
    return True


def expected_call(question: Mapping[str, Any], answer: Mapping[str, Any]) -> dict[str, Any]:
    ((name, params),) = answer["ground_truth"][0].items()
    function = next(f for f in question["function"] if f["name"] == name)
    required = set(function["parameters"].get("required", []))
    arguments = {}
    for param, values in params.items():
        spec: dict[str, Any] = {"one_of": [v for v in values if v != ""]}
        if "" in values and param not in required:
            spec["optional"] = True
        arguments[param] = spec
    return {"name": name, "arguments": arguments}


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
        return next((p for p in chosen if kinds[p] == kind), None)

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
        kinds[p] == "float" and float(v).is_integer() for p, v in chosen.items()
    ):
        param = next(p for p, v in chosen.items() if kinds[p] == "float" and float(v).is_integer())
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
        if isinstance(value, bool):
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
        for category, limit in CATEGORIES:
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
                change = CHANGES[len(cases) % len(CHANGES)]
                made = model_output(question, answer, change)
                ((called, arguments),) = made.items()
                cases.append(
                    {
                        "id": f"{question['id']}.{change}",
                        "prompt": question["question"][0][-1]["content"],
                        "grader": "tool_trace",
                        "tools": [tool_of(f) for f in question["function"]],
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
        "defaults": {
            "min_score": 1.0,
            "ignore_case": True,
            "ignore_punctuation": True,
            "normalize_whitespace": True,
            "check_types": True,
        },
        "cases": cases,
    }
    (out / "bfcl-sample.evalset.json").write_text(
        json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8"
    )
    (out / "bfcl-sample.source.jsonl").write_text("\n".join(sources) + "\n", encoding="utf-8")
    return len(cases), len(sources)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", type=Path, help="the bfcl-eval wheel (pip download --no-deps)")
    parser.add_argument("out", type=Path, help="the folder to write the eval set into")
    args = parser.parse_args(argv)
    count, _ = convert(args.wheel, args.out)
    print(f"wrote {count} cases to {args.out / 'bfcl-sample.evalset.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
