"""The agent under test in real pytest sessions: `--verdryx-target`, its ini key, timeouts,
errors, tool traces, spend, durations, caching under a declared version (docs/targets.md)."""

from __future__ import annotations

import json
import os
import textwrap
import time

import pytest
from junitparser import JUnitXml, Properties
from plugin_support import TOOLS, stored_runs, write_evalset

XDIST_MODES = [pytest.param([], id="no-xdist"), pytest.param(["-n", "2"], id="xdist-2")]
#: The same, with the xdist variant in the slow step (README.md): under xdist the controller
#: calls every target and the workers grade, which the default step checks in the
#: test_under_xdist_* tests below; the cache is read and written by whichever process calls.
XDIST_SLOW = [
    pytest.param([], id="no-xdist"),
    pytest.param(["-n", "2"], id="xdist-2", marks=pytest.mark.slow),
]

AGENT = textwrap.dedent(
    '''
    """A real target for the tests: it logs every call to calls.log next to it."""
    import asyncio, json, os, pathlib, threading, time

    HERE = pathlib.Path(__file__).parent
    _lock = threading.Lock()
    _now = [0]
    with (HERE / "imports.log").open("a") as _imports:
        _imports.write(f"{os.getpid()}\\n")

    def _log(case):
        with _lock, (HERE / "calls.log").open("a") as log:
            log.write(f"{case.eval_set_id}::{case.id}#{case.repeat}\\n")
        with _lock, (HERE / "pids.log").open("a") as log:
            log.write(f"{case.eval_set_id}::{case.id}#{case.repeat} {os.getpid()}\\n")

    def _result(case):
        words = case.prompt.split()
        names = [t["name"] for t in case.tools or ()]
        return {
            "output": case.prompt.upper(),
            "tool_calls": [
                {"name": w, "arguments": {"step": i}} for i, w in enumerate(words) if w in names
            ],
            "usage": {"input_tokens": 100, "output_tokens": 20, "cost_usd": 0.25},
        }

    def answer(case):
        _log(case)
        if "boom" in case.prompt:
            raise ValueError(f"no order\\nfor {case.id}")
        if "hang" in case.prompt:
            time.sleep(30)
        if "slow" in case.prompt:
            time.sleep(0.3)
        return _result(case)

    async def answer_async(case):
        _log(case)
        peak_file = HERE / "peak.json"
        with _lock:
            _now[0] += 1
            seen = json.loads(peak_file.read_text()) if peak_file.exists() else 0
            peak_file.write_text(json.dumps(max(_now[0], seen)))
        await asyncio.sleep(0.05)
        with _lock:
            _now[0] -= 1
        return _result(case)
    '''
)


def _setup(pytester: pytest.Pytester, cases: list[dict], set_id: str = "agent") -> None:
    pytester.makepyfile(agent_target=AGENT)
    write_evalset(pytester.path, set_id, set_id, cases)


def _case(case_id: str, prompt: str, **extra: object) -> dict:
    return {"id": case_id, "prompt": prompt, "expected": prompt.upper(), **extra}


def _calls(pytester: pytest.Pytester) -> list[str]:
    log = pytester.path / "calls.log"
    return log.read_text().split() if log.exists() else []


