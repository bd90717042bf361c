"""Model calls through the plugin: the real `anthropic` SDK against a fake Messages server on
127.0.0.1: prefetch concurrency, cache and replay, retries, refusals, the judge,
live tool traces, repeats."""

from __future__ import annotations

import pytest
from fakes.anthropic_server import (
    DEFAULT_KEY,
    FakeAnthropic,
    error_reply,
    message_reply,
    rendezvous,
)
from junitparser import JUnitXml, Properties
from plugin_support import TOOLS, stored_runs, write_evalset

MODEL = "claude-haiku-4-5"  # priced at $1 / $5 per million input / output tokens

#: Every session here finds the fake server through the environment, as a user's would.
pytestmark = pytest.mark.usefixtures("anthropic_env")


def _echo_cases(count: int) -> list[dict[str, object]]:
    return [
        {"id": f"q{i}", "prompt": f"question {i}", "expected": f"echo: question {i}"}
        for i in range(count)
    ]


def test_model_cases_are_called_concurrently_before_the_first_item(
    pytester: pytest.Pytester, server: FakeAnthropic
) -> None:
    # The server holds each request until 8 are in flight together, so reaching the bound
    # does not depend on how fast a busy machine starts threads; one at a time would never
    # gather 8 and the test would see a lower max_in_flight.
    rendezvous(server, 8)
    db = pytester.path / "s.db"
    write_evalset(pytester.path, "live", "live", _echo_cases(16))
    result = pytester.runpytest(f"--verdryx-db={db}", f"--verdryx-model={MODEL}")
    result.assert_outcomes(passed=16)
    assert server.max_in_flight == 8  # the default bound, reached and never exceeded
    assert not server.violations
    run = stored_runs(db)[0]
    assert [score.case_id for score in run.scores] == [f"q{i}" for i in range(16)]
    assert run.scores[0].tokens == 15
    assert run.scores[0].cost_usd == pytest.approx((10 * 1.0 + 5 * 5.0) / 1e6)
    result.stdout.fnmatch_lines(["*model calls: 16/16*", "*model cache: 0 hits, 16 misses*"])


def test_an_unchanged_rerun_calls_nothing_and_replay_never_calls(
    pytester: pytest.Pytester, server: FakeAnthropic
) -> None:
    db = pytester.path / "s.db"
    write_evalset(pytester.path, "live", "live", _echo_cases(3))
    pytester.runpytest(f"--verdryx-db={db}", f"--verdryx-model={MODEL}").assert_outcomes(passed=3)
    assert len(server.requests) == 3
    server.reset()
    again = pytester.runpytest(f"--verdryx-db={db}", f"--verdryx-model={MODEL}")
    again.assert_outcomes(passed=3)
    assert server.requests == []
    again.stdout.fnmatch_lines(["*model cache: 3 hits, 0 misses, $0.0001 saved*"])
    empty = pytester.path / "empty.db"
    replay = pytester.runpytest(
        f"--verdryx-db={empty}", f"--verdryx-model={MODEL}", "--verdryx-cache=replay"
    )
    replay.assert_outcomes(errors=3)
    replay.stdout.fnmatch_lines(["*not in the cache*replay*"])
    assert server.requests == []


