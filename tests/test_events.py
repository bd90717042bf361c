"""The agent-event log and its prev_hash chain.

Real files in tmp_path; the schema and the cross-language chain vectors are the pinned copies
in tests/fixtures/events/.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import re
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import rfc8785
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verdryx_core import cli
from verdryx_core.addons.events.log import (
    SCHEMA,
    EventLog,
    canonical_bytes,
    chain_hash,
    drift_event_data,
    drift_events,
    is_canonical_agent_id,
    resolve_events_path,
    run_events,
    verify_chain,
)
from verdryx_core.errors import UsageError
from verdryx_core.runs import EvalRun, Score

FIXTURES = Path(__file__).parent / "fixtures" / "events"
SCHEMA_DOC = json.loads((FIXTURES / "agent-event.v0.2.schema.json").read_text(encoding="utf-8"))
VECTORS = json.loads((FIXTURES / "chain-vectors.json").read_text(encoding="utf-8"))["vectors"]
VALIDATOR = jsonschema.Draft202012Validator(
    SCHEMA_DOC, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
)
AGENT = "agent://acme.example/support/tier1-bot"
TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")[:-1] if path.exists() else []


def events_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines_of(path)]


def assert_valid(event: dict[str, Any]) -> None:
    VALIDATOR.validate(event)
    # jsonschema checks "date-time" only with an optional extra; check the stamp directly.
    assert TS.match(event["ts"]), event["ts"]
    assert datetime.fromisoformat(event["ts"]).tzinfo is not None


def score(case_id: str, value: float | None, **kwargs: Any) -> Score:
    return Score(
        case_id=case_id,
        eval_set_id="support",
        value=value,
        grader=kwargs.pop("grader", "exact"),
        unmeasured=None if value is not None else "typryx did not answer (timeout)",
        **kwargs,
    )


def a_run(*scores: Score, run_id: str = "run-1") -> EvalRun:
    return EvalRun(
        id=run_id,
        model="stub",
        started_at=datetime(2026, 7, 24, 12, 0, tzinfo=UTC),
        eval_set_ids=("support",),
        agent_id=AGENT,
        scores=scores,
    )


RUN = a_run(
    score("c1", 1.0, tokens=10, cost_usd=0.25),
    score("c2", 0.5, tokens=4, cost_usd=0.125, judge_cost_usd=0.125, grader="llm_judge"),
    score("c3", None, grader="typed"),
    score("c4", 0.0, tokens=2),
)

DRIFT = {
    "verdict": "regressed",
    "baseline_id": "b-1",
    "baseline_mean": 0.9,
    "window": 1,
    "mean_score": 0.5,
    "delta": -0.4,
    "baseline_n": 12,
    "n": 3,
    "t_statistic": -3.5,
    "ci_low": -0.7,
    "ci_high": -0.1,
    "gate": "significant",
}


def write_chain(path: Path, count: int, *, start: int = 0) -> EventLog:
    log = EventLog(path)
    for index in range(start, start + count):
        data = {"case_id": f"c{index}", "value": 0.5, "note": "café", "tokens": index}
        assert log.emit("quality_score", AGENT, data, run_id="run-1")
    return log


# -- the pinned cross-language vectors ---------------------------------------------------------


@pytest.mark.parametrize("vector", VECTORS, ids=[v["event"]["type"] for v in VECTORS])
def test_chain_vectors_reproduce_byte_for_byte(vector: dict[str, Any]) -> None:
    assert canonical_bytes(vector["event"]) == vector["canonical"].encode("utf-8")
    assert chain_hash(vector["event"]) == vector["hash"]
    # prev_hash is outside what is hashed, whatever it holds.
    linked = {**vector["event"], "prev_hash": "sha256:" + "0" * 64}
    assert chain_hash(linked) == vector["hash"]
    assert "prev_hash" in linked  # and the caller's mapping is left alone


def test_chain_vectors_form_one_chain_that_verifies(tmp_path: Path) -> None:
    path = tmp_path / "vectors.ndjson"
    previous: str | None = None
    lines = []
    for vector in VECTORS:
        event = dict(vector["event"])
        if previous is not None:
            event["prev_hash"] = previous
        lines.append(json.dumps(event, ensure_ascii=False))
        previous = vector["hash"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = verify_chain(path)
    assert result.ok, result.message
    assert result.lines == 3


def test_chain_hash_format() -> None:
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", chain_hash({"a": 1}))
    assert canonical_bytes({"b": 1, "a": {"d": 2, "c": 1}}) == b'{"a":{"c":1,"d":2},"b":1}'


# -- what the log writes -----------------------------------------------------------------------


def test_every_line_validates_against_the_v02_schema(tmp_path: Path) -> None:
    path = tmp_path / "events.ndjson"
    log = EventLog(path)
    for kind, data, run_id in run_events(RUN) + drift_events(DRIFT, "run-1"):
        assert log.emit(kind, AGENT, data, run_id=run_id)
    events = events_of(path)
    assert [e["type"] for e in events] == [
        "quality_score",
        "quality_score",
        "quality_score",
        "eval_run",
        "quality_drift",
    ]
    for event in events:
        assert_valid(event)
        assert event["schema"] == SCHEMA
        assert event["source"] == "verdryx"
        assert event["agent_id"] == AGENT
        assert event["run_id"] == "run-1"
        assert not {"id", "time", "spec_version", "on_behalf_of"} & set(event)
    assert [e["severity"] for e in events] == ["info"] * 4 + ["high"]
    assert list(events[0]) == [
        "schema",
        "ts",
        "source",
        "type",
        "severity",
        "agent_id",
        "data",
        "run_id",
    ]
    assert log.written == 5
    assert verify_chain(path).ok


def test_first_event_has_no_prev_hash_and_each_links_to_the_one_before(tmp_path: Path) -> None:
    path = tmp_path / "events.ndjson"
    write_chain(path, 4)
    events = events_of(path)
    assert "prev_hash" not in events[0]
    for before, after in itertools.pairwise(events):
        assert after["prev_hash"] == chain_hash(before)


def test_ts_is_utc_with_milliseconds_and_z(tmp_path: Path) -> None:
    path = tmp_path / "events.ndjson"
    moment = datetime(2026, 7, 9, 5, 12, 44, 100_999, tzinfo=UTC)
    EventLog(path, clock=lambda: moment).emit("eval_run", AGENT, {})
    assert events_of(path)[0]["ts"] == "2026-07-09T05:12:44.100Z"


def test_run_id_is_left_out_when_not_given_and_unknown_types_are_info(tmp_path: Path) -> None:
    path = tmp_path / "events.ndjson"
    EventLog(path).emit("something_new", AGENT, {"x": 1})
    (event,) = events_of(path)
    assert "run_id" not in event
    assert event["severity"] == "info"
    assert_valid(event)


def test_non_ascii_data_is_written_as_utf8_and_hashed_as_rfc8785(tmp_path: Path) -> None:
    path = tmp_path / "events.ndjson"
    log = EventLog(path)
    log.emit("quality_score", AGENT, {"note": "обмеження діє", "nested": {"b": 2, "a": 1}})
    log.emit("quality_score", AGENT, {})
    first, second = events_of(path)
    assert "обмеження".encode() in path.read_bytes()
    body = {k: v for k, v in first.items() if k != "prev_hash"}
    assert second["prev_hash"] == "sha256:" + hashlib.sha256(rfc8785.dumps(body)).hexdigest()


# -- resuming across restarts ------------------------------------------------------------------


def test_a_chain_verifies_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "events.ndjson"
    write_chain(path, 3)
    second = write_chain(path, 2, start=3)  # a new process: a new EventLog on the same file
    assert second.torn_tail is None
    events = events_of(path)
    assert len(events) == 5
    assert events[3]["prev_hash"] == chain_hash(events[2])
    result = verify_chain(path)
    assert result.ok and result.lines == 5, result.message


def test_resume_reads_only_the_end_of_a_large_file(tmp_path: Path) -> None:
    path = tmp_path / "events.ndjson"
    log = EventLog(path)
    for index in range(12):  # ~1.2 MiB: more than the 1 MiB tail that is read
        log.emit("quality_score", AGENT, {"i": index, "blob": "x" * 100_000})
    assert path.stat().st_size > 1 << 20
    write_chain(path, 1, start=12)
    assert verify_chain(path).ok


def test_a_complete_last_line_without_its_newline_is_chained_onto(tmp_path: Path) -> None:
    path = tmp_path / "events.ndjson"
    write_chain(path, 2)
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    log = write_chain(path, 1, start=2)
    assert log.torn_tail is None
    assert len(lines_of(path)) == 3
    assert verify_chain(path).ok


def test_a_torn_last_line_is_reported_and_not_chained_onto(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "events.ndjson"
    write_chain(path, 3)
    path.write_bytes(path.read_bytes()[:-20])  # a crash mid-write: no newline, half an event
    before = events_of_prefix(path, 2)
    with caplog.at_level(logging.WARNING, logger="verdryx.events"):
        log = EventLog(path)
    assert log.torn_tail is not None and "damaged" in log.torn_tail
    assert str(path) in log.torn_tail
    assert any("damaged" in record.getMessage() for record in caplog.records)
    assert log.emit("eval_run", AGENT, {"cases": 3}, run_id="run-1")
    lines = lines_of(path)
    assert len(lines) == 4  # the fragment stays, closed by a newline, the new event after it
    new = json.loads(lines[3])
    assert_valid(new)
    assert new["prev_hash"] == chain_hash(before[-1])  # the last complete event, not the fragment
    result = verify_chain(path)
    assert not result.ok
    assert result.first_broken_line == 3
    assert "not a JSON event" in result.message


def events_of_prefix(path: Path, count: int) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().split(b"\n")[:count]]


def test_a_tail_with_no_complete_event_starts_a_new_chain_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "events.ndjson"
    path.write_bytes(b'{"schema":"taipanbox.dev/agent-ev')
    log = EventLog(path)
    assert log.torn_tail is not None and "new chain" in log.torn_tail
    assert log.emit("eval_run", AGENT, {})
    (fragment, line) = lines_of(path)
    assert fragment.startswith(b'{"schema"')
    assert "prev_hash" not in json.loads(line)


# -- skipping and failing open -----------------------------------------------------------------


def test_an_event_without_an_agent_id_is_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "events.ndjson"
    log = EventLog(path)
    assert not log.emit("eval_run", None, {"cases": 1})
    assert not log.emit("eval_run", "", {"cases": 1})
    assert log.skipped_no_agent == 2
    assert log.written == 0
    assert not path.exists()  # never given a made-up id, and no file for nothing


def test_an_agent_id_outside_the_passport_grammar_is_rejected_and_warned_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "events.ndjson"
    log = EventLog(path)
    with caplog.at_level(logging.WARNING, logger="verdryx.events"):
        for _ in range(3):
            assert not log.emit("eval_run", "Support-Bot", {})
    assert log.rejected == 3
    warnings = [r for r in caplog.records if "Agent Passport grammar" in r.getMessage()]
    assert len(warnings) == 1
    assert not path.exists()
    assert is_canonical_agent_id(AGENT)
    assert not is_canonical_agent_id("agent://Acme/x")
    assert not is_canonical_agent_id("agent://a/" + "x" * 250)


def test_a_write_failure_is_logged_and_swallowed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "missing-dir" / "events.ndjson"
    log = EventLog(path)
    with caplog.at_level(logging.WARNING, logger="verdryx.events"):
        assert not log.emit("eval_run", AGENT, {"cases": 1})
        assert not log.emit("eval_run", AGENT, {"cases": 1})
    assert log.write_failures == 2
    assert log.written == 0
    assert sum("write failed" in r.getMessage() for r in caplog.records) == 1  # not once per event
    path.parent.mkdir()
    assert log.emit("eval_run", AGENT, {"cases": 1})
    assert "prev_hash" not in events_of(path)[0]  # the failed events did not advance the chain


def test_a_directory_as_path_is_refused_and_one_made_later_fails_open(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is a folder"):
        EventLog(tmp_path)
    path = tmp_path / "later"
    log = EventLog(path)
    path.mkdir()  # put there after the log was opened: emit still never raises
    assert not log.emit("eval_run", AGENT, {})
    assert log.write_failures == 1


@pytest.mark.parametrize(
    "data",
    [{"x": float("nan")}, {"x": object()}, {"x": 2**60}, {"x": "lone \ud800 surrogate"}],
    ids=["nan", "object", "big-int", "surrogate"],
)
def test_data_that_is_not_canonical_json_is_rejected_not_raised(
    tmp_path: Path, data: dict[str, Any]
) -> None:
    path = tmp_path / "events.ndjson"
    log = EventLog(path)
    assert not log.emit("quality_score", AGENT, data)
    assert log.rejected == 1
    assert not path.exists()
    assert log.emit("quality_score", AGENT, {"x": 1})
    assert verify_chain(path).ok


def test_an_empty_type_or_a_non_string_run_id_is_rejected(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.ndjson")
    assert not log.emit("", AGENT, {})
    assert not log.emit("eval_run", AGENT, {}, run_id=7)  # type: ignore[arg-type]
    assert log.rejected == 2
    assert log.write_failures == 0


def test_constructing_a_log_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "events.ndjson"
    EventLog(path)
    assert not path.exists()


def test_concurrent_emits_keep_one_chain(tmp_path: Path) -> None:
    path = tmp_path / "events.ndjson"
    log = EventLog(path)

    def work(worker: int) -> None:
        for index in range(40):
            log.emit("quality_score", AGENT, {"worker": worker, "i": index})

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result = verify_chain(path)
    assert result.ok and result.lines == 240, result.message


# -- path resolution ---------------------------------------------------------------------------


def test_resolve_events_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env = {"VERDRYX_EVENTS_PATH": str(tmp_path / "env.ndjson")}
    assert resolve_events_path("flag.ndjson", env) == Path("flag.ndjson")
    assert resolve_events_path(None, env) == tmp_path / "env.ndjson"
    assert resolve_events_path(None, {"VERDRYX_EVENTS_PATH": ""}) is None
    assert resolve_events_path(None, {}) is None
    monkeypatch.setenv("VERDRYX_EVENTS_PATH", "live.ndjson")  # read at call time
    assert resolve_events_path(None) == Path("live.ndjson")
    monkeypatch.delenv("VERDRYX_EVENTS_PATH")
    assert resolve_events_path(None) is None


# -- payloads ----------------------------------------------------------------------------------


def test_run_events_one_quality_score_per_measured_case_then_eval_run() -> None:
    events = run_events(RUN)
    assert [kind for kind, _, _ in events] == ["quality_score"] * 3 + ["eval_run"]
    assert {run_id for _, _, run_id in events} == {"run-1"}
    scores = [data for kind, data, _ in events if kind == "quality_score"]
    assert [s["case_id"] for s in scores] == ["c1", "c2", "c4"]  # the unanswered c3 emits nothing
    assert scores[1] == {
        "case_id": "c2",
        "eval_set_id": "support",
        "grader": "llm_judge",
        "value": 0.5,
        "tokens": 4,
        "cost_usd": 0.25,  # model + grading spend, so the scores sum to the run's total
    }
    _, run_data, _ = events[-1]
    assert run_data["model"] == "stub"
    assert run_data["cases"] == 3
    assert run_data["unanswered"] == 1
    assert run_data["mean_score"] == pytest.approx(0.5)
    assert run_data["total_tokens"] == 16
    assert run_data["total_cost_usd"] == pytest.approx(0.5)
    assert sum(s["cost_usd"] for s in scores) == pytest.approx(run_data["total_cost_usd"])


def test_a_run_with_every_case_unanswered_has_no_mean() -> None:
    ((kind, data, _),) = run_events(a_run(score("c1", None), score("c2", None)))
    assert kind == "eval_run"
    assert data["mean_score"] is None
    assert data["cases"] == 0
    assert data["unanswered"] == 2


def test_drift_event_data_and_only_regressed_is_emitted() -> None:
    assert drift_event_data(DRIFT) == {
        "baseline_id": "b-1",
        "window": 1,
        "mean_score": 0.5,
        "delta": -0.4,
        "verdict": "regressed",
        "baseline_n": 12,
        "t_statistic": -3.5,
        "ci_low": -0.7,
        "ci_high": -0.1,
    }
    odd = drift_event_data({**DRIFT, "t_statistic": float("nan"), "ci_low": None})
    assert odd["t_statistic"] is None and odd["ci_low"] is None
    assert drift_events({**DRIFT, "verdict": "on-track"}, "run-1") == []
    assert drift_events(DRIFT, "run-1") == [("quality_drift", drift_event_data(DRIFT), "run-1")]
    # Cases paired: the interval is the one the verdict used (docs/events-and-otlp.md).
    paired = {"n": 12, "mean_diff": -0.4, "t_statistic": -4.0, "ci_low": -0.6, "ci_high": -0.2}
    data = drift_event_data({**DRIFT, "ci_low": None, "ci_high": None, "paired": paired})
    assert (data["ci_low"], data["ci_high"], data["t_statistic"]) == (-0.6, -0.2, -3.5)


# -- verify ------------------------------------------------------------------------------------


def flip(path: Path, offset: int) -> bytes:
    original = path.read_bytes()
    damaged = bytearray(original)
    damaged[offset] ^= 0x01
    path.write_bytes(bytes(damaged))
    return original


def test_flipping_any_byte_of_a_line_names_that_line(tmp_path: Path) -> None:
    path = tmp_path / "events.ndjson"
    write_chain(path, 4)
    original = path.read_bytes()
    starts = [0, *[i + 1 for i, byte in enumerate(original) if byte == 10][:-1]]
    # Line 1 (no prev_hash) and line 2 (a prev_hash and a successor) cover every kind of byte;
    # the last line is attested by no later line: see the next test.
    for number in (1, 2):
        start = starts[number - 1]
        end = starts[number]  # includes the line's newline
        hash_at = original.find(b'"prev_hash":"sha256:', start, end)
        hex_digits = range(hash_at + 20, hash_at + 20 + 64) if hash_at >= 0 else range(0)
        for offset in range(start, end):
            damaged_file = bytearray(original)
            damaged_file[offset] ^= 0x01
            path.write_bytes(bytes(damaged_file))
            result = verify_chain(path)
            assert not result.ok, (number, offset)
            damaged = bytes(damaged_file[offset : offset + 1])
            if offset in hex_digits and damaged in b"0123456789abcdef":
                # A flip that keeps the hash well-formed reads as a change to the line it
                # attests; the message names both.
                assert result.first_broken_line == number - 1, (number, offset, result)
                assert f"line {number}'s prev_hash" in result.message
            else:
                assert result.first_broken_line == number, (number, offset, result)
                assert f"line {number}" in result.message


def test_the_newest_line_is_attested_only_by_its_form(tmp_path: Path) -> None:
    # The documented limit of any prev_hash chain: nothing after the newest line vouches for
    # it, so an edit that keeps it valid JSON is not seen; one that breaks it is.
    path = tmp_path / "events.ndjson"
    write_chain(path, 3)
    original = path.read_bytes()
    path.write_bytes(original.replace(b'"c2"', b'"c9"'))
    assert verify_chain(path).ok
    path.write_bytes(original[:-3] + b"\n")
    assert verify_chain(path).first_broken_line == 3


@pytest.mark.parametrize(
    ("mutate", "line", "words"),
    [
        (lambda ls: [ls[0], ls[2], ls[1], ls[3]], 1, "does not match"),
        (lambda ls: ls[1:], 1, "first line"),
        (lambda ls: [ls[0], ls[1], b"", ls[2], ls[3]], 3, "blank"),
        (lambda ls: [ls[0], ls[1], b"[1, 2]", ls[2], ls[3]], 3, "not an object"),
        (lambda ls: [ls[0], ls[1], _drop_prev(ls[2]), ls[3]], 3, "no prev_hash"),
        (lambda ls: [ls[0], _bad_prev(ls[1]), ls[2], ls[3]], 2, "malformed prev_hash"),
        (lambda ls: [ls[0], ls[1], ls[3]], 2, "does not match"),
    ],
    ids=["swapped", "head cut", "blank", "array", "no-prev", "malformed", "line removed"],
)
def test_verify_names_the_first_line_that_cannot_be_trusted(
    tmp_path: Path, mutate: Any, line: int, words: str
) -> None:
    path = tmp_path / "events.ndjson"
    write_chain(path, 4)
    path.write_bytes(b"\n".join(mutate(lines_of(path))) + b"\n")
    result = verify_chain(path)
    assert not result.ok
    assert result.first_broken_line == line, result.message
    assert words in result.message


def _drop_prev(line: bytes) -> bytes:
    event = json.loads(line)
    del event["prev_hash"]
    return json.dumps(event).encode()


def _bad_prev(line: bytes) -> bytes:
    event = json.loads(line)
    event["prev_hash"] = "sha256:XYZ"
    return json.dumps(event).encode()


def test_verify_empty_and_missing_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.ndjson"
    empty.write_bytes(b"")
    assert verify_chain(empty).ok and verify_chain(empty).lines == 0
    with pytest.raises(UsageError, match="cannot read event log"):
        verify_chain(tmp_path / "nope.ndjson")


def test_verify_splits_lines_on_newline_only(tmp_path: Path) -> None:
    # A vertical tab or U+2028 inside a value is not a line break (str.splitlines would say so).
    path = tmp_path / "events.ndjson"
    log = EventLog(path)
    log.emit("quality_score", AGENT, {"note": "a\u2028b\x0bc\x0cd"})
    log.emit("quality_score", AGENT, {})
    assert verify_chain(path).ok


# -- the CLI -----------------------------------------------------------------------------------


def test_cli_events_verify_ok_broken_and_unreadable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "events.ndjson"
    write_chain(path, 4)
    assert cli.main(["events", "verify", str(path)]) == 0
    assert capsys.readouterr().out.startswith("ok: ")

    assert cli.main(["events", "verify", str(path), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["ok"] is True and document["lines"] == 4
    assert document["first_broken_line"] is None

    flip(path, lines_of(path)[0].index(b'"c0"') + 2)  # c0 -> c1 on line 1
    assert cli.main(["events", "verify", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("broken: ") and "line 1 " in out

    assert cli.main(["events", "verify", str(path), "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["ok"] is False and document["first_broken_line"] == 1

    assert cli.main(["events", "verify", str(tmp_path / "missing.ndjson")]) == 2
    assert "error: cannot read event log" in capsys.readouterr().err


def test_cli_events_verify_exit_codes_in_a_subprocess(tmp_path: Path) -> None:
    path = tmp_path / "events.ndjson"
    write_chain(path, 3)
    command = [sys.executable, "-m", "verdryx_core.cli", "events", "verify", str(path)]
    flip(path, 5)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert "line 1" in done.stdout


# -- property: any data, any restarts, one verifying chain -------------------------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    batches=st.lists(
        st.lists(st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=4), max_size=4),
        min_size=1,
        max_size=4,
    )
)
def test_any_data_across_any_restarts_verifies(tmp_path: Path, batches: list[list[dict]]) -> None:
    path = tmp_path / f"events-{abs(hash(repr(batches)))}.ndjson"
    path.unlink(missing_ok=True)
    total = 0
    for batch in batches:  # each batch is one process: a fresh EventLog on the same file
        log = EventLog(path)
        assert log.torn_tail is None
        for data in batch:
            assert log.emit("quality_score", AGENT, data, run_id="r")
        total += len(batch)
    if total == 0:
        assert not path.exists()  # nothing emitted, nothing created
        return
    result = verify_chain(path)
    assert result.ok and result.lines == total, result.message
    events = events_of(path)
    for event in events:
        assert_valid(event)
    for before, after in itertools.pairwise(events):
        assert after["prev_hash"] == chain_hash(before)