@pytest.mark.parametrize("mode", XDIST_SLOW)
def test_the_target_answers_each_case_and_is_graded(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    cases = [
        _case("c0", "hello"),
        _case("c1", "refund A-1"),
        {**_case("c2", "x"), "expected": "nope"},
    ]
    _setup(pytester, cases)
    db = pytester.path / "v.db"
    result = pytester.runpytest(*mode, "--verdryx-target=agent_target:answer", f"--verdryx-db={db}")
    result.assert_outcomes(passed=2, failed=1)
    assert sorted(_calls(pytester)) == ["agent::c0#0", "agent::c1#0", "agent::c2#0"]
    (run,) = stored_runs(db)
    assert {s.case_id: s.output for s in run.scores}["c1"] == "REFUND A-1"
    # The target's usage is the run's spend.
    assert run.total_tokens == 360 and run.model_cost_usd == pytest.approx(0.75)
    result.stdout.fnmatch_lines(["*tokens: 360   cost: $0.75*"])


def test_the_ini_key_names_the_target_and_recorded_outputs_are_not_asked(
    pytester: pytest.Pytester,
) -> None:
    cases = [_case("live", "hi"), {**_case("recorded", "hi"), "output": "HI"}]
    _setup(pytester, cases)
    pytester.makeini("[pytest]\nverdryx_target = agent_target:answer\n")
    pytester.runpytest("--no-verdryx-store").assert_outcomes(passed=2)
    assert _calls(pytester) == ["agent::live#0"]


def test_tool_calls_are_graded_by_tool_trace(pytester: pytest.Pytester) -> None:
    trace = {
        "grader": "tool_trace",
        "tools": TOOLS,
        "expected_tools": ["lookup", "act"],
        "min_score": 1.0,
    }
    cases = [
        {"id": "right", "prompt": "lookup then act", **trace},
        {"id": "wrong", "prompt": "act only", **trace},
    ]
    _setup(pytester, cases)
    result = pytester.runpytest("--verdryx-target=agent_target:answer", "--no-verdryx-store")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*agent::wrong scored 0.500, below the pass bar 1*",
            # One line per call, said once (docs/graders.md, "Tool traces").
            "*reason: tool calls (ordered): 1 of 2 expected calls matched, 1 made",
            "*  missing     lookup  (expected 1)",
            '*  ok          act {"step": 0}  (call 1, expected 2)',
        ]
    )
    assert "expected tools:" not in result.stdout.str()


@pytest.mark.parametrize("mode", XDIST_MODES)
def test_an_exception_is_the_items_error_and_the_summary_counts_it(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    _setup(pytester, [_case("ok", "fine"), _case("bad", "boom"), _case("bad2", "boom too")])
    result = pytester.runpytest(*mode, "--verdryx-target=agent_target:answer", "--no-verdryx-store")
    result.assert_outcomes(passed=1, errors=2)
    out = result.stdout.str()
    assert "target agent_target:answer raised ValueError: no order for bad" in out
    assert "Traceback" not in out
    result.stdout.fnmatch_lines(
        [
            "*INCOMPLETE run: 2 of 3 selected cases have no score (errors)*",
            "*2 case(s) errored instead of scoring; first: *target agent_target:answer raised*",
        ]
    )


def test_a_hung_target_times_out(pytester: pytest.Pytester) -> None:
    _setup(pytester, [_case("ok", "fine"), _case("stuck", "hang")])
    started = time.monotonic()
    result = pytester.runpytest(
        "--verdryx-target=agent_target:answer", "--verdryx-timeout=0.5", "--no-verdryx-store"
    )
    assert time.monotonic() - started < 15
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*target agent_target:answer did not return within 0.5s; raise "
            "--verdryx-timeout if it needs longer*"
        ]
    )


def test_async_targets_run_with_the_concurrency_bound(pytester: pytest.Pytester) -> None:
    _setup(pytester, [_case(f"c{i}", f"p{i}") for i in range(12)])
    result = pytester.runpytest(
        "--verdryx-target=agent_target:answer_async",
        "--verdryx-concurrency=4",
        "--no-verdryx-store",
    )
    result.assert_outcomes(passed=12)
    assert len(_calls(pytester)) == 12
    assert json.loads((pytester.path / "peak.json").read_text()) <= 4


def test_latency_is_the_items_duration_in_junit(pytester: pytest.Pytester) -> None:
    _setup(pytester, [_case("slow", "slow one"), _case("fast", "fast one")])
    xml_path = pytester.path / "q.xml"
    result = pytester.runpytest(
        "--verdryx-target=agent_target:answer",
        "--no-verdryx-store",
        f"--junitxml={xml_path}",
        "--durations=2",
    )
    result.assert_outcomes(passed=2)
    suite = next(iter(JUnitXml.fromfile(str(xml_path))))
    cases = {case.name: case for case in suite}
    # The slow answer takes 0.3 s or more: a lower bound, and an order, hold on a busy machine.
    assert cases["slow"].time >= 0.3
    assert cases["fast"].time < cases["slow"].time
    props = {p.name: p.value for g in cases["slow"].iterchildren(Properties) for p in g}
    assert float(props["verdryx.cost_usd"]) == pytest.approx(0.25)
    result.stdout.fnmatch_lines(["*slowest 2 durations*", "*s call*agent.evalset.json::slow*"])