def test_a_bad_key_is_an_error_naming_the_variable_never_the_key(
    pytester: pytest.Pytester, server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-wrong-key-do-not-print")
    write_evalset(pytester.path, "live", "live", _echo_cases(2))
    result = pytester.runpytest(
        "--no-verdryx-store", f"--verdryx-model={MODEL}", f"--junitxml={pytester.path / 'q.xml'}"
    )
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*infrastructure error*401*ANTHROPIC_API_KEY*"])
    everything = result.stdout.str() + result.stderr.str() + (pytester.path / "q.xml").read_text()
    assert "sk-ant-wrong-key-do-not-print" not in everything
    assert DEFAULT_KEY not in everything
    assert len(server.requests) == 2  # refused at once: no retries on 401


def test_rate_limits_are_retried_honouring_retry_after(
    pytester: pytest.Pytester, server: FakeAnthropic
) -> None:
    server.script(error_reply(429, "rate_limit_error", "slow down", retry_after="0"))
    write_evalset(pytester.path, "live", "live", _echo_cases(1))
    result = pytester.runpytest("--no-verdryx-store", f"--verdryx-model={MODEL}")
    result.assert_outcomes(passed=1)
    assert len(server.requests) == 2


def test_the_judge_scores_with_a_reason_and_its_cost_is_kept_apart(
    pytester: pytest.Pytester, server: FakeAnthropic
) -> None:
    server.judge_score = 0.2
    server.judge_reason = "misses the refund window"
    db = pytester.path / "s.db"
    cases = [
        {"id": "j", "prompt": "refund?", "grader": "llm_judge", "rubric": "mentions 30 days"},
        {"id": "r", "prompt": "p", "grader": "llm_judge", "rubric": "r", "output": "recorded"},
    ]
    write_evalset(pytester.path, "judged", "judged", cases)
    result = pytester.runpytest(
        f"--verdryx-db={db}", f"--verdryx-model={MODEL}", f"--verdryx-judge={MODEL}"
    )
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        ["*scored 0.200*[grader: llm_judge]*", "*reason: misses the refund*"]
    )
    run = stored_runs(db)[0]
    live, recorded = run.scores
    assert live.cost_usd > 0 and live.judge_cost_usd > 0
    assert recorded.cost_usd == 0 and recorded.judge_cost_usd > 0  # only the judge was called
    judge_requests = [r for r in server.requests if r.body.get("tool_choice")]
    assert len(judge_requests) == 2
    assert "<output>" in judge_requests[0].user_text


def test_an_unreadable_judge_answer_is_the_outputs_failure(
    pytester: pytest.Pytester, server: FakeAnthropic
) -> None:
    # A judge answer about this output that is no verdict scores 0, never unmeasured: the
    # output can bring it about (docs/outcomes.md, "What counts as unmeasured").
    server.judge_score = "high"
    cases = [{"id": "j", "prompt": "p", "grader": "llm_judge", "rubric": "r", "output": "o"}]
    write_evalset(pytester.path, "judged", "judged", cases)
    result = pytester.runpytest("--no-verdryx-store", f"--verdryx-judge={MODEL}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["could not grade the output (scored 0): judge*judge answer unreadable*not a number*"]
    )


def test_a_live_tool_trace_grades_the_tool_use_blocks(
    pytester: pytest.Pytester, server: FakeAnthropic
) -> None:
    server.tool_calls = ["lookup", "notify"]
    case = {
        "id": "t",
        "prompt": "do it",
        "grader": "tool_trace",
        "tools": TOOLS,
        "expected_tools": ["lookup", "act", "notify"],
    }
    db = pytester.path / "s.db"
    write_evalset(pytester.path, "tools", "tools", [case])
    # Two of three expected calls: 2/3, below the tool trace's own bar (1.0).
    pytester.runpytest(f"--verdryx-db={db}", f"--verdryx-model={MODEL}").assert_outcomes(failed=1)
    assert stored_runs(db)[0].scores[0].value == pytest.approx(2 / 3)
    assert server.requests[0].body["tools"][0]["name"] == "lookup"


def test_repeats_are_real_samples_and_flaky_cases_are_labelled(
    pytester: pytest.Pytester, server: FakeAnthropic
) -> None:
    server.script(message_reply(text="yes"), message_reply(text="no"), message_reply(text="yes"))
    write_evalset(pytester.path, "r", "r", [{"id": "a", "prompt": "p", "expected": "yes"}])
    db = pytester.path / "s.db"
    result = pytester.runpytest(
        f"--verdryx-db={db}",
        f"--verdryx-model={MODEL}",
        "--verdryx-repeat=3",
        f"--junitxml={pytester.path / 'q.xml'}",
    )
    result.assert_outcomes(passed=1)
    assert len(server.requests) == 3
    score = stored_runs(db)[0].scores[0]
    assert score.value == pytest.approx(2 / 3)
    assert sorted(score.samples) == [0.0, 1.0, 1.0]
    result.stdout.fnmatch_lines(["*flaky across 3 samples: r::a*"])
    case = next(iter(next(iter(JUnitXml.fromfile(str(pytester.path / "q.xml"))))))
    props = {p.name: p.value for group in case.iterchildren(Properties) for p in group}
    assert props["verdryx.stability"] == "flaky"


