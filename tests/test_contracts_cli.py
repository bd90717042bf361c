"""The surfaces. `verdryx verify` exit codes (0 PASS, 1 FAIL, 2 FLAG, 3 error), its
JSON, storing verdicts per agent, the `contract` grader, and the worked example."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from verdryx_core.addons.contracts import ContractError
from verdryx_core.addons.contracts.grader import ContractGrader
from verdryx_core.addons.contracts.history import verdict_rows, verdicts
from verdryx_core.cases import EvalCase
from verdryx_core.cli import main
from verdryx_core.evalsets.load import load_evalset
from verdryx_core.evaluation import decided
from verdryx_core.evaluation.saving import save_run
from verdryx_core.graders import GradeContext, build_graders
from verdryx_core.runs import EvalRun
from verdryx_core.store import Store

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "contracts"
VERDRYX = Path(sys.executable).parent / "verdryx"


def write_contract(path: Path, *criteria: dict[str, Any], **top: Any) -> Path:
    payload = {"task_id": "task-1", "agent_id": "agent-a", "success_criteria": list(criteria)}
    path.write_text(json.dumps({**payload, **top}), encoding="utf-8")
    return path


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "report.md").write_text("## Summary\nfine\n", encoding="utf-8")
    return workspace


EXISTS = {"id": "report", "type": "file_exists", "path": "report.md"}
MISSING = {"id": "notes", "type": "file_exists", "path": "notes.md"}
BINARY_REGEX = {"id": "blob", "type": "file_contains", "path": "blob.bin", "pattern": "x"}


@pytest.mark.parametrize(
    ("criteria", "top", "code", "word"),
    [
        ([EXISTS], {}, 0, "PASS"),
        ([EXISTS, MISSING], {}, 1, "FAIL"),
        ([EXISTS, BINARY_REGEX], {}, 2, "FLAG"),
        ([EXISTS], {"unverifiable_claims": ["emailed the team"]}, 2, "FLAG"),
        ([], {}, 2, "FLAG"),
    ],
    ids=["pass", "fail", "flag-error", "flag-claim", "flag-nothing"],
)
def test_exit_codes_follow_the_verdict(
    ws: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    criteria: list[dict[str, Any]],
    top: dict[str, Any],
    code: int,
    word: str,
) -> None:
    (ws / "blob.bin").write_bytes(b"\xff\xfe x")
    contract = write_contract(tmp_path / "c.json", *criteria, **top)
    assert main(["verify", str(contract), "--base-path", str(ws)]) == code
    out = capsys.readouterr().out
    assert out.startswith(f"{word}  task task-1 (agent agent-a): ")


def test_text_output_hides_passes_unless_verbose(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    contract = write_contract(tmp_path / "c.json", EXISTS, MISSING)
    main(["verify", str(contract), "--base-path", str(ws)])
    quiet = capsys.readouterr().out
    assert "  fail   notes  file_exists: notes.md does not exist\n" in quiet
    assert "report.md is a file" not in quiet
    assert "(1 passed; -v lists them)" in quiet
    main(["verify", str(contract), "--base-path", str(ws), "-v"])
    loud = capsys.readouterr().out
    assert "pass   report  file_exists: report.md is a file (16 bytes)" in loud
    assert loud.index("fail ") < loud.index("pass ")


def test_json_output(ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract = write_contract(
        tmp_path / "c.json", EXISTS, MISSING, unverifiable_claims=["it was reviewed"]
    )
    assert main(["verify", str(contract), "--base-path", str(ws), "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["verdict"] == "FAIL"
    assert document["reason"].startswith("FAIL: 1 of 2 checks failed")
    assert document["unverifiable_claims"] == ["it was reviewed"]
    assert [(r["check_id"], r["type"], r["status"]) for r in document["check_results"]] == [
        ("report", "file_exists", "pass"),
        ("notes", "file_exists", "fail"),
    ]
    assert document["check_results"][1]["evidence"] == "notes.md does not exist"
    assert len(document["bundle_hash"]) == 64


def test_bundle_out_then_bundle(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    contract = write_contract(tmp_path / "c.json", EXISTS)
    bundle = tmp_path / "evidence.json"
    assert main(["verify", str(contract), "--base-path", str(ws), "--bundle-out", str(bundle)]) == 0
    assert f"evidence bundle written to {bundle}" in capsys.readouterr().out
    # The workspace can go: the bundle alone answers.
    shutil.rmtree(ws)
    assert main(["verify", str(contract), "--bundle", str(bundle), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["bundle_hash"] == json.loads(bundle.read_text())["bundle_hash"]
    # A recorded size is covered by the bundle hash: editing it is FAIL.
    data = json.loads(bundle.read_text())
    data["artifacts"][0]["size"] = 17
    bundle.write_text(json.dumps(data))
    assert main(["verify", str(contract), "--bundle", str(bundle)]) == 1
    assert "tampered  bundle_hash: recorded" in capsys.readouterr().out


def test_a_tampered_artifact_is_named_on_the_command_line(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    contract = write_contract(
        tmp_path / "c.json",
        {"id": "s", "type": "file_contains", "path": "report.md", "pattern": "fine"},
    )
    bundle = tmp_path / "evidence.json"
    main(["verify", str(contract), "--base-path", str(ws), "--bundle-out", str(bundle)])
    text = bundle.read_text().replace("fine", "fino")
    bundle.write_text(text)
    capsys.readouterr()
    assert main(["verify", str(contract), "--bundle", str(bundle)]) == 1
    out = capsys.readouterr().out
    assert "artifact 'report.md': content sha256 mismatch" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["verify", "{missing}", "--base-path", "{ws}"], "cannot read the contract"),
        (["verify", "{bad}", "--base-path", "{ws}"], "criterion 'x' (#1): field 'pattern'"),
        (["verify", "{good}", "--base-path", "{ws}/nope"], "base path"),
        (["verify", "{good}", "--bundle", "{good}"], "not a verdryx evidence bundle"),
        (["verify", "{good}", "--bundle", "{missing}"], "cannot read the evidence bundle"),
        (
            ["verify", "{good}", "--bundle", "{good}", "--bundle-out", "{ws}/b.json"],
            "--bundle-out writes a new bundle",
        ),
        (
            ["verify", "{good}", "--base-path", "{ws}", "--bundle-out", "{ws}/no/dir/b.json"],
            "cannot write the evidence bundle",
        ),
        (["verify", "{good}", "--base-path", "{ws}", "--db", "{ws}/no/dir/v.db"], "does not exist"),
    ],
    ids=[
        "no-contract",
        "bad-contract",
        "no-base",
        "not-a-bundle",
        "no-bundle",
        "both",
        "unwritable-bundle",
        "bad-store",
    ],
)
def test_usage_and_io_errors_exit_3_with_one_line(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    good = write_contract(tmp_path / "good.json", EXISTS)
    bad = write_contract(
        tmp_path / "bad.json", {"id": "x", "type": "file_contains", "path": "a", "pattern": "("}
    )
    names = {"missing": tmp_path / "missing.json", "bad": bad, "good": good, "ws": ws}
    assert main([part.format(**names) for part in argv]) == 3
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: ")
    assert message in lines[0]
    assert "Traceback" not in captured.err


@pytest.mark.parametrize(
    "argv",
    [
        ["verify", "c.json"],
        ["verify", "c.json", "--base-path", ".", "--bundle", "b.json"],
        ["verify", "--base-path", "."],
    ],
    ids=["neither", "both", "no-contract"],
)
def test_argparse_usage_errors_exit_3_not_flag(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 2 means FLAG here, so a usage error must not exit 2 (3 usage error)."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 3
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1  # one line, no usage block
    assert "verdryx verify --help" in err


def test_verdicts_are_stored_per_agent(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "verdryx.db"
    passing = write_contract(tmp_path / "p.json", EXISTS)
    failing = write_contract(tmp_path / "f.json", MISSING)
    assert main(["verify", str(passing), "--base-path", str(ws), "--db", str(db)]) == 0
    assert f"verdict saved to {db} (agent agent-a)" in capsys.readouterr().out
    assert main(["verify", str(failing), "--base-path", str(ws), "--db", str(db)]) == 1
    assert (
        main(
            [
                "verify",
                str(passing),
                "--base-path",
                str(ws),
                "--db",
                str(db),
                "--agent-id",
                "agent-b",
            ]
        )
        == 0
    )
    with Store.open(db) as store:
        mine = verdicts(store, "agent-a")
        theirs = verdicts(store, "agent-b")
    assert [row["verdict"] for row in mine] == ["FAIL", "PASS"]  # newest first
    assert mine[0]["reason"].startswith("FAIL: 1 of 1 check failed")
    assert all(row["task_id"] == "task-1" and len(row["bundle_hash"]) == 64 for row in mine)
    assert [row["verdict"] for row in theirs] == ["PASS"]


def test_store_flag_uses_the_default_store(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "env.db"
    monkeypatch.setenv("VERDRYX_DB", str(db))
    contract = write_contract(tmp_path / "c.json", EXISTS)
    assert main(["verify", str(contract), "--base-path", str(ws), "--store", "--json"]) == 0
    with Store.open(db) as store:
        assert [row["verdict"] for row in verdicts(store, "agent-a")] == ["PASS"]


def test_no_store_flag_writes_no_store(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VERDRYX_DB", str(tmp_path / "env.db"))
    contract = write_contract(tmp_path / "c.json", EXISTS)
    assert main(["verify", str(contract), "--base-path", str(ws)]) == 0
    assert not (tmp_path / "env.db").exists()
    assert not (tmp_path / "verdryx.db").exists()


# -- the worked example, through the real console script -------------------------------------


def test_the_example_passes_through_the_console_script(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = tmp_path / "evidence.json"
    contract = EXAMPLE / "weekly-report.contract.json"
    # One real process: the installed entry point, argv parsing and the exit status.
    run = subprocess.run(
        [
            str(VERDRYX),
            "verify",
            str(contract),
            "--base-path",
            str(EXAMPLE / "workspace"),
            "--bundle-out",
            str(bundle),
            "-v",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("PASS  task weekly-report-w32 (agent report-writer)")
    assert run.stdout.count("\n  pass ") == 9
    assert main(["verify", str(contract), "--bundle", str(bundle), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "PASS"


def test_the_example_fails_once_the_scope_guard_trips(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = tmp_path / "workspace"
    shutil.copytree(EXAMPLE / "workspace", workspace)
    (workspace / ".env").write_text("API_KEY=leaked\n")
    contract = EXAMPLE / "weekly-report.contract.json"
    assert main(["verify", str(contract), "--base-path", str(workspace)]) == 1
    assert "no-credentials-left  path_absent: .env is a file" in capsys.readouterr().out


# -- the contract grader ---------------------------------------------------------------------


def grade(case: EvalCase, evalset: Path, grader: ContractGrader | None = None) -> Any:
    grader = grader or ContractGrader()
    return grader.grade(
        case, case.output, GradeContext(eval_set_id="set", eval_set_path=evalset, run_id="run-1")
    )


def case(contract: dict[str, Any], output: str | None = None, case_id: str = "c1") -> EvalCase:
    return EvalCase(id=case_id, prompt="p", grader="contract", contract=contract, output=output)


def test_the_grader_plugs_in_by_its_entry_point() -> None:
    """No configuration: any run's table finds it, held to the rules every grader is."""
    graders = build_graders()
    assert graders.has("contract")
    assert isinstance(graders["contract"].grader, ContractGrader)  # type: ignore[attr-defined]
    assert not graders.has("llm_judge")  # still nothing paid by default
    # Its cases read their output from the workspace, never from the model.
    assert not case({"success_criteria": [EXISTS]}).needs_model


