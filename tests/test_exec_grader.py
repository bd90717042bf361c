"""The exec grader's sandbox holds each of its limits, and what the code does is the case's
result, never the session's (docs/workspaces-and-execution.md, "Running the tests: the exec
grader")."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from verdryx_core.cases import EvalCase
from verdryx_core.errors import EvalSetError, UsageError
from verdryx_core.evalsets.load import load_evalset
from verdryx_core.evaluation import EvalSettings, Evaluation, evaluate
from verdryx_core.evaluation.exec_notes import run_notes
from verdryx_core.graders.base import GradeContext
from verdryx_core.graders.execution import ExecGrader
from verdryx_core.graders.junit import read_junit
from verdryx_core.runs import EvalRun
from verdryx_core.sandbox import ISOLATION_ENV, Limits, detect_isolation, run_sandboxed

ROOT = Path(__file__).resolve().parent.parent
ADD = "def add(a, b):\n    return a + b\n"
ADD_TESTS = (
    "from solution import add\n\n"
    "def test_small():\n    assert add(1, 2) == 3\n\n"
    "def test_same():\n    assert add(2, 2) == 4\n"
)


def isolated() -> bool:
    try:
        return detect_isolation().isolated
    except UsageError:
        return False


needs_isolation = pytest.mark.skipif(
    not isolated(), reason="no kernel isolation here (.ci/run installs bubblewrap)"
)


def python(code: str) -> list[str]:
    return ["python", "-c", code]


def write_set(folder: Path, cases: list[dict[str, Any]], name: str = "exec") -> Path:
    path = folder / f"{name}.evalset.json"
    path.write_text(json.dumps({"id": name, "cases": cases}), encoding="utf-8")
    return path


#: One case per limit, each failing the way its limit makes it fail; graded together in one
#: run at concurrency 2, beside a good case that must still pass.
LIMIT_CASES: dict[str, dict[str, Any]] = {
    "good": {"output": ADD, "tests": ADD_TESTS},
    "network": {
        "output": "import socket\n",
        "tests": (
            "import socket\n\ndef test_reach_out():\n"
            "    socket.create_connection(('1.1.1.1', 80), timeout=2).close()\n"
        ),
    },
    "write-outside": {
        "output": "",
        "tests": (
            "import os\n\ndef test_etc():\n    open('/etc/verdryx-escaped', 'w').write('x')\n"
            "\ndef test_tmp():\n    open('/tmp/verdryx-escaped', 'w').write('x')\n"
            "\ndef test_escape():\n"
            "    home = os.path.expanduser('~')\n"
            "    open(home + '/../../../../tmp/verdryx-escaped', 'w').write('x')\n"
        ),
    },
    "memory": {"output": "", "command": python("bytearray(4 << 30)")},
    "sleep": {"output": "", "command": python("import time; time.sleep(60)"), "timeout": 1.5},
    "fork-bomb": {
        # Forks until the kernel refuses, then reports how far it got; the children sleep,
        # so the contained bomb costs no CPU.
        "output": "",
        "command": python(
            "import os, sys, time\n"
            "made = 0\n"
            "while made < 5000:\n"
            "    try:\n"
            "        pid = os.fork()\n"
            "    except OSError:\n"
            "        break\n"
            "    if pid == 0:\n"
            "        time.sleep(30); os._exit(0)\n"
            "    made += 1\n"
            "print('forked', made, flush=True)\n"
            "sys.exit(3)\n"
        ),
        "timeout": 10,
    },
}


@pytest.fixture(scope="module")
def limits_run(tmp_path_factory: pytest.TempPathFactory) -> EvalRun:
    folder = tmp_path_factory.mktemp("limits")
    cases = [
        {"id": key, "prompt": key, "grader": "exec", **spec} for key, spec in LIMIT_CASES.items()
    ]
    # The runs' temporary folders go to a folder of this test's (the standard library's
    # `tempfile.tempdir`), so what they leave behind can be seen apart from other runs'.
    scratch = folder / "tmp"
    scratch.mkdir()
    saved, tempfile.tempdir = tempfile.tempdir, str(scratch)
    try:
        run = evaluate([write_set(folder, cases)], EvalSettings(concurrency=2, cache="off"))
    finally:
        tempfile.tempdir = saved
    # Every temporary folder the runs made is gone (the harness's own folder, made once per
    # process, is the process's).
    assert [p for p in scratch.iterdir() if not p.name.startswith("verdryx-harness-")] == []
    return run


def score_of(run: EvalRun, case_id: str) -> Any:
    return next(score for score in run.scores if score.case_id == case_id)


@needs_isolation
def test_the_session_goes_on_and_a_good_solution_passes(limits_run: EvalRun) -> None:
    assert limits_run.complete and not limits_run.errors
    good = score_of(limits_run, "good")
    assert good.value == 1.0 and good.passed and good.reason == "2 of 2 tests passed"


@needs_isolation
def test_network_is_refused(limits_run: EvalRun) -> None:
    score = score_of(limits_run, "network")
    assert score.value == 0.0 and "Network is unreachable" in score.reason


@needs_isolation
def test_writes_outside_the_workspace_are_refused(limits_run: EvalRun) -> None:
    score = score_of(limits_run, "write-outside")
    # /tmp (and the home in it) is the code's own, private: writing there works, and never
    # reaches the host's.
    assert score.reason.startswith("2 of 3 tests passed; test_etc: ")
    assert "Read-only file system" in score.reason
    assert not Path("/tmp/verdryx-escaped").exists()
    assert not Path("/etc/verdryx-escaped").exists()


@needs_isolation
def test_memory_is_capped(limits_run: EvalRun) -> None:
    score = score_of(limits_run, "memory")
    assert score.value == 0.0 and "MemoryError" in score.reason


@needs_isolation
def test_a_sleep_past_the_timeout_is_stopped(limits_run: EvalRun) -> None:
    score = score_of(limits_run, "sleep")
    assert score.value == 0.0 and score.reason.startswith("timed out after")


@needs_isolation
def test_a_fork_bomb_is_contained(limits_run: EvalRun) -> None:
    score = score_of(limits_run, "fork-bomb")
    assert score.value == 0.0
    made = int(score.reason.split("forked ")[1].split()[0])
    assert 0 < made < Limits().processes
    # None of its sleeping children outlived the run.
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True)
    assert "os._exit(0)" not in ps.stdout


@needs_isolation
def test_a_cpu_loop_is_stopped_by_the_cpu_limit(tmp_path: Path) -> None:
    finished = run_sandboxed(
        [sys.executable, "-c", "while True: pass"],
        workdir=tmp_path,
        isolation=detect_isolation(),
        limits=Limits(wall_s=60, cpu_s=1),
    )
    assert not finished.timed_out and finished.seconds < 50
    # SIGXCPU, as the signal itself or as 128 + its number through the namespace tool.
    assert finished.exit_code in (-24, 128 + 24, 1)


@needs_isolation
def test_file_size_and_output_are_capped(tmp_path: Path) -> None:
    finished = run_sandboxed(
        [sys.executable, "-c", "print('a' * 100_000); open('big', 'wb').write(b'x' * (1 << 20))"],
        workdir=tmp_path,
        isolation=detect_isolation(),
        limits=Limits(file_bytes=1 << 16, output_bytes=1000),
    )
    assert finished.exit_code != 0
    assert finished.output.endswith("[output cut at 1000 bytes]")
    assert not (tmp_path / "big").exists() or (tmp_path / "big").stat().st_size <= 1 << 16


@needs_isolation
def test_the_code_gets_a_private_home_and_none_of_verdryxs_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret")
    finished = run_sandboxed(
        [sys.executable, "-c", "import os; print(os.environ['HOME']); print(dict(os.environ))"],
        workdir=tmp_path,
        isolation=detect_isolation(),
        limits=Limits(),
    )
    home = finished.output.splitlines()[0]
    assert finished.exit_code == 0 and home != os.path.expanduser("~")
    assert "sk-secret" not in finished.output
    assert not Path(home).exists()  # removed after the run


@needs_isolation
def test_a_workspace_is_where_the_tests_run(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "tests").mkdir(parents=True)
    (workspace / "calc.py").write_text(ADD)
    (workspace / "tests" / "test_calc.py").write_text(
        "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    case = EvalCase(
        id="ws",
        prompt="p",
        grader="exec",
        options={"tests": "tests/test_calc.py"},
        workspace={"folder": str(workspace), "sha256": "-"},
    )
    context = GradeContext(eval_set_id="s", workspace=workspace)
    grade = ExecGrader().grade(case, "the agent's reply", context)
    assert grade.value == 1.0, grade.reason
    # The reply went to solution.py, as no solution.py was there; the JUnit file is gone.
    assert (workspace / "solution.py").read_text() == "the agent's reply"
    assert sorted(p.name for p in workspace.iterdir()) == ["calc.py", "solution.py", "tests"]


def test_junit_results_are_read_back(tmp_path: Path) -> None:
    (tmp_path / "test_mix.py").write_text(
        "import pytest\n\ndef test_ok():\n    pass\n\n"
        "def test_bad():\n    assert 1 == 2, 'one is not two'\n"
        "\n@pytest.mark.skip\ndef test_skipped():\n    pass\n"
    )
    junit = tmp_path / "j.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}"],
        cwd=tmp_path,
        capture_output=True,
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        check=False,
    )
    results = read_junit(junit)
    assert results is not None
    assert (results.total, results.passed, results.skipped, results.ran) == (3, 1, 1, 2)
    assert results.first_failure is not None
    assert results.first_failure.startswith("test_bad: AssertionError: one is not two")
    assert read_junit(tmp_path / "missing.xml") is None


def test_without_isolation_exec_is_refused_unless_unsafe_is_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The documented knob: VERDRYX_SANDBOX=none stands for a machine without isolation.
    monkeypatch.setenv(ISOLATION_ENV, "none")
    path = write_set(tmp_path, [{"id": "add", "prompt": "p", "grader": "exec", "output": ADD,
                                 "tests": ADD_TESTS}])  # fmt: skip
    refused = evaluate([path], EvalSettings(cache="off"))
    (score,) = refused.scores
    # Through the Python API: the keyword argument, not the command line's flag.
    assert score.value is None and "EvalSettings(unsafe_exec=True)" in (score.unmeasured or "")
    cases = load_evalset(path).cases
    (line,) = run_notes(cases, repeat=1, unsafe_exec=False, flags={"unsafe_exec": "--x"})
    assert line == "exec: 1 case(s) refused: no isolation on this machine (see --x)"
    allowed = evaluate([path], EvalSettings(cache="off", unsafe_exec=True))
    assert allowed.scores[0].value == 1.0
    (line,) = run_notes(cases, repeat=1, unsafe_exec=True, flags={"unsafe_exec": "--x"})
    assert line.startswith("exec: 1 case(s) UNISOLATED")


def test_a_forced_isolation_that_is_not_known_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ISOLATION_ENV, "chroot")
    with pytest.raises(UsageError, match="VERDRYX_SANDBOX='chroot' is not one of"):
        detect_isolation()


def test_exec_cases_run_in_the_bounded_pool() -> None:
    # Like a remote call: under --verdryx-concurrency 2, two run at once.
    case = EvalCase(id="c", prompt="p", grader="exec", options={"command": ["true"]})
    scorer = Evaluation(EvalSettings(concurrency=2, cache="off")).scorer([case])
    assert scorer.is_remote(case)


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({}, "tests", "requires 'tests'"),
        ({"tests": "x", "command": ["true"]}, "command", "not both"),
        ({"command": []}, "command", "should be non-empty"),
        ({"command": ["ok"], "timeout": 0}, "timeout", "minimum of 0"),
        ({"tests": "tests/test_x.py"}, "tests", "no 'workspace'"),
        ({"tests": "x", "expected": "y", "tolerance": 1}, "tolerance", "only valid with grader"),
    ],
)
def test_a_bad_exec_case_is_one_line_naming_the_field(
    tmp_path: Path, fields: dict[str, Any], field: str, message: str
) -> None:
    path = write_set(tmp_path, [{"id": "bad", "prompt": "p", "grader": "exec", **fields}])
    with pytest.raises(EvalSetError) as caught:
        load_evalset(path)
    text = str(caught.value)
    assert "case 'bad'" in text and f"field '{field}'" in text and message in text
    assert "\n" not in text


def swe_set(folder: Path) -> Path:
    """The SWE-style example's repository, graded by its own tests (exec) and a contract."""
    shutil.copytree(ROOT / "examples" / "workspace", folder, dirs_exist_ok=True)
    case = {
        "id": "fix-tax-bug",
        "prompt": "total_with_tax(100, 0.2) returns 100.2 instead of 120.0. Fix pricing.py.",
        "metadata": {"task": "fix-tax"},
        "workspace": "repo",
        "checks": [
            {"grader": "exec", "tests": "test_pricing.py", "weight": 3},
            {"grader": "contract", "contract": {"success_criteria": [
                {"id": "tests-untouched", "type": "file_contains", "path": "test_pricing.py",
                 "pattern": "== 120\\.0"}]}},
        ],
    }  # fmt: skip
    path = folder / "swe-exec.evalset.json"
    path.write_text(json.dumps({"id": "swe-exec", "target": "fixer:fix", "cases": [case]}))
    return path


@needs_isolation
@pytest.mark.parametrize(("edit", "value"), [("right", 1.0), ("wrong", 0.5)])
def test_a_workspace_case_runs_its_repositorys_tests_where_the_agent_left_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: str, value: float
) -> None:
    monkeypatch.setenv("VERDRYX_EXAMPLE_EDIT", edit)
    monkeypatch.syspath_prepend(str(tmp_path))
    run = evaluate([swe_set(tmp_path)], EvalSettings(cache="off", target_root=tmp_path))
    (score,) = run.scores
    # The wrong edit passes 1 of the repository's 3 tests (weight 3) and keeps them (weight 1).
    assert score.value == pytest.approx(value), score.reason
    assert [check.grader for check in score.checks] == ["exec", "contract"]


@needs_isolation
def test_exec_through_pytest_says_which_isolation_ran(pytester: pytest.Pytester) -> None:
    swe_set(pytester.path)
    result = pytester.runpytest("swe-exec.evalset.json", "--no-verdryx-store")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"*exec: 1 case(s) isolated by {detect_isolation().name}*"])