@pytest.mark.slow
def test_model_cases_under_xdist_give_the_same_run(
    pytester: pytest.Pytester, server: FakeAnthropic
) -> None:
    write_evalset(pytester.path, "live", "live", _echo_cases(6))
    db = pytester.path / "s.db"
    result = pytester.runpytest(
        f"--verdryx-db={db}", f"--verdryx-model={MODEL}", "-n", "2", "--verdryx-cache=off"
    )
    result.assert_outcomes(passed=6)
    run = stored_runs(db)[0]
    assert [s.case_id for s in run.scores] == [f"q{i}" for i in range(6)]
    assert len(server.requests) == 6
    # The controller says once why the workers call, and what serves better.
    said = [line for line in result.outlines if "each worker makes its own cases' model" in line]
    assert len(said) == 1 and "with --verdryx-cache=off" in said[0], said
    assert "--verdryx-concurrency=N serves them better" in said[0]


_SAYS_WHETHER_THE_SDK_WAS_IMPORTED = """
import sys

def pytest_unconfigure(config):
    process = getattr(config, "workerinput", {}).get("workerid", "main")
    with open(f"sdk-{process}", "w") as out:
        out.write(str("anthropic" in sys.modules))
"""


def test_under_xdist_the_controller_calls_ahead_once_per_case(
    pytester: pytest.Pytester, server: FakeAnthropic
) -> None:
    # Workers learn their items a batch at a time, so the controller makes every call the
    # collected cases need, 8 in flight, into the store's cache; workers grade from it.
    rendezvous(server, 8)
    write_evalset(pytester.path, "live", "live", _echo_cases(16))
    pytester.makeconftest(_SAYS_WHETHER_THE_SDK_WAS_IMPORTED)
    db = pytester.path / "s.db"
    result = pytester.runpytest(f"--verdryx-db={db}", f"--verdryx-model={MODEL}", "-n", "2")
    result.assert_outcomes(passed=16)
    # The workers grade from the cache: none imports the SDK (a second or more each).
    imported = {path.name: path.read_text() for path in pytester.path.glob("sdk-gw*")}
    assert imported == {"sdk-gw0": "False", "sdk-gw1": "False"}
    assert server.max_in_flight == 8
    assert len(server.requests) == 16  # once per case: the workers' calls were cache hits
    result.stdout.fnmatch_lines(["*model cache: 16 hits, 16 misses*"])
    assert "each worker makes its own" not in result.stdout.str()
    run = stored_runs(db)[0]
    assert run.complete and len(run.scores) == 16
    assert all(score.cost_usd > 0 for score in run.scores)  # a hit keeps what the call cost


def test_a_rerun_answered_by_the_cache_never_imports_the_sdk(
    pytester: pytest.Pytester, server: FakeAnthropic
) -> None:
    write_evalset(pytester.path, "live", "live", _echo_cases(4))
    pytester.makeconftest(_SAYS_WHETHER_THE_SDK_WAS_IMPORTED)
    options = (f"--verdryx-db={pytester.path / 's.db'}", f"--verdryx-model={MODEL}")
    pytester.runpytest(*options).assert_outcomes(passed=4)
    # A new process: the reruns' calls are all in the store, so its SDK is never imported.
    again = pytester.runpytest_subprocess(*options)
    again.assert_outcomes(passed=4)
    again.stdout.fnmatch_lines(["*model cache: 4 hits, 0 misses*"])
    assert (pytester.path / "sdk-main").read_text() == "False"
    assert len(server.requests) == 4


def test_a_collection_error_costs_no_model_call(
    pytester: pytest.Pytester, server: FakeAnthropic
) -> None:
    # pytest stops before any item when collection fails: nothing may be called ahead.
    # (Under xdist a collection error does not stop the session: the items run.)
    write_evalset(pytester.path, "live", "live", _echo_cases(3))
    (pytester.path / "broken.evalset.json").write_text("{")
    result = pytester.runpytest(
        f"--verdryx-db={pytester.path / 's.db'}", f"--verdryx-model={MODEL}"
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*broken.evalset.json: not valid JSON*"])
    assert server.requests == []
