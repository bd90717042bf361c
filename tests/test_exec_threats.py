"""The exec grader's threat model, claim by claim (docs/workspaces-and-execution.md, "Threat
model"): the graded code controls nothing but its own return values. Each attack is a
solution (or an agent's edit of its workspace) that is wrong and tries to pass anyway; each
sandbox claim is checked from both sides, the tests' and the graded code's, under bubblewrap
and under util-linux's unshare."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verdryx_core.cases import EvalCase
from verdryx_core.cli.main import main
from verdryx_core.errors import GraderError, UsageError
from verdryx_core.evaluation import EvalSettings, evaluate
from verdryx_core.graders.base import GradeContext
from verdryx_core.graders.execution import ExecGrader
from verdryx_core.runs import EvalRun, Score
from verdryx_core.sandbox import ISOLATION_ENV, Isolation, detect_isolation
from verdryx_core.sandbox.harness.codec import CodecError, decode, encode
from verdryx_core.store import Store
from verdryx_core.targets import TargetCase

ROOT = Path(__file__).resolve().parent.parent
SANDBOXES = ("bwrap", "unshare")

#: Wrong for both tests: whatever passes with it, the harness was fooled.
WRONG = "def add(a, b):\n    return a - b\n"
RIGHT = "def add(a, b):\n    return a + b\n"
TESTS = (
    "from solution import add\n\n"
    "def test_small():\n    assert add(1, 2) == 3\n\n"
    "def test_same():\n    assert add(2, 2) == 4\n"
)


def _usable(name: str) -> bool:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ISOLATION_ENV, name)
        try:
            return detect_isolation().isolated
        except UsageError:
            return False


@pytest.fixture(scope="module", params=SANDBOXES)
def sandbox(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each test in turn under bwrap and under unshare (VERDRYX_SANDBOX forces it)."""
    name = str(request.param)
    if not _usable(name):
        pytest.skip(f"{name} cannot isolate here (.ci/run installs bubblewrap)")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ISOLATION_ENV, name)
        yield name


def _run(folder: Path, cases: list[dict[str, Any]], **settings: Any) -> EvalRun:
    path = folder / "threats.evalset.json"
    path.write_text(json.dumps({"id": "threats", "cases": cases}), encoding="utf-8")
    target = settings.pop("target", None)
    store = settings.pop("store", None)
    return evaluate(
        [path], EvalSettings(concurrency=2, cache="off", **settings), target=target, store=store
    )


def _scores(run: EvalRun) -> dict[str, Score]:
    assert not run.errors, run.errors
    return {score.case_id: score for score in run.scores}


# -- the graded code cannot grade itself -------------------------------------------------------

PATCH_THE_RUNNER = (
    "import _pytest.reports\n"
    "_made = _pytest.reports.TestReport.from_item_and_call\n"
    "def _passed(item, call):\n"
    "    report = _made(item, call)\n"
    "    report.outcome, report.longrepr = 'passed', None\n"
    "    return report\n"
    "_pytest.reports.TestReport.from_item_and_call = _passed\n" + WRONG
)
REWRITE_THE_RESULTS = (
    "import atexit, glob, os\n"
    'FORGED = \'<testsuite><testcase classname="t" name="t"/></testsuite>\'\n'
    "def _forge():\n"
    "    found = glob.glob('/**/*.xml', recursive=True) + ['.verdryx-junit.xml']\n"
    "    for path in found:\n"
    "        try:\n"
    "            open(path, 'w').write(FORGED)\n"
    "        except OSError:\n"
    "            pass\n"
    "atexit.register(_forge)\n" + WRONG
)
ALWAYS_EQUAL = (
    "class _Anything:\n"
    "    def __eq__(self, other):\n        return True\n"
    "    __hash__ = object.__hash__\n"
    "def add(a, b):\n    return _Anything()\n"
)
#: Right where it can be, and where it would fail it asks pytest to skip the test instead.
SKIP_WHAT_FAILS = (
    "def add(a, b):\n"
    "    if (a, b) == (1, 2):\n        return 3\n"
    "    import pytest\n    pytest.skip('not today')\n"
)
#: The tests are hidden from the code: it cannot read them to learn the expected values.
READ_THE_TESTS = (
    "import glob\n"
    "def add(a, b):\n"
    "    seen = glob.glob('**/test_*.py', recursive=True) + glob.glob('/.verdryx/*/test_*.py')\n"
    "    if seen or glob.glob('/tmp/**/test_*.py', recursive=True):\n"
    "        return a + b\n"
    "    return a - b\n"
)
EXIT_AT_IMPORT = "import os\nos._exit(0)\n" + WRONG
SYS_EXIT_AT_IMPORT = "raise SystemExit(0)\n" + WRONG
#: A `command` case's check: run by the harness, the graded code imported through it.
CHECK = ["python", "-c", "from solution import add; assert add(1, 2) == 3 and add(2, 2) == 4"]

