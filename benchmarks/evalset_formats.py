"""Load and grade the same eval set as JSON, JSONL and CSV (docs/evalset-reference.md: a JSONL
set costs no more than the same cases as JSON).

    .venv/bin/python benchmarks/evalset_formats.py           # 20,000 cases, best of 5
    .venv/bin/python benchmarks/evalset_formats.py --quick   # 500 cases, best of 2 (smoke)

The cases are recorded outputs over a mix of graders (exact with options, contains, numeric,
f1, json, tool_trace with arguments in unordered mode), with set-level defaults, written once
in each format. Each format is timed end to end as `verdryx eval` and the plugin do it:
read, validate, build the cases, then grade every case through `CaseScorer`. The ratios
are against JSON measured in the same run; the formats take turns and the best of N counts,
which damps a noisy shared machine.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import benchlib

from verdryx_core.errors import CLI_FLAGS
from verdryx_core.evalsets.load import load_evalset
from verdryx_core.evaluation import CaseScorer
from verdryx_core.graders import GradeContext, build_graders

#: JSONL must not cost more than JSON; a little slack for timer noise on a shared machine.
MAX_JSONL_RATIO = 1.10

TOOLS = [
    {"name": "get_weather", "description": "weather", "input_schema": {"type": "object"}},
    {"name": "convert", "description": "currency", "input_schema": {"type": "object"}},
]


def make_case(index: int) -> dict[str, Any]:
    kind = index % 6
    case: dict[str, Any] = {"id": f"case/{index}", "prompt": f"question number {index}"}
    if kind == 0:
        case.update(
            expected=f"Answer {index}", output=f"answer  {index}", normalize_whitespace=True
        )
    elif kind == 1:
        case.update(grader="contains", expected=str(index), output=f"it is {index} today")
    elif kind == 2:
        case.update(grader="numeric", expected=str(index), output=f"about {index + 0.001}")
    elif kind == 3:
        case.update(grader="f1", expected="the quick brown fox", output="a quick brown dog")
    elif kind == 4:
        case.update(grader="json", fields={"id": index}, output=json.dumps({"id": index}))
    else:
        calls = [
            {"name": "get_weather", "arguments": {"city": {"one_of": ["Paris", "Paris, FR"]}}},
            {"name": "convert", "arguments": {"amount": index}},
        ]
        made = [
            {"name": "convert", "arguments": {"amount": index}},
            {"name": "get_weather", "arguments": {"city": "Paris"}},
        ]
        case.update(grader="tool_trace", tools=TOOLS, expected_tool_calls=calls, output=made)
    return case


HEADER = {
    "id": "bench",
    "defaults": {
        "min_score": 0.5,
        "ignore_case": True,
        "tool_match": "unordered",
        "tolerance": 0.01,
    },
}
CSV_FIELDS = [
    "id", "prompt", "grader", "expected", "output", "normalize_whitespace", "fields", "tools",
    "expected_tool_calls",
]  # fmt: skip


def write_sets(directory: Path, count: int) -> dict[str, Path]:
    cases = [make_case(index) for index in range(count)]
    paths = {
        "json": directory / "bench.evalset.json",
        "jsonl": directory / "bench.evalset.jsonl",
        "csv": directory / "bench.evalset.csv",
    }
    paths["json"].write_text(json.dumps({**HEADER, "cases": cases}))
    paths["jsonl"].write_text("\n".join(json.dumps(item) for item in [HEADER, *cases]) + "\n")
    (directory / "bench.evalset.csv.json").write_text(json.dumps(HEADER))
    with paths["csv"].open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_FIELDS)
        for case in cases:
            row = []
            for field in CSV_FIELDS:
                value = case.get(field)
                if value is None:
                    row.append("")
                elif isinstance(value, bool):
                    row.append("true" if value else "false")
                elif isinstance(value, str):
                    row.append(value)
                else:
                    row.append(json.dumps(value))
            writer.writerow(row)
    return paths


def load_and_grade(path: Path) -> float:
    evalset = load_evalset(path)
    evaluator = CaseScorer(graders=build_graders(), min_score=0.5, flags=CLI_FLAGS)
    context = GradeContext(eval_set_id=evalset.id, eval_set_path=path)
    total = 0.0
    for case in evalset.cases:
        score = evaluator.score(case, context)
        total += score.value or 0.0
    return total / len(evalset.cases)


def best_of(repeats: int, paths: dict[str, Path]) -> dict[str, tuple[float, float]]:
    """Best time and mean score per format. The formats take turns, in a rotating order, so
    a burst of load from elsewhere on the machine does not land on one format only."""
    times: dict[str, list[float]] = {name: [] for name in paths}
    means: dict[str, float] = {}
    names = list(paths)
    for round_ in range(repeats):
        for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
            start = time.perf_counter()
            means[name] = load_and_grade(paths[name])
            times[name].append(time.perf_counter() - start)
    return {name: (min(times[name]), means[name]) for name in paths}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="500 cases, best of 2")
    parser.add_argument("--cases", type=int, default=None, help="cases per set (20,000)")
    args = parser.parse_args(argv)
    count = args.cases or (500 if args.quick else 20_000)
    repeats = 2 if args.quick else 5
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_sets(Path(tmp), count)
        results = best_of(repeats, paths)
    means = {round(mean, 9) for _, mean in results.values()}
    if len(means) != 1:
        print(f"the formats graded differently: {results}", file=sys.stderr)
        return 1
    base = results["json"][0]
    print(f"{count:,} cases, load + grade, best of {repeats} ({benchlib.load()}):")
    for name, (seconds, mean) in results.items():
        print(
            f"  {name:5}  {seconds:7.3f} s  {count / seconds:9,.0f} cases/s  "
            f"ratio to JSON {seconds / base:5.2f}  (mean score {mean:.4f})"
        )
    ratio = results["jsonl"][0] / base
    verdict = "ok" if ratio <= MAX_JSONL_RATIO else "TOO SLOW"
    print(f"JSONL / JSON = {ratio:.2f} (target <= {MAX_JSONL_RATIO:.2f}): {verdict}")
    print(
        benchlib.verdict(
            ratio <= MAX_JSONL_RATIO,
            f"JSONL at {ratio:.2f}x JSON's time, target <= {MAX_JSONL_RATIO:.2f}x",
        )
    )
    return 0 if ratio <= MAX_JSONL_RATIO or args.quick else 1


if __name__ == "__main__":
    raise SystemExit(main())
