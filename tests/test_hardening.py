"""What a user, a provider or a file can feed verdryx, class by class: each ends in a result or
one line naming what is wrong, never a traceback, a lost run or a lie
(docs/troubleshooting.md, "Reliability")."""

from __future__ import annotations

import base64
import json
import logging
import re
import unicodedata
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fakes.anthropic_server import GARBAGE, FakeAnthropic, error_reply
from fakes.openai_server import FakeOpenAI, completion_body
from fakes.openai_server import Reply as OpenAIReply
from fakes.typryx_server import FakeTypryx
from fakes.typryx_server import Reply as TypryxReply

from verdryx_core.addons.errors import TraceError
from verdryx_core.addons.events.log import verify_chain
from verdryx_core.addons.traces.records import read_ndjson
from verdryx_core.addons.typed.client import TypryxClient
from verdryx_core.cli import main
from verdryx_core.errors import (
    BaselineFileError,
    EvalSetError,
    ModelCallError,
    UsageError,
    VerdryxError,
)
from verdryx_core.evalsets.load import load_evalset
from verdryx_core.gating.baselines import baseline_schema, read_baseline_file
from verdryx_core.llm.anthropic_adapter import AnthropicAdapter
from verdryx_core.llm.prices import PriceBook
from verdryx_core.runs import Baseline, EvalRun, Score
from verdryx_core.store import Store
from verdryx_core.untrusted.json_input import parse_json
from verdryx_core.untrusted.redact import install_log_filter, redact_text
from verdryx_core.untrusted.text import clean_text, first_invalid_text, printable

START = datetime(2026, 1, 1, tzinfo=UTC)
TOOLS = [{"name": "lookup", "description": "d", "input_schema": {"type": "object"}}]


@pytest.fixture(autouse=True)
def _hermetic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("VERDRYX_DB", "TAIPAN_HOME"):
        monkeypatch.delenv(name, raising=False)


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, f"expected one line, got {text!r}"
    return lines[0]


# -- 1. text that is not valid Unicode; control characters --------------------------------


def test_the_text_rule_helpers() -> None:
    assert clean_text("a\ud800b") == "a\ufffdb"
    assert clean_text("ok ✓ 😀") == "ok ✓ 😀"
    assert printable("a\x00b\x1b[31mc\nd") == "a\\x00b\\x1b[31mc\nd"
    assert printable("a\nb\tc", keep_newlines=False) == "a\\nb\\tc"
    assert first_invalid_text({"cases": [{"id": "x", "tags": ["ok", "\udc80"]}]}) == (
        ("cases", 0, "tags", 1),
        "\ufffd",
    )
    assert first_invalid_text({"a": ["fine"]}) is None


@pytest.mark.parametrize(
    ("field", "case", "where"),
    [
        (
            "expected",
            {"id": "c1", "prompt": "p", "expected": "x\ud800"},
            "case 'c1' (#1): field 'expected'",
        ),
        (
            "output",
            {"id": "c1", "prompt": "p", "expected": "x", "output": "\udfff"},
            "field 'output'",
        ),
        (
            "id",
            {"id": "c\ud800", "prompt": "p", "expected": "x"},
            "case 'c\\ud800' (#1): field 'id'",
        ),
    ],
)
def test_an_evalset_with_a_lone_surrogate_is_refused_naming_file_case_and_field(
    tmp_path: Path, field: str, case: dict[str, Any], where: str
) -> None:
    path = tmp_path / "bad.evalset.json"
    # json.dumps writes the lone surrogate as the escape \ud800, as a hand-edited file would.
    path.write_text(json.dumps({"id": "s", "cases": [case]}), encoding="utf-8")
    with pytest.raises(EvalSetError) as caught:
        load_evalset(path)
    message = one_line(str(caught.value))
    assert message.startswith(f"{path}: ")
    assert where in message and "not valid Unicode" in message
    assert caught.value.field == field
    message.encode("utf-8")  # printable: the message itself has no surrogate