TRICKS: dict[str, dict[str, Any]] = {
    "honest": {"output": RIGHT, "tests": TESTS},
    "patch-the-runner": {"output": PATCH_THE_RUNNER, "tests": TESTS},
    "rewrite-the-results": {"output": REWRITE_THE_RESULTS, "tests": TESTS},
    "always-equal": {"output": ALWAYS_EQUAL, "tests": TESTS},
    "skip-what-fails": {"output": SKIP_WHAT_FAILS, "tests": TESTS},
    "read-the-tests": {"output": READ_THE_TESTS, "tests": TESTS},
    "exit-at-import": {"output": EXIT_AT_IMPORT, "tests": TESTS},
    "command-honest": {"output": RIGHT, "command": CHECK},
    "command-exit-at-import": {"output": EXIT_AT_IMPORT, "command": CHECK},
    "command-sys-exit-at-import": {"output": SYS_EXIT_AT_IMPORT, "command": CHECK},
}


@pytest.fixture(scope="module")
def tricks(sandbox: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Score]:
    cases = [{"id": key, "prompt": key, "grader": "exec", **spec} for key, spec in TRICKS.items()]
    return _scores(_run(tmp_path_factory.mktemp("tricks"), cases))


def test_an_honest_solution_passes_in_both_modes(tricks: dict[str, Score]) -> None:
    assert tricks["honest"].value == 1.0, tricks["honest"].reason
    assert tricks["command-honest"].value == 1.0, tricks["command-honest"].reason


@pytest.mark.parametrize(
    "trick", ["patch-the-runner", "rewrite-the-results", "always-equal", "read-the-tests"]
)
def test_a_wrong_solution_that_games_the_runner_scores_zero(
    tricks: dict[str, Score], trick: str
) -> None:
    score = tricks[trick]
    assert score.value == 0.0, score.reason
    assert (score.reason or "").startswith("0 of 2 tests passed")


def test_the_code_cannot_skip_the_tests_it_fails(tricks: dict[str, Score]) -> None:
    # pytest's skip raised in the graded code's process is one of its errors, not an outcome.
    score = tricks["skip-what-fails"]
    assert score.value == 0.5, score.reason
    assert "the graded code raised Skipped" in (score.reason or "")


@pytest.mark.parametrize("trick", ["exit-at-import", "command-exit-at-import"])
def test_exiting_early_scores_zero(tricks: dict[str, Score], trick: str) -> None:
    score = tricks[trick]
    assert score.value == 0.0, score.reason
    assert "the graded code's process ended" in (score.reason or "")


def test_a_command_does_not_pass_because_the_code_exited_zero(tricks: dict[str, Score]) -> None:
    score = tricks["command-sys-exit-at-import"]
    assert score.value == 0.0, score.reason
    assert (score.reason or "").startswith("python exited 1"), score.reason
    assert "SystemExit" in (score.reason or "")


# -- the code cannot pass its failure off as the sandbox's ---------------------------------------


def _says(words: str, status: int, *, stdout: bool = False) -> str:
    """A solution that, imported, writes what a sandbox tool would say and exits `status`."""
    stream = "stdout" if stdout else "stderr"
    return (
        f"import os, sys\nsys.{stream}.write({words!r} + '\\n')\nsys.{stream}.flush()\n"
        f"os._exit({status})\n" + WRONG
    )


#: The graded code makes its harness server itself fail, as a tool fails, after saying
#: what bubblewrap says: it caps the server's open files below the next one it would open
#: (the same user may) and connects to it, so the server's accept raises and it exits 1.
#: Where it can reach the server's socket (unisolated) that is an exit 1 of the graded
#: code's side with `bwrap: ...` first in its output, which no reading of that output can
#: tell from bwrap's.
SERVER_EXITS_1 = (
    "import os, resource, socket, sys, time\n"
    "sys.stderr.write('bwrap: Creating new namespace failed: Operation not permitted\\n')\n"
    "sys.stderr.flush()\n"
    "server = os.getppid()\n"
    "held = {int(fd) for fd in os.listdir(f'/proc/{server}/fd')}\n"
    "inodes = {os.readlink(f'/proc/{server}/fd/{fd}') for fd in held}\n"
    "free = min(set(range(len(held) + 1)) - held)\n"
    "resource.prlimit(server, resource.RLIMIT_NOFILE, (free, free))\n"
    "for line in open('/proc/net/unix').read().splitlines()[1:]:\n"
    "    parts = line.split()\n"
    "    if len(parts) > 7 and f'socket:[{parts[6]}]' in inodes:\n"
    "        try:\n"
    "            socket.socket(socket.AF_UNIX).connect(parts[7])\n"
    "        except OSError:\n"
    "            pass\n"
    "time.sleep(0.5)\n"
    "os._exit(1)\n" + WRONG
)

