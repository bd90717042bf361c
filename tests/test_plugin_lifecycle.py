"""Calls inside pytest's lifecycle (docs/targets.md, "Inside pytest's lifecycle"): `-x` and
`--maxfail` leave the calls not yet started unmade (counted at the fake server and at the
target), the first Ctrl-C ends the session within 2 s whatever is in flight and stores the
run as incomplete, and a rerun of an item makes a fresh call."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fakes.anthropic_server import FakeAnthropic, RecordedRequest, Reply, message_reply
from junitparser import JUnitXml
from plugin_support import stored_runs, write_evalset

from verdryx_core.reporting.summary import fmt_usd

MODEL = "claude-haiku-4-5"  # $1 / $5 per million input / output tokens
#: What one fake answer costs: 10 input and 5 output tokens.
CALL_USD = (10 * 1.0 + 5 * 5.0) / 1e6

#: The xdist variant runs in the slow step (README.md): every attempt of a rerun case is a
#: sample under xdist too, which the default step checks in test_window_and_reruns.py.
XDIST_MODES = [
    pytest.param([], id="no-xdist"),
    pytest.param(["-n", "2"], id="xdist-2", marks=pytest.mark.slow),
]

AGENT = textwrap.dedent(
    '''
    """A target that logs each call, hangs on "hang", and fails a case's first call on
    "flaky" (its calls are counted in a file, so a rerun in the same process sees them)."""
    import pathlib, threading, time

    HERE = pathlib.Path(__file__).parent
    _lock = threading.Lock()

    def answer(case):
        with _lock, (HERE / "calls.log").open("a") as log:
            log.write(f"{case.id}\\n")
        with _lock:
            calls = (HERE / "calls.log").read_text().split().count(case.id)
        if "hang" in case.prompt:
            time.sleep(60)
        if "slow" in case.prompt:
            time.sleep(0.2)
        if "flaky" in case.prompt and calls == 1:
            return "a wrong first answer"
        return case.prompt.upper()
    '''
)


def _calls(directory: Path) -> list[str]:
    log = directory / "calls.log"
    return log.read_text().split() if log.exists() else []


def _echo_cases(count: int, *, wrong: set[int] = frozenset()) -> list[dict[str, object]]:
    return [
        {
            "id": f"q{i}",
            "prompt": f"question {i}",
            "expected": "something else" if i in wrong else f"echo: question {i}",
        }
        for i in range(count)
    ]


def _slow_echo(server: FakeAnthropic, seconds: float) -> None:
    def respond(request: RecordedRequest) -> Reply:
        time.sleep(seconds)
        return message_reply(text=f"echo: {request.user_text}")

    server.responder = respond


# -- -x and --maxfail ----------------------------------------------------------------------


@pytest.mark.usefixtures("anthropic_env")
def test_exitfirst_leaves_later_model_calls_unmade(
    pytester: pytest.Pytester, server: FakeAnthropic
) -> None:
    _slow_echo(server, 0.1)
    write_evalset(pytester.path, "live", "live", _echo_cases(20, wrong={0}))
    db = pytester.path / "s.db"
    result = pytester.runpytest(
        f"--verdryx-db={db}", f"--verdryx-model={MODEL}", "--verdryx-concurrency=2", "-x"
    )
    result.assert_outcomes(failed=1)
    made = len(server.requests)
    # The calls in flight when q0 failed, and those that took a freed slot before the stop.
    assert 1 <= made <= 6, made
    result.stdout.fnmatch_lines(
        [
            f"*stopped early: {20 - made} call(s) never made; {made - 1} made but not scored "
            f"({fmt_usd((made - 1) * CALL_USD)} paid)*"
        ]
    )
    (run,) = stored_runs(db)
    assert not run.complete
    assert [score.case_id for score in run.scores] == ["q0"]
    # The cost line counts what was scored; the paid remainder is the line above.
    assert run.model_cost_usd == pytest.approx(CALL_USD)
    # What was paid is cached: the whole run afterwards pays only for the calls never made.
    server.reset()
    _slow_echo(server, 0.0)
    again = pytester.runpytest(f"--verdryx-db={db}", f"--verdryx-model={MODEL}")
    again.assert_outcomes(passed=19, failed=1)
    assert len(server.requests) == 20 - made


@pytest.mark.slow
@pytest.mark.usefixtures("anthropic_env")
def test_exitfirst_under_xdist_leaves_later_model_calls_unmade(
    pytester: pytest.Pytester, server: FakeAnthropic
) -> None:
    # Under xdist the controller would make every call before scheduling: with -x it does
    # not, and each worker calls for its own items as they run.
    _slow_echo(server, 0.1)
    write_evalset(pytester.path, "live", "live", _echo_cases(30, wrong={0}))
    db = pytester.path / "s.db"
    result = pytester.runpytest("-n", "2", f"--verdryx-db={db}", f"--verdryx-model={MODEL}", "-x")
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == 1
    assert len(server.requests) == outcomes["failed"] + outcomes.get("passed", 0)
    assert len(server.requests) < 30
    (run,) = stored_runs(db)
    assert not run.complete


@pytest.mark.usefixtures("anthropic_env")
def test_without_a_stop_every_call_is_made_before_the_first_item(
    pytester: pytest.Pytester, server: FakeAnthropic
) -> None:
    # The control for the test above: a failing first case does not stop the calls.
    write_evalset(pytester.path, "live", "live", _echo_cases(20, wrong={0}))
    result = pytester.runpytest(
        "--no-verdryx-store", f"--verdryx-model={MODEL}", "--verdryx-concurrency=2"
    )
    result.assert_outcomes(passed=19, failed=1)
    assert len(server.requests) == 20
    assert "stopped early" not in result.stdout.str()


def test_maxfail_stops_the_target_calls_not_yet_started(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(agent_target=AGENT)
    cases = [
        {"id": f"c{i}", "prompt": f"slow {i}", "expected": "no" if i < 2 else f"SLOW {i}"}
        for i in range(30)
    ]
    write_evalset(pytester.path, "agent", "agent", cases)
    result = pytester.runpytest(
        "--no-verdryx-store",
        "--verdryx-target=agent_target:answer",
        "--verdryx-concurrency=3",
        "--maxfail=2",
    )
    result.assert_outcomes(failed=2)
    calls = _calls(pytester.path)
    assert calls[:2] == ["c0", "c1"] or sorted(calls[:3])[:2] == ["c0", "c1"]
    assert len(calls) <= 9, calls  # 30 without the stop
    result.stdout.fnmatch_lines([f"*stopped early: {30 - len(calls)} call(s) never made*"])


def test_stepwise_stops_like_maxfail_and_is_not_taken_for_a_ctrl_c(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(agent_target=AGENT)
    cases = [
        {"id": f"c{i}", "prompt": f"slow {i}", "expected": "no" if i == 1 else f"SLOW {i}"}
        for i in range(30)
    ]
    write_evalset(pytester.path, "agent", "agent", cases)
    db = pytester.path / "s.db"
    result = pytester.runpytest_subprocess(
        f"--verdryx-db={db}",
        "--verdryx-target=agent_target:answer",
        "--verdryx-concurrency=3",
        "--stepwise",
    )
    result.assert_outcomes(passed=1, failed=1)
    assert len(_calls(pytester.path)) <= 9
    assert "given up in flight" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*call(s) never made*"])
    (run,) = stored_runs(db)
    assert not run.complete and sorted(score.case_id for score in run.scores) == ["c0", "c1"]


# -- Ctrl-C --------------------------------------------------------------------------------

#: docs/targets.md promises a stop within 2 s; a test asserts 10x that (it proves the hung call
#: is not waited for) and benchmarks/interrupts.py measures the figure itself.
STOP_BOUND_S = 20.0


def _interrupt_when(
    process: subprocess.Popen[str], ready: Callable[[], bool], deadline: float
) -> float:
    """Send SIGINT once `ready()` holds; returns how long the process took to end after it."""
    while not ready():
        if time.monotonic() > deadline or process.poll() is not None:
            raise AssertionError("the session never reached the hung call")
        time.sleep(0.02)
    time.sleep(0.2)  # let the hung call settle into its wait
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    process.wait(timeout=30)
    return time.monotonic() - sent


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT semantics")
@pytest.mark.parametrize("stop_option", [[], ["-x"]], ids=["calls-first", "items-as-calls-end"])
@pytest.mark.parametrize("source", ["target", "model"])
def test_ctrl_c_during_a_hung_call_ends_the_session_without_waiting_for_the_call(
    pytester: pytest.Pytester, source: str, stop_option: list[str]
) -> None:
    pytester.makepyfile(agent_target=AGENT)
    # Two quick cases, then one that never answers: with -x the quick ones are scored first.
    cases = [
        {"id": "a", "prompt": "quick a", "expected": "QUICK A"},
        {"id": "b", "prompt": "quick b", "expected": "QUICK B"},
        {"id": "h", "prompt": "hang", "expected": "HANG"},
    ]
    write_evalset(pytester.path, "agent", "agent", cases)
    db = pytester.path / "s.db"
    env = {**os.environ, "PYTHONPATH": str(pytester.path), "PYTHONUNBUFFERED": "1"}
    env.pop("PYTEST_XDIST_WORKER", None)
    hung = threading.Event()
    fake: FakeAnthropic | None = None
    if source == "target":
        options = ["--verdryx-target=agent_target:answer"]

        def ready() -> bool:
            return "h" in _calls(pytester.path)
    else:
        fake = FakeAnthropic().__enter__()

        def respond(request: RecordedRequest) -> Reply:
            if "hang" in request.user_text:
                hung.set()
                return Reply(hang=True)
            return message_reply(text=request.user_text.upper())

        fake.responder = respond
        env.update(fake.env())
        options = [f"--verdryx-model={MODEL}", "--verdryx-timeout=60"]
        ready = hung.is_set
    process = subprocess.Popen(
        [
            sys.executable,
            *("-m", "pytest", "-p", "no:cacheprovider", f"--verdryx-db={db}"),
            *options,
            *stop_option,
        ],
        cwd=pytester.path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        took = _interrupt_when(process, ready, time.monotonic() + 60)
        output = process.communicate()[0]
    finally:
        process.kill()
        process.wait()
        if fake is not None:
            fake.__exit__(None, None, None)
    # "Stops, does not wait for the hung call" (60 s): a bound of 10x the 2 s promise, so a busy
    # machine cannot fail it; the promise itself is measured by benchmarks/interrupts.py.
    assert took < STOP_BOUND_S, f"took {took:.2f}s to stop\n{output}"
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "KeyboardInterrupt" in output
    assert "INCOMPLETE run: the session was interrupted" in output
    assert "1 given up in flight" in output  # the hung call, not waited for
    (run,) = stored_runs(db)
    assert not run.complete
    scored = sorted(score.case_id for score in run.scores)
    # Calls first: no item ran before the hung call; items as calls end: a and b did.
    assert scored == ([] if not stop_option else ["a", "b"])


# -- reruns --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", XDIST_MODES)
def test_a_rerun_calls_the_target_again_and_every_attempt_is_a_sample(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    pytester.makepyfile(agent_target=AGENT)
    cases = [
        {"id": "steady", "prompt": "steady", "expected": "STEADY"},
        {"id": "flaky", "prompt": "flaky", "expected": "FLAKY"},
    ]
    write_evalset(pytester.path, "agent", "agent", cases)
    db = pytester.path / "s.db"
    result = pytester.runpytest(
        *mode,
        f"--verdryx-db={db}",
        "--verdryx-target=agent_target:answer",
        "--verdryx-target-version=v1",  # cached: the rerun must call again all the same
        "--reruns=1",
    )
    assert result.parseoutcomes() == {"passed": 2, "rerun": 1}
    assert sorted(_calls(pytester.path)) == ["flaky", "flaky", "steady"]
    (run,) = stored_runs(db)
    assert run.complete
    # Both attempts are samples of the flaky case (docs/outcomes.md, "Reruns"): wrong, then
    # right, is 0.5, not the best of two.
    assert {score.case_id: score.value for score in run.scores} == {"steady": 1.0, "flaky": 0.5}
    assert {score.case_id: score.samples for score in run.scores} == {
        "steady": (),
        "flaky": (0.0, 1.0),
    }
    assert "errored" not in result.stdout.str()
    # The fresh answer replaced the first in the cache: an unchanged re-run calls nothing.
    again = pytester.runpytest(
        *mode,
        f"--verdryx-db={db}",
        "--verdryx-target=agent_target:answer",
        "--verdryx-target-version=v1",
    )
    again.assert_outcomes(passed=2)
    assert len(_calls(pytester.path)) == 3


@pytest.mark.usefixtures("anthropic_env")
def test_a_rerun_makes_a_fresh_model_call_past_the_cache(
    pytester: pytest.Pytester, server: FakeAnthropic
) -> None:
    answers = iter(["a wrong first answer", "echo: question 0"])

    def respond(request: RecordedRequest) -> Reply:
        return message_reply(text=next(answers))

    server.responder = respond
    write_evalset(pytester.path, "live", "live", _echo_cases(1))
    db = pytester.path / "s.db"
    result = pytester.runpytest(f"--verdryx-db={db}", f"--verdryx-model={MODEL}", "--reruns=1")
    assert result.parseoutcomes() == {"passed": 1, "rerun": 1}
    assert len(server.requests) == 2
    (run,) = stored_runs(db)
    # Both answers are samples; what a reader sees is the newest one's.
    assert run.scores[0].samples == (0.0, 1.0) and run.scores[0].output == "echo: question 0"
    server.reset()
    again = pytester.runpytest(f"--verdryx-db={db}", f"--verdryx-model={MODEL}")
    again.assert_outcomes(passed=1)
    assert server.requests == []  # the rerun's answer is the one cached


def test_a_rerun_that_errors_again_is_one_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(agent_target="def answer(case):\n    raise RuntimeError('down')\n")
    write_evalset(pytester.path, "agent", "agent", [{"id": "c", "prompt": "p", "expected": "P"}])
    result = pytester.runpytest(
        "--no-verdryx-store", "--verdryx-target=agent_target:answer", "--reruns=2"
    )
    assert result.parseoutcomes() == {"errors": 1, "rerun": 2}
    result.stdout.fnmatch_lines(["*1 case(s) errored instead of scoring*RuntimeError: down*"])


@pytest.mark.usefixtures("anthropic_env")
def test_a_model_cases_duration_is_its_calls_latency(
    pytester: pytest.Pytester, server: FakeAnthropic
) -> None:
    server.latency = 0.3
    cases = [
        *_echo_cases(2),
        {"id": "judged", "prompt": "p", "grader": "llm_judge", "rubric": "r", "output": "o"},
        {"id": "recorded", "prompt": "p", "expected": "o", "output": "o"},
    ]
    write_evalset(pytester.path, "live", "live", cases)
    xml_path = pytester.path / "q.xml"
    result = pytester.runpytest(
        "--no-verdryx-store",
        f"--verdryx-model={MODEL}",
        f"--verdryx-judge={MODEL}",
        f"--junitxml={xml_path}",
        "--durations=4",
    )
    result.assert_outcomes(passed=4)
    suite = next(iter(JUnitXml.fromfile(str(xml_path))))
    times = {case.name: case.time for case in suite}
    # Made ahead, together: each item still reports its own call's time, not ~0.
    assert times["q0"] >= 0.3 and times["q1"] >= 0.3 and times["judged"] >= 0.3
    assert times["recorded"] < 0.3
    shown = re.findall(r"^(\d+\.\d+)s call\s+live\.evalset\.json::(\w+)", result.stdout.str(), re.M)
    assert {name for seconds, name in shown if float(seconds) >= 0.3} == {"q0", "q1", "judged"}