def test_a_run_with_an_invalid_unicode_output_is_stored_not_lost(tmp_path: Path) -> None:
    run = EvalRun(
        id="r1",
        model="stub",
        started_at=START,
        eval_set_ids=("s",),
        scores=(
            Score(
                case_id="c1",
                eval_set_id="s",
                value=0.0,
                grader="exact",
                output="half an emoji \ud83d and a NUL \x00",
                reason="judge said \udcff",
            ),
        ),
    )
    with Store.open(tmp_path / "s.db") as store:
        store.save_run(run)
        back = store.load_run("r1")
    assert back is not None
    assert back.scores[0].output == "half an emoji \ufffd and a NUL \x00"
    assert back.scores[0].reason == "judge said \ufffd"


def test_cli_output_escapes_control_characters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "s.db"
    score = Score(
        case_id="c1",
        eval_set_id="s",
        value=0.0,
        grader="exact",
        passed=False,
        output="evil\x1b[2J\x00output\ud800",
        expected="fine",
    )
    run = EvalRun(id="r1", model="stub", started_at=START, eval_set_ids=("s",), scores=(score,))
    with Store.open(db) as store:
        store.save_run(run)
    code, out, _ = cli(capsys, "show", "r1", "--db", str(db))
    assert code == 0
    assert "\x1b" not in out and "\x00" not in out
    assert "\\x1b[2J\\x00output" in out
    code, out, _ = cli(capsys, "show", "r1", "--db", str(db), "--json")
    assert code == 0 and "\x1b" not in out
    assert json.loads(out)["scores"][0]["output"] == "evil\x1b[2J\x00output\ufffd"


def test_an_error_message_never_carries_a_raw_control_character() -> None:
    message = str(UsageError("unknown baseline 'a\x1b[31m\nb\ud800'"))
    assert message == "unknown baseline 'a\\x1b[31m\\nb\ufffd'"


# -- 1b. ids with control or format characters; ids equal once normalized -------------------


@pytest.mark.parametrize(
    ("case_id", "shown"),
    [
        ("ref\x1b[8mund", "\\x1b"),  # ESC: "conceal" hides the rest of the id
        ("\x8fid", "\\x8f"),  # a C1 control (SS3)
        ("id\x00", "\\x00"),
        ("refund\u2066x", "\\u2066"),  # LEFT-TO-RIGHT ISOLATE
        ("id\u200b", "\\u200b"),  # zero width: two ids that look the same
        ("t\U000e0041", "\\U000e0041"),  # a tag character, outside the schema's plane
    ],
)
@pytest.mark.parametrize("kind", ["json", "jsonl"])
def test_a_case_id_with_a_control_or_format_character_is_refused_naming_file_and_case(
    tmp_path: Path, case_id: str, shown: str, kind: str
) -> None:
    header = {"id": "s"}
    cases = [
        {"id": "fine", "prompt": "p", "expected": "x"},
        {"id": case_id, "prompt": "p", "expected": "x"},
    ]
    path = tmp_path / f"ids.evalset.{kind}"
    if kind == "json":
        path.write_text(json.dumps({**header, "cases": cases}), encoding="utf-8")
    else:
        path.write_text("\n".join(json.dumps(item) for item in [header, *cases]), encoding="utf-8")
    with pytest.raises(EvalSetError) as caught:
        load_evalset(path)
    message = one_line(str(caught.value))
    assert message.startswith(f"{path}: " if kind == "json" else f"{path}:3: ")
    assert "case " in message and "(#2)" in message and "field 'id'" in message
    assert f"holds the control or format character '{shown}'" in message
    assert all(char.isprintable() for char in message), repr(message)


@pytest.mark.parametrize("set_id", ["nightly\u202bv2", "run\x07", "s\u2029"])
def test_an_eval_set_id_with_a_control_or_format_character_is_refused(
    tmp_path: Path, set_id: str
) -> None:
    path = tmp_path / "s.evalset.json"
    path.write_text(json.dumps({"id": set_id, "cases": [{"id": "c", "prompt": "p"}]}))
    with pytest.raises(EvalSetError, match=r"field 'id': .* holds the control or format"):
        load_evalset(path)