#: The words each sandbox tool (and verdryx's own setup) fails with, and its exit status.
MIMICS: dict[str, str] = {
    "server-exits-1": SERVER_EXITS_1,
    "bwrap": _says("bwrap: Creating new namespace failed: Operation not permitted", 1),
    "unshare": _says("unshare: unshare failed: Operation not permitted", 1),
    "prlimit": _says("prlimit: failed to set the CPU resource limit", 1, stdout=True),
    "setpriv": _says("setpriv: setresuid failed: Operation not permitted", 1),
    "setup": _says("verdryx-sandbox: the work folder could not be copied in", 97),
}


@pytest.mark.parametrize("isolation", ["none", *SANDBOXES])
def test_output_that_reads_like_the_sandboxs_failure_scores_zero(
    isolation: str, tmp_path: Path
) -> None:
    if isolation != "none" and not _usable(isolation):
        pytest.skip(f"{isolation} cannot isolate here")
    kinds = {"tests": {"tests": TESTS}, "command": {"command": CHECK}}
    cases = [
        {"id": f"{name}-{kind}", "prompt": name, "grader": "exec", "output": code, **check}
        for name, code in MIMICS.items()
        for kind, check in kinds.items()
        if kind == "tests" or name == "server-exits-1"
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ISOLATION_ENV, isolation)
        run = _run(tmp_path, cases, unsafe_exec=isolation == "none")
    # Measured, 0: never the run's error, never unmeasured.
    scores = _scores(run)
    assert sorted(scores) == sorted(case["id"] for case in cases)
    for key, score in scores.items():
        assert score.value == 0.0 and score.unmeasured is None, (key, score.reason)


def test_a_sandbox_that_fails_before_the_code_is_still_the_cases_error(tmp_path: Path) -> None:
    # A wrapper that fails as bubblewrap does where it cannot make namespaces: no code ran.
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    case = EvalCase(id="c", prompt="p", grader="exec", options={"tests": TESTS})
    grader = ExecGrader(isolation=Isolation("bwrap", str(fake)))
    with pytest.raises(GraderError) as caught:
        grader.grade(case, RIGHT, GradeContext(eval_set_id="s"))
    assert str(caught.value).startswith(
        "exec case 'c': the sandbox failed: bwrap: No permissions to create new namespace"
    )


# -- an agent cannot change the tests' configuration or the tests ------------------------------

CONFTEST = (
    "import pytest\n\n"
    "@pytest.hookimpl(hookwrapper=True)\n"
    "def pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n"
    "    report = outcome.get_result()\n"
    "    report.outcome, report.longrepr = 'passed', None\n"
)
WORKSPACE = {
    "files": {
        "calc.py": WRONG,
        "test_calc.py": TESTS.replace("solution", "calc"),
        "data.txt": "the eval set's data\n",
    }
}
#: What each agent leaves in its workspace (all leave calc.py wrong but the honest one).
LEFT: dict[str, dict[str, str]] = {
    "honest": {"calc.py": RIGHT},
    "plant-conftest": {"conftest.py": CONFTEST},
    "plant-ini-and-plugin": {
        "pytest.ini": "[pytest]\naddopts = -p forged_plugin\n",
        "forged_plugin.py": CONFTEST,
    },
    "plant-pyproject": {
        "pyproject.toml": '[tool.pytest.ini_options]\naddopts = "-p forged_plugin"\n',
        "forged_plugin.py": CONFTEST,
    },
    "edit-the-tests": {"test_calc.py": "def test_small():\n    pass\n"},
    "plant-a-test-file": {"test_extra.py": "import os\nos._exit(0)\n"},
}


def _agent(case: TargetCase) -> str:
    assert case.workspace is not None
    for name, text in LEFT[case.id].items():
        (Path(case.workspace) / name).write_text(text, encoding="utf-8")
    return "done"


@pytest.fixture(scope="module")
def agents(sandbox: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Score]:
    cases = [
        {
            "id": key,
            "prompt": key,
            "grader": "exec",
            "tests": "test_calc.py",
            "workspace": WORKSPACE,
        }
        for key in LEFT
    ]
    return _scores(_run(tmp_path_factory.mktemp("agents"), cases, target=_agent))


