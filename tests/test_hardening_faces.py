"""The hardening classes through both faces: a pytest session (pytester) and `verdryx eval`.
A run is stored, not lost; the summary never claims what did not happen; a broken eval set
file is an error, never a silent skip, and leaves the run incomplete (never a baseline); a bad
label is refused before any paid call (docs/troubleshooting.md, "Reliability")."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.anthropic_server import FakeAnthropic, RecordedRequest, Reply, error_reply, message_reply
from fuzz_support import assert_no_ci_command
from junitparser import JUnitXml
from plugin_support import exact_case, stored_runs, write_evalset

from verdryx_core.cases import EvalCase
from verdryx_core.cli import main
from verdryx_core.graders import Grade, GradeContext, register_grader, unregister_grader
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


# The xdist variant runs in the slow step (README.md): a collection error under xdist making the
# run incomplete is test_plugin_activation.py's, in the default step; what an incomplete run
# does to the baseline is decided on the controller as without xdist.
@pytest.mark.parametrize(
    "mode",
    [
        pytest.param([], id="no-xdist"),
        pytest.param(["-n", "2"], id="xdist-2", marks=pytest.mark.slow),
    ],
)
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


# -- text aimed at the terminal or the CI log ------------------------------------------------


class _Verbatim:
    """A custom grader that scores 0 and hands back, as its reason (or as why it could not
    measure), whatever the case's options say: a grader quoting an agent, as judges do."""

    def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Grade:
        options = case.options.get("options") or {}
        if "unmeasured" in options:
            return Grade.unmeasured_because(str(options["unmeasured"]))
        return Grade(value=0.0, reason=str(options.get("reason", "")))


@pytest.fixture
def verbatim_grader() -> Iterator[str]:
    register_grader("verbatim", _Verbatim())
    yield "verbatim"
    unregister_grader("verbatim")


PLANTED = "refund denied\n::notice file=setup.cfg,line=4::PLANTED\n  ::add-path::/tmp/x\n##[group]h"


def _ci_cases() -> list[dict[str, Any]]:
    return [
        # Graded by a non-exact grader: the output is printed as it is, line by line.
        {"id": "contains", "prompt": "p", "grader": "contains", "expected": "approved",
         "output": PLANTED},
        # Separators other than "\n": Python's splitlines() breaks lines at them.
        {"id": "separators", "prompt": "p", "grader": "regex", "expected": "^ok\u2029::x",
         "output": "fine\u2028::warning::PLANTED\x85::add-mask::s3cret\x1b[1A\u202e"},
        {"id": "reason", "prompt": "p", "grader": "verbatim",
         "options": {"reason": "looks right\n::debug::PLANTED\x1b]8;;http://x\x07"},
         "output": "o"},
        {"id": "unmeasured", "prompt": "p", "grader": "verbatim",
         "options": {"unmeasured": "judge down\r\n::warning::PLANTED\u2066"}, "output": "o"},
    ]  # fmt: skip


@pytest.mark.usefixtures("verbatim_grader")
@pytest.mark.parametrize("github", [True, False], ids=["GITHUB_ACTIONS", "no-ci"])
def test_outputs_reasons_and_expected_values_cannot_issue_ci_commands(
    pytester: pytest.Pytester,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    github: bool,
) -> None:
    summary = pytester.path / "summary.md"
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE"):
        monkeypatch.delenv(name, raising=False)
    if github:
        monkeypatch.setenv("GITHUB_ACTIONS", "true")
        monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    write_evalset(pytester.path, "agent", "agent", _ci_cases())
    xml = pytester.path / "j.xml"
    capsys.readouterr()
    # inline_run: the session writes to this test's captured stdout, byte for byte (a
    # RunResult's lines are already split by splitlines(), which hides a raw U+2028).
    recorder = pytester.inline_run("--no-verdryx-store", "-ra", f"--junitxml={xml}")
    out = capsys.readouterr().out
    passed, skipped, failed = recorder.countoutcomes()
    assert (passed, skipped, failed) == (0, 1, 3), out
    own = assert_no_ci_command(out)
    assert len(own) == (3 if github else 0), out
    # Each further line of an output or a reason is indented under its label, and the
    # command it would have been is defused (the runner trims indentation).
    assert "output: refund denied\n    \\x3a:notice file=setup.cfg,line=4::PLANTED\n" in out
    assert "\n      \\x3a:add-path::/tmp/x\n    \\x23#[group]h\n" in out
    assert "fine\\u2028::warning::PLANTED\\x85::add-mask::s3cret\\x1b[1A\\u202e" in out
    assert "reason: looks right\n    \\x3a:debug::PLANTED\\x1b]8;;http://x\\x07" in out
    assert "agent::unmeasured: judge down\\r\\n::warning::PLANTED\\u2066" in out  # the summary
    if github:
        assert all("%0A    \\x3a:notice" in line for line in own if "contains" in line)
        assert_no_ci_command(summary.read_text(encoding="utf-8"), where="job summary")
    cases = [case for suite in JUnitXml.fromfile(str(xml)) for case in suite]
    messages = [case.result[0].message or "" for case in cases if case.result]
    assert len(messages) == 4
    for message in messages:
        assert_no_ci_command(message, where="JUnit")


def test_a_custom_case_id_with_a_format_character_is_refused(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_custom="""
        import pytest

        @pytest.mark.verdryx(case_id="refund\\u2067v2", grader="exact", expected="yes")
        def test_refund(verdryx):
            verdryx.grade("yes")

        @pytest.mark.verdryx(case_id="fine", grader="exact", expected="yes")
        def test_fine(verdryx):
            verdryx.grade("yes")
        """
    )
    result = pytester.runpytest("--no-verdryx-store")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*test_custom.py::test_refund: @pytest.mark.verdryx(case_id=...): "
            "'refund\\u2067v2' holds the control or format character '\\u2067'*"
        ]
    )
    assert "\u2067" not in result.stdout.str()


@pytest.mark.usefixtures("verbatim_grader")
def test_the_cli_text_output_cannot_issue_ci_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    path = write_evalset(tmp_path, "agent", "agent", _ci_cases())
    db = tmp_path / "s.db"

    def text_of(*argv: str) -> str:
        main(list(argv))
        out, err = capsys.readouterr()
        assert assert_no_ci_command(out) == [] and assert_no_ci_command(err, where="stderr") == []
        return out

    eval_text = text_of("eval", str(path), "--db", str(db))
    text_of("eval", str(path), "--db", str(db), "--repeat", "2")
    with Store.open(db) as store:
        second, first = (summary.id for summary in store.list_runs())
    show_text = text_of("show", first, "--db", str(db))
    text_of("show", first, "--db", str(db), "--sort", "score")
    text_of("runs", "--db", str(db))
    text_of("diff", first, second, "--db", str(db))
    assert "agent::unmeasured: judge down\\r\\n::warning::PLANTED\\u2066" in eval_text
    # One row per case: a note is a reason's first line, an unmeasured reason escaped whole.
    assert "  looks right\n" in show_text and "PLANTED\\x1b]8" not in show_text
    assert "  judge down\\r\\n::warning::PLANTED\\u2066\n" in show_text
    main(["show", first, "--db", str(db), "--json"])
    document = json.loads(capsys.readouterr().out)
    outputs_by_case = {score["case_id"]: score["output"] for score in document["scores"]}
    assert outputs_by_case["contains"] == PLANTED  # JSON keeps the value, escaped as JSON
