"""The plugin's outbound wires and the typed grader, in real pytest sessions."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from fakes.otlp_collector import FakeCollector
from fakes.typryx_server import DEFAULT_KEY, FakeTypryx
from plugin_support import FULL, PARTIAL, exact_case, stored_runs, trace_case, write_evalset

from verdryx_core.addons.events.log import verify_chain

SCHEMA = json.loads(
    (Path(__file__).parent / "fixtures" / "events" / "agent-event.v0.2.schema.json").read_text()
)
AGENT = "agent://acme.example/support/bot"


def test_events_are_chained_and_valid_and_drift_is_emitted_on_regression(
    pytester: pytest.Pytester,
) -> None:
    db = pytester.path / "s.db"
    events = pytester.path / "events.ndjson"
    write_evalset(pytester.path, "a", "a", [trace_case(f"c{i}", FULL) for i in range(20)])
    common = [f"--verdryx-db={db}", f"--verdryx-events={events}", f"--verdryx-agent-id={AGENT}"]
    pytester.runpytest(*common, "--verdryx-save-baseline=v1").assert_outcomes(passed=20)
    cases = [trace_case(f"c{i}", PARTIAL if i < 6 else FULL) for i in range(20)]
    write_evalset(pytester.path, "a", "a", cases)
    result = pytester.runpytest(*common, "--verdryx-baseline=v1")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"*events: 22 written to {events}*"])
    lines = [json.loads(line) for line in events.read_text().splitlines()]
    assert len(lines) == 21 + 22  # 20 scores + eval_run, twice, + one quality_drift
    for line in lines:
        jsonschema.validate(line, SCHEMA)
        assert line["source"] == "verdryx"
    assert [line["type"] for line in lines].count("quality_drift") == 1
    drift = next(line for line in lines if line["type"] == "quality_drift")
    assert drift["severity"] == "high"
    assert drift["data"]["verdict"] == "regressed"
    assert drift["data"]["delta"] == pytest.approx(-0.1)
    assert drift["run_id"] == stored_runs(db)[0].id
    assert verify_chain(events).ok  # resumed across the two sessions


def test_events_without_an_agent_id_are_skipped_and_counted(pytester: pytest.Pytester) -> None:
    events = pytester.path / "events.ndjson"
    write_evalset(pytester.path, "a", "a", [exact_case("c", "yes")])
    result = pytester.runpytest("--no-verdryx-store", f"--verdryx-events={events}")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*events: 0 written*2 skipped (no --verdryx-agent-id)*"])
    assert not events.exists()


def test_a_malformed_agent_id_is_a_usage_error(pytester: pytest.Pytester) -> None:
    write_evalset(pytester.path, "a", "a", [exact_case("c", "yes")])
    result = pytester.runpytest("--no-verdryx-store", "--verdryx-agent-id=Bot 7")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*'Bot 7' is not an agent id of the form agent://host/path*"])


def test_the_run_span_reaches_the_collector_before_the_session_ends(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_evalset(pytester.path, "a", "a", [exact_case("c", "yes")])
    with FakeCollector() as collector:
        monkeypatch.setenv("VERDRYX_OTLP_ENDPOINT", collector.url)
        result = pytester.runpytest_subprocess("--no-verdryx-store")
        received = collector.received
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*otlp: spans delivered*"])
    assert len(received) == 1
    span = received[0].json()["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert span["name"] == "eval_run"


def test_a_dead_collector_does_not_fail_the_eval(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_evalset(pytester.path, "a", "a", [exact_case("c", "yes")])
    monkeypatch.setenv("VERDRYX_OTLP_ENDPOINT", "http://127.0.0.1:9")  # discard port: refused
    result = pytester.runpytest("--no-verdryx-store")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*otlp: spans NOT delivered*"])


def test_typed_cases_are_graded_by_the_service_and_the_key_never_shows(
    pytester: pytest.Pytester,
) -> None:
    key_file = pytester.path / "typryx.key"
    key_file.write_text(DEFAULT_KEY + "\n")
    cases = [
        {"id": "t1", "prompt": "Refund order 1", "grader": "typed", "output": "Refunded."},
        {"id": "t2", "prompt": "Refund order 2", "grader": "typed", "output": "Done."},
    ]
    write_evalset(pytester.path, "typed", "typed", cases)
    with FakeTypryx() as service:
        result = pytester.runpytest(
            "--no-verdryx-store",
            f"--verdryx-typed-url={service.url}",
            f"--verdryx-typed-key-file={key_file}",
            f"--junitxml={pytester.path / 'q.xml'}",
        )
        asks = service.asks()
    assert len(asks) == 2
    # Typed cases are asked concurrently with the others: compare in task order.
    states = sorted((ask.body["state"] for ask in asks), key=lambda state: state["task"])
    assert states == [
        {"task": "Refund order 1", "final_answer": "Refunded."},
        {"task": "Refund order 2", "final_answer": "Done."},
    ]
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 2
    assert DEFAULT_KEY not in result.stdout.str() + result.stderr.str()
    assert DEFAULT_KEY not in (pytester.path / "q.xml").read_text()


def test_typed_cases_without_the_service_are_skipped_naming_the_flag(
    pytester: pytest.Pytester,
) -> None:
    cases = [{"id": "t1", "prompt": "p", "grader": "typed", "output": "o"}]
    write_evalset(pytester.path, "typed", "typed", cases)
    result = pytester.runpytest("--no-verdryx-store", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*need the typed grading service*--verdryx-typed-url*"])
