"""HumanEval through the exec grader: canonical solutions score 1.0, planted mutations that
break a test score below it, each checked by running the same tests in a plain subprocess
(docs/workspaces-and-execution.md, "HumanEval"). The full 164 problems x 5 samples are
benchmarks/exec_grader.py's; the suite takes a spread of them."""

from __future__ import annotations

import gzip
import importlib.util
import json
import random
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from verdryx_core.evaluation import EvalSettings, evaluate
from verdryx_core.sandbox import detect_isolation
from verdryx_core.targets import TargetCase

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "humaneval"

pytestmark = pytest.mark.skipif(
    not detect_isolation().isolated, reason="no kernel isolation here (.ci/run installs it)"
)


def load_module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


target = load_module(EXAMPLE / "target.py", "humaneval_target")
converter = load_module(ROOT / "scripts" / "humaneval_evalset.py", "humaneval_evalset")
CASES: list[dict[str, Any]] = json.loads((EXAMPLE / "humaneval.exec.json").read_text())["cases"]


def target_case(case: dict[str, Any], repeat: int = 0) -> TargetCase:
    return TargetCase(
        id=case["id"], eval_set_id="humaneval", prompt=case["prompt"],
        metadata=case["metadata"], repeat=repeat,
    )  # fmt: skip


def passes_plainly(tests: str, entry: str, solution: str, folder: Path) -> bool:
    """The independent execution: the same tests, called directly in a plain subprocess."""
    folder.mkdir()
    (folder / "solution.py").write_text(solution)
    (folder / "run_tests.py").write_text(f"{tests}\ntest_{entry}()\n")
    try:
        done = subprocess.run(
            [sys.executable, "run_tests.py"], cwd=folder, capture_output=True, timeout=5
        )
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0


def test_every_problem_is_converted_with_its_tests() -> None:
    assert len(CASES) == 164
    assert len({case["id"] for case in CASES}) == 164
    for case in CASES:
        entry = case["metadata"]["entry_point"]
        assert f"from solution import {entry}\n" in case["tests"]
        assert case["tests"].endswith(f"def test_{entry}():\n    check({entry})\n")
        # Nothing but the entry point comes from the solution: the checker's helpers are
        # the eval set's (docs/workspaces-and-execution.md, "HumanEval").
        assert case["tests"].count("from solution import") == 1, case["id"]
        assert "import *" not in case["tests"], case["id"]


def test_the_converter_reads_the_wheels_jsonl(tmp_path: Path) -> None:
    # The problems as the wheel ships them (HumanEval.jsonl.gz), rebuilt from the set.
    rows = [
        {
            "task_id": case["metadata"]["task_id"],
            "prompt": case["prompt"],
            "entry_point": case["metadata"]["entry_point"],
            "canonical_solution": case["metadata"]["canonical_solution"],
            "test": case["tests"]
            .split(f"from solution import {case['metadata']['entry_point']}\n", 1)[1]
            .rsplit("\n\ndef test_", 1)[0],
        }
        for case in [*CASES[:3], CASES[32]]
    ]
    source = tmp_path / "HumanEval.jsonl.gz"
    source.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    written = converter.evalset(source, aggregate="pass@5")
    assert written["defaults"]["aggregate"] == "pass@5"
    assert written["cases"] == [*CASES[:3], CASES[32]]


def test_canonical_solutions_pass_and_planted_mutations_fail(tmp_path: Path) -> None:
    # A spread of the problems, each answered canonically and with one planted mutation.
    picked = CASES[::24]
    cases: list[dict[str, Any]] = []
    plain: dict[str, bool] = {}
    for case in picked:
        canonical = target.canonical(target_case(case))
        entry = case["metadata"]["entry_point"]
        mutated = target.mutate(canonical, entry, random.Random(case["id"]))
        for kind, solution in (("canonical", canonical), ("mutant", mutated and mutated[0])):
            if solution is None:
                continue
            key = f"{case['id']}-{kind}"
            cases.append({"id": key, "prompt": case["prompt"], "grader": "exec",
                          "tests": case["tests"], "output": solution, "timeout": 3})  # fmt: skip
            plain[key] = passes_plainly(case["tests"], entry, solution, tmp_path / key)
    path = tmp_path / "sample.evalset.json"
    path.write_text(json.dumps({"id": "humaneval-sample", "cases": cases}))
    run = evaluate([path], EvalSettings(concurrency=2, cache="off"))
    assert run.complete and len(run.scores) == len(cases)
    mutants_failing = 0
    for score in run.scores:
        if score.case_id.endswith("-canonical"):
            assert plain[score.case_id] and score.value == 1.0, (score.case_id, score.reason)
        elif plain[score.case_id]:
            assert score.value == 1.0, score.case_id  # a mutation no test notices
        else:
            mutants_failing += 1
            assert score.value is not None and score.value < 1.0, score.case_id
    assert mutants_failing >= len(picked) // 2