@pytest.mark.parametrize("mode", XDIST_SLOW)
def test_results_are_cached_only_under_a_declared_version(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    _setup(pytester, [_case("a", "one"), _case("b", "two")])
    db = f"--verdryx-db={pytester.path / 'v.db'}"
    target = "--verdryx-target=agent_target:answer"
    # Under xdist the controller calls every case ahead, version or not (the cache is not
    # how its outcomes reach the workers): every case is called once a run, and no line says
    # that workers call for themselves (docs/targets.md, "Under pytest-xdist").
    note = "each worker calls the target for its own cases"
    versioned = pytester.runpytest(*mode, target, db, "--verdryx-target-version=0")
    versioned.assert_outcomes(passed=2)
    assert note not in versioned.stdout.str()
    assert len(_calls(pytester)) == 2
    (pytester.path / "calls.log").unlink()
    unversioned = pytester.runpytest(*mode, target, db)
    unversioned.assert_outcomes(passed=2)
    assert note not in unversioned.stdout.str()
    pytester.runpytest(target, db).assert_outcomes(passed=2)
    assert len(_calls(pytester)) == 4  # no version: always called
    pytester.runpytest(target, db, "--verdryx-target-version=1").assert_outcomes(passed=2)
    assert len(_calls(pytester)) == 6
    again = pytester.runpytest(target, db, "--verdryx-target-version=1")
    again.assert_outcomes(passed=2)
    assert len(_calls(pytester)) == 6  # unchanged re-run under the version: nothing called
    replay = pytester.runpytest(target, db, "--verdryx-target-version=1", "--verdryx-cache=replay")
    replay.assert_outcomes(passed=2)
    missing = pytester.runpytest(target, db, "--verdryx-target-version=2", "--verdryx-cache=replay")
    missing.assert_outcomes(errors=2)
    missing.stdout.fnmatch_lines(
        [
            "*no result recorded under version 2 for case a (repeat 0), and a replay never "
            "calls; record it first with --verdryx-cache on under that --verdryx-target-version*"
        ]
    )
    assert len(_calls(pytester)) == 6


def test_replay_without_a_version_and_a_bad_target_are_usage_errors(
    pytester: pytest.Pytester,
) -> None:
    _setup(pytester, [_case("a", "one")])
    replay = pytester.runpytest("--verdryx-target=agent_target:answer", "--verdryx-cache=replay")
    assert replay.ret == pytest.ExitCode.USAGE_ERROR
    replay.stderr.fnmatch_lines(
        ["*cannot replay target calls*; pass --verdryx-target-version V, the version*"]
    )
    bad = pytester.runpytest("--verdryx-target=agent_target:anwser", "--no-verdryx-store")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(
        ["*target 'agent_target:anwser': 'agent_target' has no attribute 'anwser'*"]
    )
    assert _calls(pytester) == []


def test_an_eval_sets_own_target_wins_and_other_sets_keep_the_model(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        other_agent="def answer(case):\n    return 'other ' + case.prompt\n",
    )
    _setup(pytester, [_case("own", "mine")])
    data = json.loads((pytester.path / "agent.evalset.json").read_text())
    (pytester.path / "agent.evalset.json").write_text(
        json.dumps({**data, "target": "agent_target:answer"})
    )
    write_evalset(
        pytester.path,
        "plain",
        "plain",
        [{"id": "modelled", "prompt": "q", "expected": "stub output"}],
    )
    result = pytester.runpytest("--no-verdryx-store", "-v")
    # No run-level target: the set with its own target asks it, the other set the model.
    result.assert_outcomes(passed=2)
    assert _calls(pytester) == ["agent::own#0"]
    overridden = pytester.runpytest("--verdryx-target=other_agent:answer", "--no-verdryx-store")
    # The run's target answers the set without one ("other q" is not "stub output").
    overridden.assert_outcomes(passed=1, failed=1)
    assert _calls(pytester) == ["agent::own#0", "agent::own#0"]


def _pids(pytester: pytest.Pytester) -> dict[str, list[int]]:
    """Call (set::case#repeat) -> the process ids that made it."""
    log = pytester.path / "pids.log"
    made: dict[str, list[int]] = {}
    for line in log.read_text().splitlines() if log.exists() else ():
        call, pid = line.split()
        made.setdefault(call, []).append(int(pid))
    return made


def test_under_xdist_one_process_calls_every_target_and_workers_only_grade(
    pytester: pytest.Pytester,
) -> None:
    """docs/targets.md, "Under pytest-xdist": the controller (this process: pytester runs it
    in-process) calls each case once, errors and timeouts included, and the workers, which
    never import the target, report the same outcomes as a serial run; a workspace case is
    called on its worker, since its graders read the folder the call changed."""
    cases = [_case("a", "one"), _case("b", "two"), _case("bad", "boom"), _case("stuck", "hang")]
    write_evalset(pytester.path, "agent", "agent", cases)
    # Not named like a test module (agent_target.py is one: each worker imports it).
    pytester.makepyfile(
        handed_agent=AGENT,
        desk_agent=AGENT.replace("calls.log", "desk-calls.log").replace("imports.log", "desk.log"),
    )
    desk = {"id": "desk", "target": "desk_agent:answer", "cases": [
        {**_case("w", "edit"), "workspace": {"files": {"notes.txt": "x"}}},
    ]}  # fmt: skip
    (pytester.path / "desk.evalset.json").write_text(json.dumps(desk))
    result = pytester.runpytest(
        "-n", "2", "--verdryx-target=handed_agent:answer", "--verdryx-timeout=0.5",
        "--no-verdryx-store",
    )  # fmt: skip
    result.assert_outcomes(passed=3, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*verdryx: under -n 1 workspace case(s) call the target on their workers*",
            "*target handed_agent:answer raised ValueError: no order for bad*",
            "*target handed_agent:answer did not return within 0.5s; raise "
            "--verdryx-timeout if it needs longer*",
        ]
    )
    made = _pids(pytester)
    here = os.getpid()
    assert {call: pids for call, pids in made.items() if call.startswith("agent::")} == {
        f"agent::{case}#0": [here] for case in ("a", "b", "bad", "stuck")
    }
    (worker,) = made["desk::w#0"]
    assert worker != here
    # The agent module was imported by the controller alone (the workers were handed every
    # call); the workspace case's own target by its worker.
    assert (pytester.path / "imports.log").read_text().split() == [str(here)]
    assert (pytester.path / "desk.log").read_text().split() == [str(worker)]


