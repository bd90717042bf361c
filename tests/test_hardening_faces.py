"""The hardening classes through both faces: a pytest session (pytester) and `verdryx eval`.
A run is stored, not lost; the summary never claims what did not happen; a broken eval set
file is an error, never a silent skip, and leaves the run incomplete (never a baseline); a bad
label is refused before any paid call (docs/troubleshooting.md, "Reliability")."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fakes.anthropic_server import FakeAnthropic, RecordedRequest, Reply, error_reply, message_reply
from junitparser import JUnitXml
from plugin_support import exact_case, stored_runs, write_evalset

from verdryx_core.cli import main
from verdryx_core.store import Store

MODEL = "claude-haiku-4-5"


def _echo_cases(count: int) -> list[dict[str, object]]:
    return [
        {"id": f"q{i}", "prompt": f"question {i}", "expected": f"echo: question {i}"}
        for i in range(count)
    ]


@pytest.mark.usefixtures("anthropic_env")
def test_a_model_output_with_a_lone_surrogate_and_a_nul_is_stored_and_shown_escaped(
    pytester: pytest.Pytester, server: FakeAnthropic
) -> None:
    server.script(message_reply(text="half \ud83d emoji, a NUL \x00 and \x1b[2J"))
    write_evalset(pytester.path, "live", "live", _echo_cases(1))
    db = pytester.path / "s.db"
    xml = pytester.path / "j.xml"
    result = pytester.runpytest(
        f"--verdryx-db={db}", f"--verdryx-model={MODEL}", f"--junitxml={xml}"
    )
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "\x00" not in output and "\x1b[2J" not in output  # the failure report escapes them
    assert "\\x00" in output
    run = stored_runs(db)[0]
    assert run.scores[0].output == "half \ufffd emoji, a NUL \x00 and \x1b[2J"
    assert JUnitXml.fromfile(str(xml)).tests == 1  # JUnit is still well-formed XML


def test_after_a_failed_store_write_the_summary_claims_no_store_and_no_baseline_step(
    pytester: pytest.Pytester,
) -> None:
    db = pytester.path / "a-folder"
    db.mkdir()  # saving into a folder fails
    write_evalset(pytester.path, "agent", "agent", [exact_case("c0", "yes")])
    result = pytester.runpytest(f"--verdryx-db={db}")
    output = result.stdout.str()
    assert "ERROR: the run was not stored" in output
    assert not any(line.startswith("stored: ") for line in output.splitlines())
    assert "save this run as a baseline" not in output
    result.stdout.fnmatch_lines(["next: fix the store error above*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.parametrize("kind", ["dangling", "loop"])
def test_an_evalset_that_is_a_broken_symlink_is_a_collection_error(
    pytester: pytest.Pytester, kind: str
) -> None:
    write_evalset(pytester.path, "good", "good", [exact_case("c0", "yes")])
    link = pytester.path / "broken.evalset.json"
    os.symlink("missing.json" if kind == "dangling" else link.name, link)
    result = pytester.runpytest("--no-verdryx-store")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert result.parseoutcomes()["errors"] == 1
    expected = "which does not exist" if kind == "dangling" else "a symbolic link loop"
    result.stdout.fnmatch_lines([f"*broken.evalset.json: *{expected}*"])


@pytest.mark.parametrize("mode", [[], ["-n", "2"]], ids=["no-xdist", "xdist-2"])
def test_continue_on_collection_errors_stores_an_incomplete_run_and_no_baseline(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    write_evalset(pytester.path, "good", "good", [exact_case("c0", "yes")])
    (pytester.path / "bad.evalset.json").write_text('{"id": "bad", "cases": [')
    db = pytester.path / "s.db"
    result = pytester.runpytest(
        f"--verdryx-db={db}",
        "--continue-on-collection-errors",
        "--verdryx-save-baseline=v1",
        *mode,
    )
    outcomes = result.parseoutcomes()
    assert outcomes["passed"] == 1 and outcomes["errors"] == 1
    runs = stored_runs(db)
    assert len(runs) == 1 and runs[0].complete is False
    result.stdout.fnmatch_lines(["*baseline 'v1' NOT saved: the run is incomplete*bad.evalset*"])
    assert not (pytester.path / ".verdryx" / "baselines" / "v1.json").exists()
    with Store.open(db) as store:
        assert store.list_baselines() == []


@pytest.mark.usefixtures("anthropic_env")
def test_a_bad_save_baseline_label_is_refused_before_any_paid_call(
    pytester: pytest.Pytester, server: FakeAnthropic
) -> None:
    write_evalset(pytester.path, "live", "live", _echo_cases(3))
    result = pytester.runpytest(
        f"--verdryx-db={pytester.path / 's.db'}",
        f"--verdryx-model={MODEL}",
        "--verdryx-save-baseline=../../etc/v1",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "baseline label '../../etc/v1' is not usable" in result.stderr.str()
    assert server.requests == []


# -- verdryx eval --------------------------------------------------------------------------


def test_verdryx_eval_with_one_failing_call_stores_an_incomplete_run_and_pays_once(
    tmp_path: Path,
    server: FakeAnthropic,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)

    def respond(request: RecordedRequest) -> Reply:
        if request.user_text == "question 3":
            return error_reply(400, "invalid_request_error", "this one is refused")
        return message_reply(text=f"echo: {request.user_text}")

    server.responder = respond
    path = write_evalset(tmp_path, "live", "live", _echo_cases(10))
    db = tmp_path / "s.db"
    argv = ["eval", str(path), "--model", MODEL, "--db", str(db), "--json"]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 1
    document = json.loads(out)
    assert document["complete"] is False and document["cases"] == 9
    assert [line for line in err.splitlines() if line.startswith("error: ")] == [
        line for line in err.splitlines() if "live::q3" in line
    ]
    assert len(server.requests) == 10
    run = stored_runs(db)[0]
    assert run.complete is False and len(run.scores) == 9
    # The nine paid answers are in the cache: a re-run pays only for the one that failed.
    server.reset()
    server.responder = None
    assert main(argv) == 0
    capsys.readouterr()
    assert [request.user_text for request in server.requests] == ["question 3"]
    # An incomplete run is no baseline.
    assert main(["baseline", run.id, "--label", "v1", "--db", str(db)]) == 2
    assert "incomplete" in capsys.readouterr().err


def test_verdryx_eval_grades_the_valid_files_and_reports_the_invalid_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write_evalset(tmp_path, "good", "good", [exact_case("c0", "yes")])
    bad = tmp_path / "bad.evalset.json"
    bad.write_text('{"id": "bad", "cases": [' + "[" * 1000)
    db = tmp_path / "s.db"
    code = main(["eval", str(good), str(bad), "--model", "stub", "--db", str(db)])
    out, err = capsys.readouterr()
    assert code == 2
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "bad.evalset.json" in errors[0] and "not graded" in errors[0]
    assert "INCOMPLETE run: 1 eval set file(s) not graded" in out
    run = stored_runs(db)[0]
    assert run.complete is False and [score.key for score in run.scores] == ["good::c0"]
