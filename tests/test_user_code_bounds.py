"""User code cannot hang a run or bury its error: custom graders are held to the call
timeout and answer with one line when they raise, threads a target leaves running do not
keep the process alive, and an event log path that is not a regular file is refused at
start (docs/graders.md, "Custom graders"; docs/targets.md, "Threads a target leaves
behind"; docs/events-and-otlp.md).

Bounds here are "stops, does not hang": ten times and more above what each takes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from verdryx_core.addons.events.log import EventLog, check_events_path
from verdryx_core.errors import GraderError, UsageError
from verdryx_core.graders import Grade
from verdryx_core.graders.bounded import CallTimedOut, call_within
from verdryx_core.graders.registry import register_grader, unregister_grader
from verdryx_core.leftover_threads import threads_now

VERDRYX = Path(sys.executable).with_name("verdryx")

pytest_plugins = ["pytester"]


def _evalset(path: Path, cases: list[dict[str, object]]) -> None:
    path.write_text(json.dumps({"id": "bounds", "cases": cases}), encoding="utf-8")


# -- the bounded call ------------------------------------------------------------------------


def test_a_bounded_call_hands_back_its_value_and_its_exception() -> None:
    assert call_within(lambda: 41 + 1, 5.0) == 42
    with pytest.raises(ZeroDivisionError):
        call_within(lambda: 1 / 0, 5.0)
    assert call_within(lambda: "here", None) == "here"


def test_a_stuck_call_is_abandoned_and_the_next_call_gets_a_fresh_worker() -> None:
    release = threading.Event()
    try:
        started = time.monotonic()
        with pytest.raises(CallTimedOut):
            call_within(lambda: release.wait(300), 0.2)
        assert time.monotonic() - started < 30
        # The worker is still stuck in the first call: the next one must not queue behind it.
        assert call_within(lambda: threading.current_thread().name, 30.0).startswith(
            "verdryx-custom-grader"
        )
    finally:
        release.set()


def test_calls_from_several_threads_run_side_by_side() -> None:
    """Each caller has its own worker: four calls that each wait for the others finish
    only if they run at once."""
    barrier = threading.Barrier(4, timeout=60)
    answers: list[int] = []

    def caller() -> None:
        answers.append(call_within(barrier.wait, 60.0))

    threads = [threading.Thread(target=caller) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert sorted(answers) == [0, 1, 2, 3]


def _workers_alive() -> int:
    return sum(t.name == "verdryx-custom-grader" for t in threading.enumerate())


def test_a_calling_thread_that_ends_takes_its_worker_with_it() -> None:
    """A process that runs evaluation after evaluation (each with its own pool threads)
    keeps no idle worker of the threads that are gone."""
    before = _workers_alive()
    callers = [threading.Thread(target=call_within, args=(lambda: None, 30.0)) for _ in range(5)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(60)
    deadline = time.monotonic() + 60
    while _workers_alive() > before:
        assert time.monotonic() < deadline, _workers_alive()
        time.sleep(0.05)


# -- custom graders under the call timeout ---------------------------------------------------


class _Waits:
    def __init__(self, release: threading.Event) -> None:
        self.release = release

    def grade(self, case: object, output: object, context: object) -> Grade:
        self.release.wait(300)
        return Grade(value=1.0)


class _Raises:
    def grade(self, case: object, output: object, context: object) -> Grade:
        raise LookupError("no rubric for\nthis case")


def test_a_custom_grader_past_the_timeout_is_that_case_s_one_line_error(tmp_path: Path) -> None:
    from verdryx_core.evalsets.load import load_evalset
    from verdryx_core.evaluation import EvalSettings, Evaluation

    release = threading.Event()
    register_grader("waits_forever", _Waits(release), replace=True)
    register_grader("raises_lookup", _Raises(), replace=True)
    try:
        path = tmp_path / "c.evalset.json"
        _evalset(
            path,
            [
                {"id": "slow", "prompt": "p", "output": "o", "grader": "waits_forever"},
                {"id": "bad", "prompt": "p", "output": "o", "grader": "raises_lookup"},
            ],
        )
        evalset = load_evalset(path)
        evaluation = Evaluation(EvalSettings(call_timeout=0.3))
        scorer = evaluation.scorer(evalset.cases)
        context = evaluation.context(evalset)
        started = time.monotonic()
        with pytest.raises(GraderError) as slow:
            scorer.score(evalset.cases[0], context)
        assert time.monotonic() - started < 30
        message = str(slow.value)
        assert "'waits_forever'" in message and "0.3 s" in message and "'slow'" in message
        with pytest.raises(GraderError) as bad:
            scorer.score(evalset.cases[1], context)
        message = str(bad.value)
        assert "\n" not in message
        assert "raised LookupError: no rubric for" in message and "'bad'" in message
        assert "test_user_code_bounds.py:" in message  # where it raised
    finally:
        release.set()
        unregister_grader("waits_forever")
        unregister_grader("raises_lookup")


CONFTEST = """
import threading
from verdryx_core.graders import Grade, register_grader

class Stuck:
    def grade(self, case, output, context):
        threading.Event().wait(600)

class Broken:
    def grade(self, case, output, context):
        return {"score": 1}["value"]