#: Answers that redefine the helpers a problem's prompt gives (and its check calls) so that
#: a wrong entry point passes: a `poly` that is 0 everywhere makes any `find_zero` a root,
#: an encoder that changes nothing makes the identity a decoder.
REDEFINED_HELPERS = {
    "HumanEval-32": "def poly(xs, x):\n    return 0.0\n\ndef find_zero(xs):\n    return 0.0\n",
    "HumanEval-38": "def encode_cyclic(s):\n    return s\n\ndef decode_cyclic(s):\n    return s\n",
    "HumanEval-50": "def encode_shift(s):\n    return s\n\ndef decode_shift(s):\n    return s\n",
}


def test_an_answer_cannot_redefine_the_checks_helpers(tmp_path: Path) -> None:
    by_id = {case["id"]: case for case in CASES}
    cases = [
        {"id": key, "prompt": by_id[key]["prompt"], "grader": "exec",
         "tests": by_id[key]["tests"], "output": answer, "timeout": 5}
        for key, answer in REDEFINED_HELPERS.items()
    ]  # fmt: skip
    path = tmp_path / "helpers.evalset.json"
    path.write_text(json.dumps({"id": "humaneval-helpers", "cases": cases}))
    run = evaluate([path], EvalSettings(concurrency=2, cache="off"))
    assert run.complete and len(run.scores) == len(cases)
    for score in run.scores:
        assert score.value == 0.0, (score.case_id, score.reason)


def test_humaneval_gated_through_pytest_with_repeats(pytester: pytest.Pytester) -> None:
    # Two problems, five samples each, one aggregated as pass@1 and one as pass@5; the
    # target plants mutations in half the samples.
    for aggregate, case in (("pass@1", CASES[0]), ("pass@5", CASES[2])):
        document = {
            "id": f"humaneval-{aggregate.replace('@', '')}",
            "defaults": {"grader": "exec", "aggregate": aggregate, "timeout": 10},
            "cases": [case],
        }
        name = f"humaneval_{aggregate.replace('@', '')}.evalset.json"
        (pytester.path / name).write_text(json.dumps(document))
    (pytester.path / "target.py").write_text((EXAMPLE / "target.py").read_text())
    pytester.makeconftest(
        "import sys\nsys.path.insert(0, __import__('os').path.dirname(__file__))\n"
    )
    result = pytester.runpytest(
        "--verdryx-target=target:solve", "--verdryx-repeat=5", "--verdryx-concurrency=2",
        "--no-verdryx-store", "-p", "no:cacheprovider",
    )  # fmt: skip
    result.stdout.fnmatch_lines(
        [
            f"*exec: 2 case(s) isolated by {detect_isolation().name}*",
            "*aggregate over 5 sample(s) per case: pass@1 1, pass@5 1 case(s)*",
        ]
    )
    # Independently: the target's five samples of each, run plainly; exec's bar is 1.0, so
    # pass@1 (the mean) passes when all five pass, pass@5 when one does.
    expected = []
    for rule, case in (("pass@1", CASES[0]), ("pass@5", CASES[2])):
        entry = case["metadata"]["entry_point"]
        good = [
            passes_plainly(
                case["tests"], entry, target.solve(target_case(case, repeat)),
                pytester.path / f"plain-{case['id']}-{repeat}",
            )
            for repeat in range(5)
        ]  # fmt: skip
        expected.append(all(good) if rule == "pass@1" else any(good))
    result.assert_outcomes(passed=expected.count(True), failed=expected.count(False))