def test_grader_pass_fail_flag(ws: Path, tmp_path: Path) -> None:
    evalset = tmp_path / "x.evalset.json"  # need not exist: only its directory matters
    passing = grade(case({"success_criteria": [EXISTS]}, output="ws"), evalset)
    assert passing.value == 1.0
    assert passing.reason.startswith("PASS: all 1 check passed")
    failing = grade(case({"success_criteria": [EXISTS, MISSING]}, output="ws"), evalset)
    assert failing.value == 0.0
    assert failing.reason.startswith("FAIL: 1 of 2 checks failed")
    assert "notes.md does not exist" in failing.reason
    flagged = grade(
        case({"success_criteria": [EXISTS], "unverifiable_claims": ["emailed"]}, output="ws"),
        evalset,
    )
    assert flagged.value is None
    assert flagged.unmeasured.startswith("FLAG: no check failed, but 1 claim cannot be verified")


def test_grader_base_path_defaults_to_the_eval_set_directory(ws: Path) -> None:
    result = grade(case({"success_criteria": [EXISTS]}), ws / "set.evalset.json")
    assert result.value == 1.0


def test_grader_missing_workspace_is_a_flag_the_output_caused_so_zero(tmp_path: Path) -> None:
    # The output names a folder that is not there: the contract's verdict is FLAG, and the
    # agent caused it, so the case scores 0, never unmeasured (docs/outcomes.md).
    result = grade(case({"success_criteria": [EXISTS]}, output="gone"), tmp_path / "s.json")
    assert result.value == 0.0 and result.unmeasured is None
    assert result.failed_by_output is not None
    assert result.failed_by_output.startswith("FLAG: base path")