def test_an_honest_agent_passes_its_repositorys_tests(agents: dict[str, Score]) -> None:
    assert agents["honest"].value == 1.0, agents["honest"].reason


@pytest.mark.parametrize(
    "trick",
    ["plant-conftest", "plant-ini-and-plugin", "plant-pyproject", "edit-the-tests",
     "plant-a-test-file"],
)  # fmt: skip
def test_test_configuration_or_tests_an_agent_leaves_are_not_loaded(
    agents: dict[str, Score], trick: str
) -> None:
    score = agents[trick]
    assert score.value == 0.0, score.reason
    assert (score.reason or "").startswith("0 of 2 tests passed")


# -- the graded code sees nothing of the host ----------------------------------------------------


@pytest.fixture(scope="module")
def host_secrets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A secret file in the checkout, one in the user's home, and a listening UNIX socket
    of the host's (by path, and abstract)."""
    mark = f"verdryx-secret-{os.getpid()}-{time.monotonic_ns()}"
    made = [ROOT / f".{mark}"]
    home = Path.home() / f".{mark}"
    try:
        home.write_text(mark)
        made.append(home)
    except OSError:
        pass
    made[0].write_text(mark)
    folder = tmp_path_factory.mktemp("socket")
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listening.bind(str(folder / "host.sock"))
    listening.listen(1)
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind(f"\0{mark}")
    abstract.listen(1)
    try:
        yield {
            "files": json.dumps([str(path) for path in made]),
            "socket": str(folder / "host.sock"),
            "abstract": mark,
        }
    finally:
        listening.close()
        abstract.close()
        for path in made:
            path.unlink(missing_ok=True)


PEEK = (
    "import socket\n"
    "def peek(path):\n    return open(path).read()\n"
    "def connect(address):\n"
    "    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
    "    s.connect(address)\n"
    "    return 'connected'\n"
)


def _root_tests(files: str, evalset: str, sock: str, abstract: str) -> str:
    return (
        "import os, socket\nimport pytest\nfrom solution import connect, peek\n\n"
        f"FILES = {files} + [{evalset!r}, '/etc/passwd', '/etc/hostname']\n"
        f"SOCKETS = [{sock!r}, '\\0' + {abstract!r}]\n\n"
        "@pytest.mark.parametrize('path', FILES)\n"
        "def test_no_host_file_for_the_tests(path):\n"
        "    with pytest.raises(OSError):\n        open(path).read()\n\n"
        "@pytest.mark.parametrize('path', FILES)\n"
        "def test_no_host_file_for_the_code(path):\n"
        "    with pytest.raises(OSError):\n        peek(path)\n\n"
        "@pytest.mark.parametrize('address', SOCKETS)\n"
        "def test_no_host_socket_for_the_tests(address):\n"
        "    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "    with pytest.raises(OSError):\n        s.connect(address)\n\n"
        "@pytest.mark.parametrize('address', SOCKETS)\n"
        "def test_no_host_socket_for_the_code(address):\n"
        "    with pytest.raises(OSError):\n        connect(address)\n\n"
        "def test_no_run_folders_and_a_small_root():\n"
        "    for folder in ('/run', '/var/run', '/sys', '/mnt', '/root/.ssh'):\n"
        "        assert not os.path.exists(folder), folder\n"
        "    assert not os.path.exists(os.path.join(os.path.dirname(__file__), 'solution.py'))\n"
    )


def test_neither_side_sees_host_files_sockets_or_the_eval_set(
    sandbox: str, host_secrets: dict[str, str], tmp_path: Path
) -> None:
    evalset = tmp_path / "threats.evalset.json"
    tests = _root_tests(
        host_secrets["files"], str(evalset), host_secrets["socket"], host_secrets["abstract"]
    )
    run = _run(tmp_path, [{"id": "root", "prompt": "p", "grader": "exec", "output": PEEK,
                           "tests": tests}])  # fmt: skip
    (score,) = run.scores
    assert score.value == 1.0, score.reason


# -- the work folder's total size is capped ------------------------------------------------------

FILL = (
    "def fill():\n"
    "    for number in range(1_000_000):\n"
    "        with open(f'f{number}', 'w') as handle:\n"
    "            handle.write('x' * 100)\n"
)
FILL_COMMAND = ["python", "-c", "from solution import fill\nfill()"]
FILL_TESTS = "from solution import fill\n\ndef test_fill():\n    fill()\n"
FILL_HERE = [
    "python", "-c",
    "for n in range(1_000_000):\n    with open(f'g{n}', 'w') as f:\n        f.write('x' * 100)",
]  # fmt: skip


