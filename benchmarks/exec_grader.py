"""The exec grader's cost: HumanEval's 164 problems x 5 samples graded through the sandbox at
concurrency 2, against the same tests run with plain subprocesses (no sandbox, no verdryx)
at the same concurrency, in the same run.

    .venv/bin/python benchmarks/exec_grader.py            # 164 problems x 5 samples
    .venv/bin/python benchmarks/exec_grader.py --quick    # 3 problems x 1 sample, smoke run
    .venv/bin/python benchmarks/exec_grader.py --rate 0 --samples 1   # canonical answers

The answers are the example target's (examples/humaneval/target.py: the canonical solution,
or a planted mutation in 30% of the samples). Both sides run pytest with --junitxml on each
sample's solution; every sample's score must agree with the plain run's, and with `--rate 0`
every case must score 1.0. The target is a sandboxed wall time within 1.5x of the plain one.
Exit status 1 when a full run misses it or a score disagrees.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "humaneval"
sys.path.insert(0, str(EXAMPLE))

from target import answer  # noqa: E402

from verdryx_core.evaluation import EvalSettings, evaluate  # noqa: E402
from verdryx_core.graders.junit import read_junit  # noqa: E402
from verdryx_core.sandbox import detect_isolation  # noqa: E402
from verdryx_core.targets import TargetCase  # noqa: E402

TARGET = 1.5
CONCURRENCY = 2
CHUNK = 8


def plain_run(case: dict[str, Any], solution: str, timeout: float) -> float:
    """The baseline: the case's tests with pytest in a plain subprocess; the fraction passed."""
    folder = Path(tempfile.mkdtemp(prefix="verdryx-bench-"))
    try:
        (folder / "solution.py").write_text(solution)
        (folder / "test_solution.py").write_text(case["tests"])
        junit = folder / "junit.xml"
        # The sandbox's own command and environment, without the sandbox.
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(folder), "LANG": "C.UTF-8",
               "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}  # fmt: skip
        try:
            subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                 f"--rootdir={folder}", f"--junitxml={junit}", "test_solution.py"],
                cwd=folder, env=env, capture_output=True, timeout=timeout, check=False,
                # A session of its own, as the sandbox's: the kernel's autogroup scheduling
                # gives each session its share of a loaded machine.
                start_new_session=True,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return 0.0
        results = read_junit(junit)
        return 0.0 if results is None or not results.ran else results.passed / results.ran
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 problems x 1 sample")
    parser.add_argument("--rate", type=float, default=0.3, help="mutation rate (default 0.3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--samples", type=int, default=5, help="samples per problem (default 5)")
    args = parser.parse_args()
    document = json.loads((EXAMPLE / "humaneval.exec.json").read_text())
    problems, repeat = (3, 1) if args.quick else (len(document["cases"]), args.samples)
    cases = document["cases"][:problems]
    document = {**document, "cases": cases}
    if repeat == 1:
        document["defaults"] = {**document["defaults"], "aggregate": "mean"}
    timeout = float(document["defaults"]["timeout"])
    folder = Path(tempfile.mkdtemp(prefix="verdryx-bench-set-"))
    path = folder / "humaneval.evalset.json"

    def solve(case: TargetCase) -> str:
        return answer(case, seed=args.seed, rate=args.rate)[0]

    isolation = detect_isolation()
    print(f"cases:            {problems} problems x {repeat} samples, concurrency {CONCURRENCY}")
    print(f"isolation:        {isolation.name}")
    settings = EvalSettings(repeat=repeat, concurrency=CONCURRENCY, cache="off")
    sandboxed = baseline = 0.0
    scores = []
    plain: list[float] = []
    # The two sides take turns, a chunk of problems each, so a change in the machine's load
    # (it is shared) falls on both alike.
    for first in range(0, problems, CHUNK):
        chunk = cases[first : first + CHUNK]
        path.write_text(json.dumps({**document, "cases": chunk}))
        started = time.perf_counter()
        scores += evaluate([path], settings, target=solve).scores
        sandboxed += time.perf_counter() - started
        work = []
        for case in chunk:
            for index in range(repeat):
                asked = TargetCase(id=case["id"], eval_set_id=document["id"],
                                   prompt=case["prompt"], metadata=case["metadata"],
                                   repeat=index)  # fmt: skip
                work.append((case, solve(asked)))
        started = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(CONCURRENCY) as pool:
            plain += pool.map(lambda item: plain_run(item[0], item[1], timeout), work)
        baseline += time.perf_counter() - started
    shutil.rmtree(folder, ignore_errors=True)

    by_case = {score.case_id: score for score in scores}
    disagree = []
    for number, case in enumerate(cases):
        score = by_case[case["id"]]
        samples = score.samples or ((score.value,) if score.value is not None else ())
        expected = tuple(plain[number * repeat : (number + 1) * repeat])
        if tuple(samples) != expected:
            # Once more, alone: a plain run past its timeout on a loaded machine reads 0.0.
            again = []
            for index in range(repeat):
                asked = TargetCase(id=case["id"], eval_set_id=document["id"],
                                   prompt=case["prompt"], metadata=case["metadata"],
                                   repeat=index)  # fmt: skip
                again.append(plain_run(case, solve(asked), timeout * 3))
            expected = tuple(again)
        if tuple(samples) != expected:
            disagree.append(f"{case['id']}: exec {samples} vs plain {expected}")
    values = [score.value for score in scores if score.value is not None]
    mean = sum(values) / len(values) if values else 0.0
    print(f"sandboxed:        {sandboxed:.1f} s through evaluate() (exec grader, {isolation.name})")
    print(f"plain:            {baseline:.1f} s (pytest in plain subprocesses)")
    ratio = sandboxed / baseline if baseline else float("inf")
    print(f"ratio:            {ratio:.2f}x (target <= {TARGET}x)")
    rule = document["defaults"]["aggregate"]
    print(f"mean {rule + ':':<12}{mean:.3f} over {len(values)} cases")
    if args.rate == 0:
        perfect = sum(1 for value in values if value == 1.0)
        print(f"canonical:        {perfect}/{problems} cases score 1.0")
        if perfect != problems:
            disagree.append(f"only {perfect} of {problems} canonical cases scored 1.0")
    print(
        f"agreement:        {len(cases) - len(disagree)}/{len(cases)} cases match sample for sample"
    )
    for line in disagree[:10]:
        print(f"  DISAGREE {line}")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average:     {load} ({os.cpu_count()} cores)")
    missed = ratio > TARGET and not args.quick
    print(
        "MISSED" if missed or disagree else "PASS",
        "(smoke run: no timing claim)" if args.quick else "",
    )
    return 1 if missed or disagree else 0


if __name__ == "__main__":
    raise SystemExit(main())