def test_case_ids_equal_after_nfc_normalization_are_refused(tmp_path: Path) -> None:
    composed, decomposed = "\u00c5sa", "A\u030asa"  # "Åsa" twice, in two normal forms
    cases = [
        {"id": composed, "prompt": "p", "expected": "y"},
        {"id": "x", "prompt": "p", "expected": "y"},
        {"id": decomposed, "prompt": "p", "expected": "y"},
    ]
    path = tmp_path / "s.evalset.json"
    path.write_text(json.dumps({"id": "s", "cases": cases}, ensure_ascii=False))
    with pytest.raises(EvalSetError) as caught:
        load_evalset(path)
    message = one_line(str(caught.value))
    assert "(#3): field 'id'" in message
    assert "the id of case #1, 'Åsa', is the same text in another Unicode normalization form" in (
        message
    )
    # Different ids that only share letters are fine.
    cases[2] = {"id": "Asa", "prompt": "p", "expected": "y"}
    path.write_text(json.dumps({"id": "s", "cases": cases}, ensure_ascii=False))
    assert [case.id for case in load_evalset(path).cases] == [composed, "x", "Asa"]


def test_the_schema_id_patterns_refuse_every_control_and_format_character_of_the_bmp() -> None:
    # The published pattern (for editors and other tools) says what the loader does, for
    # every character of the Basic Multilingual Plane, as this Python's Unicode tables say.
    schema = json.loads(
        (Path(__file__).parent.parent / "verdryx_core/schemas/evalset.schema.json").read_text()
    )
    case_id = re.compile(schema["$defs"]["case"]["properties"]["id"]["pattern"])
    set_id = re.compile(schema["properties"]["id"]["pattern"])
    for code in range(0x10000):
        char = chr(code)
        if 0xD800 <= code <= 0xDFFF:
            continue
        hidden = unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp")
        assert (set_id.match(f"a{char}b") is None) == hidden, hex(code)
        if not (char.isspace() or char in ":[]"):
            assert (case_id.match(f"a{char}b") is None) == hidden, hex(code)


# -- 2. deep nesting at every JSON loader ---------------------------------------------------

DEEP = "[" * 100_000


def test_parse_json_words_deep_nesting_and_long_numbers() -> None:
    with pytest.raises(json.JSONDecodeError, match="nested deeper than 100 levels") as caught:
        parse_json(DEEP)
    assert (caught.value.lineno, caught.value.colno) == (1, 101)
    with pytest.raises(json.JSONDecodeError, match="nested deeper"):
        parse_json("[" * 150 + "]" * 150)  # parses, but is too deep to walk safely
    with pytest.raises(json.JSONDecodeError, match="more digits"):
        parse_json("[" + "9" * 5000 + "]")
    assert parse_json("[" * 100 + "]" * 100) is not None


def _loaders(tmp_path: Path) -> dict[str, Any]:
    def evalset(path: Path) -> object:
        return load_evalset(path)

    def baseline(path: Path) -> object:
        return read_baseline_file(path)

    def prices(path: Path) -> object:
        return PriceBook.from_file(path)

    def traces(path: Path) -> object:
        return read_ndjson(path)

    def events(path: Path) -> object:
        result = verify_chain(path)
        if not result.ok:
            raise UsageError(result.message)
        return result

    return {
        "evalset": evalset,
        "baseline": baseline,
        "prices": prices,
        "traces": traces,
        "events": events,
    }


@pytest.mark.parametrize("kind", ["evalset", "baseline", "prices", "traces", "events"])
@pytest.mark.parametrize("text", [DEEP, '{"a":' * 50_000, "[" * 200 + "]" * 200])
def test_deep_nesting_is_one_line_at_every_loader(tmp_path: Path, kind: str, text: str) -> None:
    path = tmp_path / f"deep.{kind}.json"
    path.write_text(text + "\n", encoding="utf-8")
    with pytest.raises((VerdryxError, TraceError)) as caught:
        _loaders(tmp_path)[kind](path)
    message = one_line(str(caught.value))
    assert "nested deeper than 100 levels" in message
    assert str(path) in message or kind == "events"