def test_under_xdist_a_target_named_by_a_case_alone_is_called_by_the_controller(
    pytester: pytest.Pytester,
) -> None:
    """No --verdryx-target and no set-level target: the case names its own, and the
    controller still makes its call for the workers (docs/targets.md, "Under pytest-xdist")."""
    pytester.makepyfile(handed_agent=AGENT)
    plain = {"id": "plain", "cases": [
        {**_case("a", "one"), "target": "handed_agent:answer"},
        {"id": "recorded", "prompt": "q", "output": "yes", "expected": "yes"},
    ]}  # fmt: skip
    (pytester.path / "plain.evalset.json").write_text(json.dumps(plain))
    result = pytester.runpytest("-n", "2", "--no-verdryx-store")
    result.assert_outcomes(passed=2)
    assert _pids(pytester) == {"plain::a#0": [os.getpid()]}


def test_under_xdist_a_session_that_may_stop_keeps_the_calls_on_the_workers(
    pytester: pytest.Pytester,
) -> None:
    _setup(pytester, [_case("a", "one"), _case("b", "two")])
    result = pytester.runpytest(
        "-n", "2", "--maxfail=3", "--verdryx-target=agent_target:answer",
        "--no-verdryx-store",
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*verdryx: under -n with -x/--maxfail/--stepwise each worker calls the target for "
            "its own cases (a stop leaves the rest unmade); *--verdryx-concurrency=N*"
        ]
    )
    made = _pids(pytester)
    assert sorted(made) == ["agent::a#0", "agent::b#0"]
    assert all(pids != [os.getpid()] and len(pids) == 1 for pids in made.values())