def test_grader_records_verdicts_with_the_case_id_as_task_id(ws: Path, tmp_path: Path) -> None:
    """The grade keeps the contract's own ids (`notes`); once the run is stored, the add-on
    writes one verdict row per case in its table (`after_save`)."""
    cases = [
        case({"agent_id": "bot", "success_criteria": [EXISTS]}, "ws", "case-7"),
        case({"task_id": "own", "success_criteria": [MISSING]}, "ws"),
    ]
    grades = [grade(item, tmp_path / "s.json") for item in cases]
    assert [g.notes for g in grades] == [{"agent_id": "bot"}, {"task_id": "own"}]
    scores = tuple(
        replace(
            decided(
                item,
                eval_set_id="set",
                min_score=None,
                value=g.value,
                unmeasured=g.unmeasured,
                grader="contract",
                reason=g.reason,
            ),
            notes=g.notes,
        )
        for item, g in zip(cases, grades, strict=True)
    )
    run = EvalRun(id="run-1", model="stub", started_at=datetime.now(UTC), scores=scores)
    assert [
        (r["agent_id"], r["task_id"], r["verdict"], r["run_id"]) for r in verdict_rows(run)
    ] == [
        ("bot", "case-7", "PASS", "run-1"),
        (None, "own", "FAIL", "run-1"),
    ]
    with Store.open(tmp_path / "v.db") as store:
        save_run(store, run, cache_entries=[])
        assert verdicts(store, "bot")[0]["task_id"] == "case-7"
        assert [row["task_id"] for row in verdicts(store)] == ["own", "case-7"]