def test_deep_nesting_through_the_cli_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.evalset.json"
    path.write_text(DEEP, encoding="utf-8")
    code, _, err = cli(capsys, "eval", str(path), "--model", "stub", "--db", str(tmp_path / "s.db"))
    assert code == 2
    assert "nested deeper than 100 levels" in one_line(err)


# -- 3. malformed provider answers through the real SDK -------------------------------------


def _adapter(server: FakeAnthropic, **kwargs: Any) -> AnthropicAdapter:
    return AnthropicAdapter(
        "claude-haiku-4-5", api_key=server.api_key, base_url=server.url, max_retries=0, **kwargs
    )


@pytest.mark.parametrize("name", sorted(GARBAGE))
def test_a_malformed_answer_is_one_model_call_error_naming_the_call_and_status(
    server: FakeAnthropic, name: str
) -> None:
    reply = GARBAGE[name]
    for call, invoke in (
        ("model call", lambda adapter: adapter.complete("hi")),
        ("model call with tools", lambda adapter: adapter.complete_with_tools("hi", TOOLS)),
    ):
        server.script(reply)
        with pytest.raises(ModelCallError) as caught:
            invoke(_adapter(server))
        message = one_line(str(caught.value))
        assert message.startswith("model claude-haiku-4-5")
        assert call in message
        assert f"HTTP {reply.status}" in message
        assert caught.value.status == reply.status
        assert len(message) < 600


@pytest.mark.parametrize("name", sorted(GARBAGE))
def test_a_malformed_judge_answer_is_unmeasured_and_a_failed_one_an_error(
    server: FakeAnthropic, name: str
) -> None:
    reply = GARBAGE[name]
    server.script(reply)
    adapter = _adapter(server)
    if reply.status >= 400:
        with pytest.raises(ModelCallError, match=r"judge call.*HTTP 500"):
            adapter.judge("p", "o", "r")
        return
    judgement = adapter.judge("p", "o", "r")
    assert judgement.score is None
    assert judgement.unmeasured is not None
    assert "judge call" in judgement.unmeasured and "HTTP 200" in judgement.unmeasured


def test_a_well_formed_answer_still_reads(server: FakeAnthropic) -> None:
    completion = _adapter(server).complete("hi")
    assert completion.text == "echo: hi" and completion.tokens == 15
    assert _adapter(server).judge("p", "o", "r").score == 0.75
    assert _adapter(server).complete_with_tools("hi", TOOLS).tool_names == ("lookup",)


def test_a_typed_service_answering_garbage_is_one_model_call_error() -> None:
    with FakeTypryx() as fake:
        for raw in (b"<html>proxy</html>", b"[" * 100_000, b'{"trunc', b"\xff\xfe"):
            fake.script(TypryxReply(raw=raw))
            client = TypryxClient(fake.url, fake.key)
            with pytest.raises(ModelCallError) as caught:
                client.ask({"task": "t", "final_answer": "a"}, None)
            one_line(str(caught.value))


# -- 4. baseline files validated like eval sets ----------------------------------------------


def _baseline_document(**changes: Any) -> dict[str, Any]:
    run = EvalRun(
        id="run-1",
        model="stub",
        started_at=START,
        eval_set_ids=("s",),
        scores=tuple(
            Score(case_id=f"c{i}", eval_set_id="s", value=1.0, grader="exact", passed=True)
            for i in range(3)
        ),
    )
    document = Baseline.from_run(run, id="b1", label="v1", created_at=START).to_dict()
    return document | changes


