"""Credentials, retries, prices, events and typed cases through real pytest sessions: what
the other plugin tests leave unchecked (credentials everywhere a run leaves text, retries
exhausted, the price note and price file, the stub judge, the event wire's environment
variable, torn tail and write failure, the drift span, and the typed grader's unanswered,
refused and keyed paths). Everything is observed at the fake servers or in the files a run
leaves, never timed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from fakes.anthropic_server import FakeAnthropic, error_reply
from fakes.otlp_collector import FakeCollector
from fakes.typryx_server import DEFAULT_KEY as TYPRYX_KEY
from fakes.typryx_server import FakeTypryx
from plugin_support import FULL, PARTIAL, exact_case, stored_runs, trace_case, write_evalset

from verdryx_core.addons.events.log import EventLog, chain_hash, verify_chain
from verdryx_core.addons.events.otlp import trace_id

MODEL = "claude-haiku-4-5"  # $1 / $5 per million input / output tokens
SECRET = "sk-ant-audit-SECRET-7f3e9b21"
AGENT = "agent://acme.example/support/bot"
SCHEMA = json.loads(
    (Path(__file__).parent / "fixtures" / "events" / "agent-event.v0.2.schema.json").read_text()
)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with FakeAnthropic(api_key=SECRET) as fake:
        for name, value in fake.env().items():
            monkeypatch.setenv(name, value)
        yield fake
        assert fake.violations == []


def _cases(count: int) -> list[dict[str, object]]:
    return [
        {"id": f"q{i}", "prompt": f"question {i}", "expected": f"echo: question {i}"}
        for i in range(count)
    ]


def _everything_written(root: Path) -> bytes:
    """Every byte of every file a session left under `root` (store, WAL, XML, baselines)."""
    return b"".join(path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file())


# -- the credential -------------------------------------------------------------------


def test_the_api_key_is_in_no_output_log_junit_file_or_store(
    pytester: pytest.Pytester, server: FakeAnthropic
) -> None:
    tools = [{"name": "lookup", "input_schema": {"type": "object"}}]
    cases = [
        *_cases(2),
        {"id": "j", "prompt": "p", "grader": "llm_judge", "rubric": "r"},
        {
            "id": "t",
            "prompt": "p",
            "grader": "tool_trace",
            "tools": tools,
            "expected_tools": ["lookup"],
        },
    ]
    write_evalset(pytester.path, "live", "live", cases)
    result = pytester.runpytest(
        f"--verdryx-db={pytester.path / 's.db'}",
        f"--verdryx-model={MODEL}",
        f"--verdryx-judge={MODEL}",
        "--verdryx-save-baseline=v1",
        f"--junitxml={pytester.path / 'q.xml'}",
        "-o",
        "junit_logging=all",
        "--log-level=DEBUG",
        "-o",
        "log_cli=true",
        "--log-cli-level=DEBUG",
        "-rA",
    )
    result.assert_outcomes(passed=4)
    assert len(server.requests) == 5  # 2 completions, 1 completion + 1 verdict, 1 tool call
    for request in server.requests:  # it was sent, as a header only
        assert "ok" in (request.headers.get("x-api-key"), request.headers.get("authorization"))
    text = result.stdout.str() + result.stderr.str()
    assert "Request options" in text  # the SDK's DEBUG log was captured and shown
    assert SECRET not in text
    assert len(stored_runs(pytester.path / "s.db")) == 1  # run, cache and baseline written
    assert SECRET.encode() not in _everything_written(pytester.path)


def test_no_option_or_ini_key_takes_a_credential(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig()
    flags = [
        name for option in config._parser.getgroup("verdryx").options for name in option.names()
    ]
    ini_keys = [name for name in config._parser._inidict if name.startswith("verdryx")]
    assert "--verdryx-model" in flags and "verdryx_model" in ini_keys
    secretish = ("key", "token", "secret", "password", "auth")
    # The one credential verdryx reads from a flag is a *file* holding the typryx key.
    assert [f for f in flags if any(word in f for word in secretish)] == [
        "--verdryx-typed-key-file"
    ]
    assert [k for k in ini_keys if any(word in k for word in secretish)] == [
        "verdryx_typed_key_file"
    ]


# -- retries exhausted, prices, the stub judge ----------------------------------------


def test_a_persistent_529_is_an_item_error_naming_the_status_after_the_bound(
    pytester: pytest.Pytester, server: FakeAnthropic
) -> None:
    overloaded = error_reply(529, "overloaded_error", "Overloaded", retry_after="0.01")
    server.script(*[overloaded] * 5)
    write_evalset(pytester.path, "live", "live", _cases(2))
    result = pytester.runpytest(
        "--no-verdryx-store", f"--verdryx-model={MODEL}", "--verdryx-concurrency=1"
    )
    # One at a time: q0 meets all five 529s (a try and four retries), q1 the healthy server.
    result.assert_outcomes(passed=1, errors=1)
    assert [r.user_text for r in server.requests] == ["question 0"] * 5 + ["question 1"]
    retries = [r.headers.get("x-stainless-retry-count") for r in server.requests[:5]]
    assert retries == ["0", "1", "2", "3", "4"]
    result.stdout.fnmatch_lines(["*infrastructure error*HTTP 529*after 4 retries*"])


def test_an_unpriced_model_costs_the_fallback_with_a_visible_note(
    pytester: pytest.Pytester, server: FakeAnthropic
) -> None:
    db = pytester.path / "s.db"
    write_evalset(pytester.path, "live", "live", _cases(1))
    result = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-model=claude-next-9")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*NOTE: no price for 'claude-next-9'*fallback*verdryx_prices*"])
    score = stored_runs(db)[0].scores[0]
    assert score.cost_usd == pytest.approx((10 * 15.0 + 5 * 75.0) / 1e6)  # never a silent 0


def test_the_price_file_named_in_ini_prices_the_calls(
    pytester: pytest.Pytester, server: FakeAnthropic
) -> None:
    (pytester.path / "prices.json").write_text(
        json.dumps({"models": {"claude-next-9": {"input": 100.0, "output": 1000.0}}})
    )
    pytester.makeini("[pytest]\nverdryx_prices = prices.json\n")
    db = pytester.path / "s.db"
    write_evalset(pytester.path, "live", "live", _cases(1))
    result = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-model=claude-next-9")
    result.assert_outcomes(passed=1)
    assert "no price for" not in result.stdout.str()
    assert stored_runs(db)[0].scores[0].cost_usd == pytest.approx((10 * 100 + 5 * 1000) / 1e6)


def test_no_judge_no_judged_score_whatever_the_model(pytester: pytest.Pytester) -> None:
    # The stub judge scores everything 1.0: a score nobody measured must never look measured,
    # so with no judge named an llm_judge case is unmeasured, with the stub model too.
    cases = [{"id": "j", "prompt": "p", "grader": "llm_judge", "rubric": "r", "output": "o"}]
    write_evalset(pytester.path, "judged", "judged", cases)
    db = pytester.path / "s.db"
    result = pytester.runpytest(f"--verdryx-db={db}", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*pass --verdryx-judge MODEL*"])
    run = stored_runs(db)[0]
    assert run.scores[0].value is None and run.judge_model is None
    assert run.mean_score is None  # nothing measured enters the mean


def test_the_stub_judge_only_when_named(pytester: pytest.Pytester) -> None:
    cases = [{"id": "j", "prompt": "p", "grader": "llm_judge", "rubric": "r", "output": "o"}]
    write_evalset(pytester.path, "judged", "judged", cases)
    db = pytester.path / "s.db"
    pytester.runpytest(f"--verdryx-db={db}", "--verdryx-judge=stub").assert_outcomes(passed=1)
    run = stored_runs(db)[0]
    assert run.scores[0].value == 1.0 and run.judge_model == "stub"


# -- the event wire -------------------------------------------------------------------


def test_events_path_from_the_environment_writes_valid_chained_events(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = pytester.path / "env-events.ndjson"
    monkeypatch.setenv("VERDRYX_EVENTS_PATH", str(events))
    write_evalset(pytester.path, "a", "a", [exact_case("c1", "yes"), exact_case("c2", "no")])
    result = pytester.runpytest("--no-verdryx-store", f"--verdryx-agent-id={AGENT}")
    result.assert_outcomes(passed=1, failed=1)
    lines = [json.loads(line) for line in events.read_text().splitlines()]
    assert [line["type"] for line in lines] == ["quality_score", "quality_score", "eval_run"]
    for line in lines:
        jsonschema.validate(line, SCHEMA)
    assert lines[2]["data"]["cases"] == 2 and lines[2]["data"]["mean_score"] == 0.5
    assert verify_chain(events).ok


def test_a_torn_last_line_is_reported_and_not_chained_onto(pytester: pytest.Pytester) -> None:
    events = pytester.path / "events.ndjson"
    log = EventLog(events)
    for index in range(2):
        assert log.emit("quality_score", AGENT, {"case_id": f"old{index}", "value": 1.0})
    complete = events.read_bytes()
    last_complete = json.loads(complete.splitlines()[-1])
    events.write_bytes(complete + b'{"schema":"taipanbox.dev/agent-event/v0.2","ts":"20')
    write_evalset(pytester.path, "a", "a", [exact_case("c1", "yes")])
    result = pytester.runpytest(
        "--no-verdryx-store", f"--verdryx-events={events}", f"--verdryx-agent-id={AGENT}"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*WARNING: events: *damaged*", "*events: 2 written*"])
    lines = events.read_bytes().splitlines()
    assert len(lines) == 2 + 1 + 2  # old events, the closed fragment, this run's two
    assert json.loads(lines[3])["prev_hash"] == chain_hash(last_complete)
    verdict = verify_chain(events)
    assert not verdict.ok and verdict.first_broken_line == 3  # the fragment, named


def test_an_unwritable_event_log_does_not_fail_the_eval(pytester: pytest.Pytester) -> None:
    events = pytester.path / "no-such-dir" / "events.ndjson"
    db = pytester.path / "s.db"
    write_evalset(pytester.path, "a", "a", [exact_case("c1", "yes")])
    result = pytester.runpytest(
        f"--verdryx-db={db}", f"--verdryx-events={events}", f"--verdryx-agent-id={AGENT}"
    )
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*events: 0 written*2 failed to write*"])
    assert len(stored_runs(db)) == 1  # the eval completed and was stored


# -- OTLP -----------------------------------------------------------------------------


def test_a_gated_run_sends_its_run_span_and_drift_span_in_one_trace(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = pytester.path / "s.db"
    write_evalset(pytester.path, "a", "a", [trace_case(f"c{i}", FULL) for i in range(20)])
    pytester.runpytest(f"--verdryx-db={db}", "--verdryx-save-baseline=v1").assert_outcomes(
        passed=20
    )
    cases = [trace_case(f"c{i}", PARTIAL if i < 6 else FULL) for i in range(20)]
    write_evalset(pytester.path, "a", "a", cases)
    with FakeCollector() as collector:
        monkeypatch.setenv("VERDRYX_OTLP_ENDPOINT", collector.url + "/")
        result = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1")
        received = collector.received
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*otlp: spans delivered*"])
    spans = {}
    for export in received:
        assert export.path == "/v1/traces"
        (span,) = export.json()["resourceSpans"][0]["scopeSpans"][0]["spans"]
        spans[span["name"]] = span
    assert sorted(spans) == ["eval_run", "quality_drift"]
    run_id = stored_runs(db)[0].id
    assert {span["traceId"] for span in spans.values()} == {trace_id(run_id)}

    def attrs(span: dict) -> dict:
        return {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}

    run_attrs, drift_attrs = attrs(spans["eval_run"]), attrs(spans["quality_drift"])
    assert run_attrs["verdryx.model"] == "stub" and run_attrs["verdryx.cases"] == "20"
    assert {"verdryx.mean_score", "verdryx.total_cost_usd"} <= set(run_attrs)
    assert drift_attrs["verdryx.verdict"] == "regressed"


# -- the typed grader -----------------------------------------------------------------


def _typed_cases(count: int) -> list[dict[str, object]]:
    return [
        {"id": f"t{i}", "prompt": f"Refund order {i}", "grader": "typed", "output": "Done."}
        for i in range(count)
    ]


def test_unanswered_typed_cases_are_skipped_and_the_mean_covers_the_answered(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    key_file = pytester.path / "typryx.key"
    key_file.write_text(TYPRYX_KEY)
    monkeypatch.setenv("VERDRYX_TYPRYX_KEY_FILE", str(key_file))  # the key file by env
    db = pytester.path / "s.db"
    write_evalset(pytester.path, "typed", "typed", _typed_cases(2))
    with FakeTypryx() as service:
        # The first ask is unanswered, by the service's own fault (any other reason is about
        # the output, which then scores 0: docs/typed-grader.md, "Unanswered verdicts").
        service.script(service.unanswered("backend_error"))
        result = pytester.runpytest(
            f"--verdryx-db={db}",
            f"--verdryx-typed-url={service.url}",
            "--verdryx-concurrency=1",
            f"--junitxml={pytester.path / 'q.xml'}",
            "-rs",
        )
        asks = service.asks()
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*SKIPPED*typryx did not answer (backend_error*"])
    assert {ask.body["run_id"] for ask in asks} == {stored_runs(db)[0].id}
    run = stored_runs(db)[0]
    assert [s.case_id for s in run.unmeasured] == ["t0"]
    assert run.mean_score == pytest.approx(0.8)  # p(true) of the answered case alone
    assert TYPRYX_KEY.encode() not in _everything_written(pytester.path).replace(
        key_file.read_bytes(), b""
    )
    assert TYPRYX_KEY not in result.stdout.str() + result.stderr.str()


def test_all_unanswered_stores_the_run_but_takes_no_baseline(pytester: pytest.Pytester) -> None:
    key_file = pytester.path / "typryx.key"
    key_file.write_text(TYPRYX_KEY)
    db = pytester.path / "s.db"
    write_evalset(pytester.path, "typed", "typed", _typed_cases(2))
    with FakeTypryx() as service:
        service.script(service.unanswered("backend_error"), service.unanswered("backend_error"))
        result = pytester.runpytest(
            f"--verdryx-db={db}",
            f"--verdryx-typed-url={service.url}",
            f"--verdryx-typed-key-file={key_file}",
            "--verdryx-save-baseline=v1",
        )
    result.assert_outcomes(skipped=2)
    assert result.ret != pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*baseline 'v1' not saved*zero measured cases*"])
    (run,) = stored_runs(db)
    assert run.mean_score is None and len(run.unmeasured) == 2
    assert not (pytester.path / ".verdryx" / "baselines" / "v1.json").exists()


def test_a_refused_key_errors_every_typed_case_naming_the_file_not_the_key(
    pytester: pytest.Pytester,
) -> None:
    key_file = pytester.path / "typryx.key"
    key_file.write_text("a-wrong-typryx-key-0042")
    write_evalset(pytester.path, "typed", "typed", _typed_cases(2))
    with FakeTypryx(echo_key_in_errors=True) as service:
        result = pytester.runpytest(
            "--no-verdryx-store",
            f"--verdryx-typed-url={service.url}",
            f"--verdryx-typed-key-file={key_file}",
            f"--junitxml={pytester.path / 'q.xml'}",
        )
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*infrastructure error*status=401*VERDRYX_TYPRYX_KEY_FILE*"])
    everything = result.stdout.str() + result.stderr.str() + (pytester.path / "q.xml").read_text()
    assert "a-wrong-typryx-key-0042" not in everything


def test_the_key_file_variable_alone_does_not_enable_typed_cases(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    key_file = pytester.path / "typryx.key"
    key_file.write_text(TYPRYX_KEY)
    monkeypatch.setenv("VERDRYX_TYPRYX_KEY_FILE", str(key_file))
    write_evalset(pytester.path, "typed", "typed", _typed_cases(1))
    with FakeTypryx() as service:
        result = pytester.runpytest("--no-verdryx-store", "-rs")
        assert service.requests == []
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*need the typed grading service*--verdryx-typed-url*"])