def test_many_small_files_hit_the_disk_cap_and_the_run_is_still_stored(
    sandbox: str, tmp_path: Path
) -> None:
    cases = [
        {"id": "code-fills", "prompt": "p", "grader": "exec", "output": FILL, "tests": FILL_TESTS},
        {"id": "command-fills", "prompt": "p", "grader": "exec", "output": FILL,
         "command": FILL_HERE},
    ]  # fmt: skip
    db = tmp_path / "v.db"
    run = _run(tmp_path, cases, exec_disk_mib=1, store=db)
    scores = _scores(run)
    for key in ("code-fills", "command-fills"):
        reason = scores[key].reason or ""
        assert scores[key].value == 0.0, reason
        assert reason.startswith(
            "the work folder reached its disk cap (1 MiB, EvalSettings.exec_disk_mib)"
        ), reason
    with Store.open(db) as store:
        assert store.load_run(run.id) is not None


# -- nothing the case started outlives it --------------------------------------------------------


@pytest.mark.parametrize("isolation", ["none", *SANDBOXES])
def test_no_process_the_case_started_outlives_it(isolation: str, tmp_path: Path) -> None:
    if isolation != "none" and not _usable(isolation):
        pytest.skip(f"{isolation} cannot isolate here")
    seconds = f"{4000 + os.getpid() % 1000}.{time.monotonic_ns() % 1000}"
    leave = (
        "import os, subprocess\n"
        f"subprocess.Popen(['setsid', 'sleep', '{seconds}'])\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        os.execvp('sleep', ['sleep', '{seconds}1'])\n"
        "    os._exit(0)\n"
        "os.wait()\n"
    )
    cases = [{"id": "leave", "prompt": "p", "grader": "exec", "output": "",
              "command": ["python", "-c", leave]}]  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ISOLATION_ENV, isolation)
        run = _run(tmp_path, cases, unsafe_exec=isolation == "none")
    assert run.scores[0].value == 1.0, run.scores[0].reason
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True)
    assert seconds not in ps.stdout


def test_the_exec_disk_option_is_in_both_faces(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    if not detect_isolation().isolated:
        pytest.skip("no isolation here")
    case = {"id": "fill", "prompt": "p", "grader": "exec", "output": "", "command": FILL_HERE}
    path = pytester.path / "fill.evalset.json"
    path.write_text(json.dumps({"id": "f", "cases": [case]}))
    result = pytester.runpytest(path.name, "--no-verdryx-store", "--verdryx-exec-disk=1")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*the work folder reached its disk cap (1 MiB, --verdryx-exec-disk)*"]
    )
    assert pytester.runpytest(path.name, "--verdryx-exec-disk=0").ret != 0
    with pytest.raises(SystemExit):
        main(["eval", str(path), "--exec-disk", "0"])
    assert "below the minimum 1" in capsys.readouterr().err


# -- what crosses is data ------------------------------------------------------------------------

DATA = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
    | st.binary() | st.complex_numbers(allow_nan=False),
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=3) | st.integers(), inner, max_size=4)
    | st.frozensets(st.integers(), max_size=4),
    max_leaves=20,
)  # fmt: skip


def _no_refs(item: object) -> list[Any]:
    raise AssertionError(f"data was sent as a reference: {item!r}")


@settings(max_examples=150, deadline=None)
@given(value=DATA)
def test_data_crosses_as_itself(value: Any) -> None:
    sent = json.loads(json.dumps(encode(value, _no_refs)))
    back = decode(sent, _no_refs)
    assert back == value and type(back) is type(value)


JUNK = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=15,
)


def _is_data(value: object) -> bool:
    if value is None or type(value) in (bool, int, float, complex, str, bytes, bytearray, range):
        return True
    if value is Ellipsis:
        return True
    if type(value) in (list, tuple, set, frozenset) or isinstance(value, tuple):
        return all(_is_data(item) for item in value)  # type: ignore[attr-defined]
    if type(value) is dict:
        return all(_is_data(k) and _is_data(v) for k, v in value.items())
    return False


TAGGED = st.tuples(
    st.sampled_from(["i", "f", "c", "l", "t", "d", "s", "S", "b", "B", "r", "n", "e", "ref"]),
    st.lists(JUNK, max_size=3),
)


@settings(max_examples=300, deadline=None)
@given(junk=JUNK | TAGGED.map(lambda pair: [pair[0], *pair[1]]))
def test_whatever_the_graded_code_sends_is_data_or_refused(junk: Any) -> None:
    try:
        value = decode(junk, _no_refs)
    except (CodecError, AssertionError):
        return
    assert _is_data(value), value