def _case(**changes: Any) -> dict[str, Any]:
    return {"eval_set_id": "s", "case_id": "c0", "value": 1.0, "passed": True} | changes


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (
            _baseline_document(cases=[_case(value=True)]),
            "case 'c0' (#1): field 'value': expected number, got a boolean",
        ),
        (
            _baseline_document(cases=[_case(value=1.5)]),
            "case 'c0' (#1): field 'value': 1.5 is not in [0, 1]",
        ),
        (_baseline_document(cases=[_case(value=-0.1)]), "field 'value': -0.1 is not in [0, 1]"),
        (
            _baseline_document(cases=[_case(), _case()]),
            "case 'c0' (#2): field 'case_id': duplicate case",
        ),
        (
            _baseline_document(cases=[_case(extra=1)]),
            "case 'c0' (#1): field 'extra': not a known field",
        ),
        (_baseline_document(colour="red"), "field 'colour': not a known field"),
        (_baseline_document(mean="high"), "field 'mean': expected number, got a string"),
        (
            _baseline_document(cases=[{"eval_set_id": "s", "value": 1.0}]),
            "case #1: field 'case_id': required but missing",
        ),
        (_baseline_document(cases=[_case(case_id="c\ud800")]), "not valid Unicode"),
        (
            _baseline_document(cases=[_case(case_id="c\u2067x")]),
            "case 'c\\u2067x' (#1): field 'case_id': 'c\\u2067x' holds the control or format "
            "character '\\u2067'",
        ),
        (_baseline_document(created_at="yesterday"), "field 'created_at': not an ISO-8601 time"),
        ([1, 2], "top level must be a JSON object"),
    ],
)
def test_a_bad_baseline_file_is_one_line_naming_file_case_and_field(
    tmp_path: Path, document: object, expected: str
) -> None:
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(BaselineFileError) as caught:
        read_baseline_file(path)
    message = one_line(str(caught.value))
    assert message.startswith(f"{path}: ")
    assert expected in message


def test_nan_in_a_baseline_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(_baseline_document()).replace('"mean": 1.0', '"mean": NaN'))
    with pytest.raises(BaselineFileError, match="NaN is not a JSON number"):
        read_baseline_file(path)


def test_a_written_baseline_file_matches_the_published_schema(tmp_path: Path) -> None:
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(baseline_schema())
    jsonschema.validate(_baseline_document(), baseline_schema())
    committed = Path(__file__).resolve().parent.parent / ".verdryx" / "baselines" / "v1.json"
    assert read_baseline_file(committed).label == "v1"


def test_drift_on_a_bad_committed_baseline_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / ".verdryx" / "baselines"
    folder.mkdir(parents=True)
    (folder / "v1.json").write_text(json.dumps(_baseline_document(cases=[_case(value=True)])))
    with Store.open(tmp_path / "s.db"):
        pass  # a store with no runs: the read commands refuse a missing one first
    code, _, err = cli(capsys, "drift", "--baseline", "v1", "--db", str(tmp_path / "s.db"))
    assert code == 2
    assert "field 'value': expected number, got a boolean" in one_line(err)


# -- 5. drift after a model change ------------------------------------------------------------


def _run(run_id: str, model: str, values: list[float], minutes: int) -> EvalRun:
    return EvalRun(
        id=run_id,
        model=model,
        started_at=START + timedelta(minutes=minutes),
        eval_set_ids=("agent",),
        scores=tuple(
            Score(case_id=f"c{i}", eval_set_id="agent", value=value, grader="exact")
            for i, value in enumerate(values)
        ),
    )


def _model_change_store(tmp_path: Path) -> Path:
    db = tmp_path / "s.db"
    base = _run("base", "claude-a", [1.0] * 20, 0)
    with Store.open(db) as store:
        store.save_run(base)
        store.save_run(_run("older-same-model", "claude-a", [1.0] * 20, 1))
        store.save_run(_run("newest-other-model", "claude-b", [0.0] * 20, 2))
        store.save_baseline(Baseline.from_run(base, id="b1", label="v1"))
    return db


def test_drift_refuses_the_newest_run_when_it_is_of_another_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: drift judged 'older-same-model' and said ON-TRACK while the newest run, on
    # another model, scored 0.
    db = _model_change_store(tmp_path)
    code, out, err = cli(capsys, "drift", "--baseline", "v1", "--db", str(db))
    assert code == 2 and out == ""
    line = one_line(err)
    assert "'claude-b'" in line and "'claude-a'" in line
    assert "--allow-model-change" in line and "--verdryx-allow" not in line


def test_drift_with_allow_model_change_judges_the_newest_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _model_change_store(tmp_path)
    code, out, _ = cli(
        capsys, "drift", "--baseline", "v1", "--db", str(db), "--allow-model-change", "--json"
    )
    document = json.loads(out)
    assert document["run_id"] == "newest-other-model"
    assert document["verdict"] == "regressed" and code == 1