def test_grader_contract_errors_name_the_case_criterion_and_field(tmp_path: Path) -> None:
    bad = case({"success_criteria": [{"id": "r", "type": "file_contains", "path": "a"}]})
    with pytest.raises(ContractError) as info:
        grade(bad, tmp_path / "s.evalset.json")
    message = str(info.value)
    assert "case 'c1'" in message
    assert "criterion 'r' (#1): field 'pattern'" in message
    escaping = case({"success_criteria": [{"id": "up", "type": "file_exists", "path": "../x"}]})
    with pytest.raises(ContractError, match="field 'path'"):
        grade(escaping, tmp_path / "s.evalset.json")


def test_the_example_eval_set_grades_through_the_grader() -> None:
    evalset = load_evalset(EXAMPLE / "contracts.evalset.json")
    (example,) = evalset.cases
    assert example.grader == "contract"
    result = build_graders()["contract"].grade(
        example, example.output, GradeContext(eval_set_id=evalset.id, eval_set_path=evalset.path)
    )
    assert result.value == 1.0, result.reason


def test_an_unknown_flag_is_exit_3_not_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "c.json", "--base-path", ".", "--bogus"]) == 3
    err = capsys.readouterr().err
    assert err == "error: unrecognized arguments: --bogus (see `verdryx verify --help`)\n"