register_grader("stuck", Stuck(), replace=True)
register_grader("broken", Broken(), replace=True)
"""


def test_a_pytest_session_with_a_stuck_and_a_broken_grader_ends_with_one_line_each(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(CONFTEST)
    _evalset(
        pytester.path / "g.evalset.json",
        [
            {"id": "stuck-case", "prompt": "p", "output": "o", "grader": "stuck"},
            {"id": "broken-case", "prompt": "p", "output": "o", "grader": "broken"},
            {"id": "fine", "prompt": "p", "output": "o", "grader": "exact", "expected": "o"},
        ],
    )
    started = time.monotonic()
    result = pytester.runpytest_subprocess(
        "--verdryx-timeout=1", "--no-verdryx-store", "-p", "no:cacheprovider", timeout=120
    )
    assert time.monotonic() - started < 120
    out = result.stdout.str()
    result.assert_outcomes(passed=1, errors=2)
    assert "custom grader 'stuck' took longer than the call timeout (1 s)" in out
    assert "--verdryx-timeout" in out  # the hint, in this face's words
    assert "custom grader 'broken' raised KeyError: 'value' for case 'broken-case'" in out
    assert "Traceback" not in out and "_hooks.py" not in out
    assert "INCOMPLETE run" in out


# -- threads a target leaves running ---------------------------------------------------------

LEAKY = """
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from verdryx_core.targets import TargetResult

POOL = ThreadPoolExecutor(1)


def plain_thread(case):
    threading.Thread(target=time.sleep, args=(600,), daemon=False, name="left\\n::error::x").start()
    return TargetResult(output="yes")


def pool_task(case):
    POOL.submit(time.sleep, 600)
    return TargetResult(output="yes")


def timer(case):
    later = threading.Timer(600, print)
    later.daemon = False
    later.start()
    return TargetResult(output="no")
"""


@pytest.mark.parametrize(
    ("target", "exit_code"),
    [("plain_thread", 0), ("pool_task", 0), ("timer", 1)],
)
def test_a_target_s_leftover_threads_do_not_keep_pytest_alive(
    pytester: pytest.Pytester, target: str, exit_code: int
) -> None:
    pytester.makepyfile(leaky=LEAKY)
    _evalset(
        pytester.path / "t.evalset.json",
        [{"id": "ask", "prompt": "p", "grader": "exact", "expected": "yes"}],
    )
    started = time.monotonic()
    result = pytester.runpytest_subprocess(
        f"--verdryx-target=leaky:{target}", "--no-verdryx-store", timeout=120
    )
    assert time.monotonic() - started < 120
    assert result.ret == exit_code  # the session's own status, not a made-up one
    err = result.stderr.str()
    assert "thread(s) started during the run still running at exit" in err
    assert "\n::error" not in err  # a thread's name is untrusted text too


def test_verdryx_eval_exits_past_a_target_s_leftover_thread(tmp_path: Path) -> None:
    (tmp_path / "leaky.py").write_text(textwrap.dedent(LEAKY), encoding="utf-8")
    path = tmp_path / "t.evalset.json"
    _evalset(path, [{"id": "ask", "prompt": "p", "grader": "exact", "expected": "yes"}])
    db = str(tmp_path / "v.db")
    done = subprocess.run(
        [str(VERDRYX), "eval", str(path), "--target", "leaky:pool_task", "--db", db],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "still running at exit" in done.stderr


def test_threads_alive_before_the_run_are_not_its_leftovers() -> None:
    release = threading.Event()
    earlier = threading.Thread(target=release.wait, args=(60,))
    earlier.start()
    try:
        assert earlier in threads_now()
    finally:
        release.set()
        earlier.join(60)


# -- event log paths -------------------------------------------------------------------------


def _unix_socket(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    return sock


@pytest.mark.parametrize("kind", ["fifo", "folder", "socket", "device"])
def test_an_event_log_that_is_not_a_regular_file_is_refused(tmp_path: Path, kind: str) -> None:
    # Short names: a socket's path is bounded (about 100 bytes).
    path = tmp_path / "ev"
    held: socket.socket | None = None
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "socket":
        held = _unix_socket(path)
    else:
        path = Path("/dev/zero")
    try:
        words = {"fifo": "a FIFO", "folder": "a folder", "socket": "a socket"}
        with pytest.raises(UsageError, match=words.get(kind, "a character device")):
            check_events_path(path)
        with pytest.raises(UsageError):
            EventLog(path)
    finally:
        if held is not None:
            held.close()


def test_a_regular_or_missing_event_log_is_fine(tmp_path: Path) -> None:
    check_events_path(tmp_path / "new.ndjson")
    target = tmp_path / "real.ndjson"
    target.write_text("", encoding="utf-8")
    link = tmp_path / "link.ndjson"
    link.symlink_to(target)
    check_events_path(link)


def test_pytest_refuses_a_fifo_as_event_log_at_start(pytester: pytest.Pytester) -> None:
    os.mkfifo(pytester.path / "events.pipe")
    _evalset(
        pytester.path / "e.evalset.json",
        [{"id": "x", "prompt": "p", "output": "o", "grader": "exact", "expected": "o"}],
    )
    result = pytester.runpytest_subprocess(
        "--verdryx-events=events.pipe", "--no-verdryx-store", timeout=120
    )
    assert result.ret == 4
    assert "event log 'events.pipe' is a FIFO" in result.stderr.str() + result.stdout.str()


def test_verdryx_events_verify_refuses_a_fifo(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "p")
    done = subprocess.run(
        [str(VERDRYX), "events", "verify", str(tmp_path / "p")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "is a FIFO" in done.stderr