# -- 6. credentials in URLs -------------------------------------------------------------------


def test_redact_text_masks_user_info_in_every_url() -> None:
    text = (
        "POST http://alice:pa55@host:1/v1 then postgresql://u:p@db/x?password=p2 and "
        "https://ok.example/a@b and https://ghp_token@git.example/r"
    )
    assert redact_text(text) == (
        "POST http://alice:***@host:1/v1 then postgresql://u:***@db/x?password=*** and "
        "https://ok.example/a@b and https://***@git.example/r"
    )


def test_sdk_and_httpx_log_records_are_redacted(
    server: FakeAnthropic, caplog: pytest.LogCaptureFixture
) -> None:
    secret = server.api_key  # the proxy's password is the credential (basic auth)
    url = server.url.replace("http://", f"http://proxyuser:{secret}@")
    caplog.set_level(logging.DEBUG)
    adapter = AnthropicAdapter("claude-haiku-4-5", api_key=secret, base_url=url, max_retries=0)
    assert adapter.complete("hi").text == "echo: hi"
    server.script(error_reply(400, "invalid_request_error", "bad"))
    with pytest.raises(ModelCallError) as caught:
        adapter.complete("hi")
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "http://proxyuser:***@127.0.0.1" in logged  # the URL was logged, masked
    assert secret not in logged
    assert secret not in str(caught.value) and "***@" in str(caught.value)
    assert secret not in repr(adapter)


def test_the_log_filter_covers_child_loggers_created_before_install() -> None:
    child = logging.getLogger("httpx.some_child_for_test")
    install_log_filter()
    record = child.makeRecord(
        child.name, logging.INFO, __file__, 1, "GET %s", ("https://u:secret@h/x",), None
    )
    assert child.filter(record)
    assert record.getMessage() == "GET https://u:***@h/x"


def test_an_otlp_endpoint_with_credentials_is_redacted_and_sent_as_basic_auth() -> None:
    from fakes.otlp_collector import FakeCollector

    from verdryx_core.addons.events.otlp import SpanExporter

    with FakeCollector() as collector:
        endpoint = collector.url.replace("http://", "http://otel:t0ps3cret@")
        exporter = SpanExporter(endpoint, timeout=5)
        assert "t0ps3cret" not in repr(exporter) and "t0ps3cret" not in exporter.url
        exporter.export("verdryx.test", "run-1", {"a": 1})
        assert exporter.wait()
        received = collector.received[0]
    assert received.path == "/v1/traces"
    assert received.authorization == "Basic " + base64.b64encode(b"otel:t0ps3cret").decode()


# -- 7. baseline --write-file -----------------------------------------------------------------


def test_write_file_into_a_missing_folder_is_refused_before_anything_is_saved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "s.db"
    with Store.open(db) as store:
        store.save_run(_run("r1", "stub", [1.0, 1.0], 0))
    missing = tmp_path / "no" / "such" / "tree"
    code, _, err = cli(
        capsys, "baseline", "r1", "--label", "v1", "--db", str(db), "--write-file", str(missing)
    )
    assert code == 2
    assert "does not exist" in one_line(err)
    assert not (tmp_path / "no").exists()
    with Store.open(db) as store:
        assert store.list_baselines() == []  # refused up front: no half-done save
    code, _out, _ = cli(
        capsys, "baseline", "r1", "--label", "v1", "--db", str(db), "--write-file", str(tmp_path)
    )
    assert code == 0 and (tmp_path / ".verdryx" / "baselines" / "v1.json").is_file()


def test_a_pytest_session_with_log_cli_info_never_prints_a_url_credential(
    pytester: pytest.Pytester, server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = server.api_key
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url.replace("http://", f"http://me:{secret}@"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    pytester.makefile(
        ".evalset.json",
        live=json.dumps(
            {
                "id": "live",
                "cases": [{"id": "q1", "prompt": "question", "expected": "echo: question"}],
            }
        ),
    )
    result = pytester.runpytest(
        "--no-verdryx-store", "--verdryx-model=claude-haiku-4-5", "--log-cli-level=INFO"
    )
    result.assert_outcomes(passed=1)
    text = result.stdout.str() + result.stderr.str()
    assert "HTTP Request: POST http://me:***@127.0.0.1" in text  # logged, and masked
    assert secret not in text


# -- 3b. the same class through the OpenAI-compatible adapter -------------------------------

OPENAI_GARBAGE = {
    name: OpenAIReply(status=reply.status, raw=reply.raw, content_type=reply.content_type)
    for name, reply in GARBAGE.items()
    if reply.raw is not None
} | {
    "empty object": OpenAIReply(body={}),
    "message not an object": OpenAIReply(body={"choices": [{"message": "hi"}]}),
    "content a number": OpenAIReply(
        body={"choices": [{"message": {"role": "assistant", "content": 5}}]}
    ),
    "usage is a string": OpenAIReply(body={**completion_body(text="x"), "usage": "lots"}),
    "negative tokens": OpenAIReply(
        body={**completion_body(text="x"), "usage": {"prompt_tokens": -3, "completion_tokens": 1}}
    ),
}


@pytest.mark.parametrize("name", sorted(OPENAI_GARBAGE))
def test_a_malformed_openai_answer_is_one_model_call_error_or_an_unmeasured_verdict(
    name: str,
) -> None:
    from verdryx_core.llm import make_adapter

    reply = OPENAI_GARBAGE[name]
    with FakeOpenAI() as fake:
        adapter = make_adapter("openai:gpt-4o-mini", env=fake.env(), max_retries=0)
        for call in ("complete", "tools"):
            fake.script(reply)
            with pytest.raises(ModelCallError) as caught:
                if call == "complete":
                    adapter.complete("hi")
                else:
                    adapter.complete_with_tools("hi", TOOLS)
            message = one_line(str(caught.value))
            assert f"HTTP {reply.status}" in message and "gpt-4o-mini" in message
        fake.script(reply)
        if reply.status >= 400:
            with pytest.raises(ModelCallError):
                adapter.judge("p", "o", "r")
        else:
            judgement = adapter.judge("p", "o", "r")
            assert judgement.score is None and "HTTP 200" in (judgement.unmeasured or "")


def test_an_agent_output_nested_100000_deep_scores_0_for_the_json_grader_not_a_crash() -> None:
    from verdryx_core.graders.json_output import json_score

    assert json_score("[" * 100_000) == (0.0, ["the output is not JSON"])
    assert json_score("[[1]]", expected="[[1]]") == (1.0, [])


def test_a_json_expectation_nested_100000_deep_is_refused_at_load(tmp_path: Path) -> None:
    path = tmp_path / "j.evalset.json"
    case = {"id": "a", "prompt": "p", "grader": "json", "expected": "[" * 100_000}
    path.write_text(json.dumps({"id": "s", "cases": [case]}), encoding="utf-8")
    with pytest.raises(EvalSetError, match="nested deeper than 100 levels") as caught:
        load_evalset(path)
    assert caught.value.field == "expected"


def test_a_judged_output_with_a_lone_surrogate_reaches_the_judge_as_u_fffd(
    server: FakeAnthropic,
) -> None:
    judgement = _adapter(server).judge("p", "half an emoji \ud83d", "r")
    assert judgement.score == 0.75
    assert "half an emoji \ufffd" in server.requests[-1].user_text


def test_a_malformed_judge_answer_is_not_cached_the_next_run_asks_again(
    server: FakeAnthropic, tmp_path: Path
) -> None:
    from verdryx_core.llm.cache import CachedAdapter

    with Store.open(tmp_path / "s.db") as store:
        judge = CachedAdapter(_adapter(server), store, "on")
        server.script(GARBAGE["html page"])
        assert judge.judge("p", "o", "r").score is None  # unmeasured this run
        judge.flush()
        again = CachedAdapter(_adapter(server), store, "on")
        assert again.judge("p", "o", "r").score == 0.75  # asked again, not replayed
    assert len(server.requests) == 2
