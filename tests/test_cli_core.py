"""The `verdryx` CLI over the core: eval, baseline, drift, version, and
usage errors that are one `error:` line with exit 2, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from json_document_keys import DRIFT_KEYS, EVAL_KEYS, SCORE_KEYS

from verdryx_core import __version__
from verdryx_core.cli import main

ROOT = Path(__file__).resolve().parent.parent
SUPPORT = ROOT / "examples" / "support" / "support-agent.evalset.json"


#: docs/cli.md: the stable keys of `eval --json`.


@pytest.fixture(autouse=True)
def _hermetic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # No store or committed baseline of the developer's leaks in: cwd and env are the test's.
    monkeypatch.chdir(tmp_path)
    for name in ("VERDRYX_DB", "TAIPAN_HOME"):
        monkeypatch.delenv(name, raising=False)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


#: `verdryx eval` exits as pytest would: the support example has one case below its bar, which
#: fails the run without a baseline to excuse it (docs/cli.md, "Exit codes").
SUPPORT_EXIT = 1


def eval_json(
    capsys: pytest.CaptureFixture[str], evalset: Path, db: Path, *, exit_code: int | None = None
) -> dict[str, Any]:
    code, out, err = run_cli(
        capsys, "eval", str(evalset), "--model", "stub", "--db", str(db), "--json"
    )
    expected = exit_code if exit_code is not None else (SUPPORT_EXIT if evalset == SUPPORT else 0)
    assert code == expected, err
    return json.loads(out)  # exactly one JSON document: json.loads rejects trailing text


def assert_one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"expected one error line, got {err!r}"
    assert lines[0].startswith("error: ")
    return lines[0]


def worse_support_set(tmp_path: Path) -> Path:
    """The support set with the same ids, but recorded answers that miss every pattern."""
    data = json.loads(SUPPORT.read_text(encoding="utf-8"))
    for case in data["cases"]:
        if case["grader"] in ("regex", "exact"):
            case["output"] = "Sorry, I cannot help with that."
    path = tmp_path / "worse.evalset.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# -- eval ------------------------------------------------------------------------------------


def test_eval_json_has_the_stable_keys(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    document = eval_json(capsys, SUPPORT, db)
    assert document.keys() >= EVAL_KEYS
    assert document["eval_set_id"] == "support-agent"
    assert document["model"] == "stub"
    data = json.loads(SUPPORT.read_text(encoding="utf-8"))
    assert [s["case_id"] for s in document["scores"]] == [c["id"] for c in data["cases"]]
    for score in document["scores"]:
        assert score.keys() >= SCORE_KEYS
        assert 0.0 <= score["value"] <= 1.0
    # 13 of the 14 recorded cases pass their check; conv-1045 is abandoned (0.0), conv-1043
    # escalated (0.5): (12 * 1.0 + 0.5 + 0.0) / 14.
    assert document["mean_score"] == pytest.approx(12.5 / 14)
    assert document["cases"] == 14
    assert document["unmeasured"] == []
    assert document["total_tokens"] == 0 and document["total_cost_usd"] == 0.0
    assert db.is_file()


def test_eval_text_names_the_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run_cli(
        capsys, "eval", str(SUPPORT), "--model", "stub", "--db", str(tmp_path / "v.db")
    )
    assert code == SUPPORT_EXIT
    assert "conv-1045" in out and str(tmp_path / "v.db") in out


def test_eval_reports_unmeasured_cases_apart(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # A typed case without the verdict service is unmeasured: neither 0.0 nor in the mean.
    data = {
        "id": "mixed",
        "cases": [
            {"id": "ok", "prompt": "p", "expected": "yes", "output": "yes"},
            {"id": "no-service", "prompt": "p", "grader": "typed", "output": "yes"},
        ],
    }
    path = tmp_path / "mixed.evalset.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    document = eval_json(capsys, path, tmp_path / "v.db")
    assert document["mean_score"] == 1.0
    assert [s["case_id"] for s in document["scores"]] == ["ok"]
    assert [u["case_id"] for u in document["unmeasured"]] == ["no-service"]
    assert document["unmeasured"][0]["reason"]


def test_eval_with_nothing_measured_has_a_null_mean(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = {"id": "t", "cases": [{"id": "a", "prompt": "p", "grader": "typed", "output": "y"}]}
    path = tmp_path / "t.evalset.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    # Nothing measured is refused (exit 2), with or without a baseline: it says nothing.
    document = eval_json(capsys, path, tmp_path / "v.db", exit_code=2)
    assert document["mean_score"] is None and document["scores"] == []


def test_eval_with_the_stub_model(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = {"id": "live", "cases": [{"id": "echo", "prompt": "say it", "expected": "stub output"}]}
    path = tmp_path / "live.evalset.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    document = eval_json(capsys, path, tmp_path / "v.db")
    assert document["scores"][0]["value"] == 1.0


def test_eval_repeat_on_recorded_outputs_says_it_changes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run_cli(
        capsys, "eval", str(SUPPORT), "--db", str(tmp_path / "r.db"), "--repeat", "3"
    )
    assert code == SUPPORT_EXIT
    assert out.count("--repeat 3 changes nothing here: every case's output is recorded") == 1


def test_eval_repeat_on_a_live_model_samples_and_says_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = {"id": "live", "cases": [{"id": "echo", "prompt": "say it", "expected": "stub output"}]}
    path = tmp_path / "live.evalset.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    code, out, _ = run_cli(
        capsys, "eval", str(path), "--db", str(tmp_path / "r.db"), "--repeat", "3"
    )
    assert code == 0
    assert "changes nothing" not in out


# -- baseline, drift -------------------------------------------------------------------------


def test_baseline_then_drift_on_an_identical_run_is_on_track(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "v.db"
    first = eval_json(capsys, SUPPORT, db)
    code, out, err = run_cli(capsys, "baseline", first["run_id"], "--label", "v1", "--db", str(db))
    assert code == 0, err
    assert "v1" in out and first["run_id"] in out
    eval_json(capsys, SUPPORT, db)
    code, out, err = run_cli(capsys, "drift", "--baseline", "v1", "--db", str(db), "--json")
    assert code == 0, err
    document = json.loads(out)
    assert document.keys() >= DRIFT_KEYS
    assert document["verdict"] == "on-track"
    assert document["delta"] == 0.0
    assert document["n"] == document["baseline_n"] == 14


def test_drift_exits_1_after_scores_drop(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "v.db"
    first = eval_json(capsys, SUPPORT, db)
    assert (
        run_cli(capsys, "baseline", first["run_id"][:8], "--label", "v1", "--db", str(db))[0] == 0
    )
    worse = eval_json(capsys, worse_support_set(tmp_path), db, exit_code=1)
    assert worse["mean_score"] < first["mean_score"]
    code, out, err = run_cli(capsys, "drift", "--baseline", "v1", "--db", str(db), "--json")
    assert code == 1, err
    document = json.loads(out)
    assert document["verdict"] == "regressed"
    assert document["delta"] == pytest.approx(worse["mean_score"] - first["mean_score"])
    assert document["paired"] is not None and document["paired"]["n"] == 14
    assert document["paired"]["ci_high"] < 0
    # The cases pair, so the two-sample interval is drawn only when asked for
    # (docs/statistics.md, "What is computed"); asking changes no other number.
    assert document["ci_low"] is None and document["ci_high"] is None
    assert document["t_statistic"] < 0
    code, out, err = run_cli(
        capsys, "drift", "--baseline", "v1", "--db", str(db), "--json", "--two-sample-interval"
    )
    assert code == 1, err
    asked = json.loads(out)
    assert asked["ci_low"] <= asked["ci_high"] < 0
    assert {k: v for k, v in asked.items() if k not in ("ci_low", "ci_high")} == {
        k: v for k, v in document.items() if k not in ("ci_low", "ci_high")
    }


def test_baseline_of_an_unknown_run_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run_cli(
        capsys, "baseline", "nope", "--label", "v1", "--db", str(tmp_path / "v.db")
    )
    assert code == 2
    assert "'nope'" in assert_one_error_line(err)


def test_a_bad_label_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    first = eval_json(capsys, SUPPORT, db)
    code, _, err = run_cli(capsys, "baseline", first["run_id"], "--label", "../v1", "--db", str(db))
    assert code == 2
    assert "'../v1'" in assert_one_error_line(err)


def test_the_same_set_twice_is_refused_before_grading(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "v.db"
    code, out, err = run_cli(
        capsys, "eval", str(SUPPORT), str(SUPPORT), "--model", "stub", "--db", str(db), "--json"
    )
    assert code == 2 and out == ""
    assert "more than once" in assert_one_error_line(err)
    assert not db.exists()


def test_an_unknown_baseline_lists_the_known_labels(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "v.db"
    first = eval_json(capsys, SUPPORT, db)
    for label in ("v1", "v2"):
        run_cli(capsys, "baseline", first["run_id"], "--label", label, "--db", str(db))
    code, out, err = run_cli(
        capsys, "drift", "--baseline", "v9", "--db", str(db), "--root", str(tmp_path)
    )
    assert code == 2 and out == ""
    assert assert_one_error_line(err) == "error: unknown baseline 'v9'; known baselines: v1, v2"


# -- usage errors and bad input --------------------------------------------------------------


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "version")
    assert code == 0 and out.strip() == __version__


def test_a_bad_eval_set_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "bad.evalset.json"
    path.write_text(json.dumps({"id": "s", "cases": [{"id": "a", "expected": "x"}]}))
    code, out, err = run_cli(
        capsys, "eval", str(path), "--model", "stub", "--db", str(tmp_path / "v.db")
    )
    assert code == 2 and out == ""
    line = assert_one_error_line(err)
    assert str(path) in line and "'a' (#1)" in line and "field 'prompt'" in line
    assert not (tmp_path / "v.db").exists()  # nothing is stored for a set that did not load


def test_a_store_in_a_missing_directory_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "missing" / "v.db"
    code, _, err = run_cli(capsys, "eval", str(SUPPORT), "--model", "stub", "--db", str(db))
    assert code == 2
    assert "does not exist" in assert_one_error_line(err)
    assert list(tmp_path.iterdir()) == []


def test_a_store_that_is_not_sqlite_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "notes.txt"
    db.write_text("not a database at all, just some notes\n" * 10)
    code, _, err = run_cli(capsys, "eval", str(SUPPORT), "--model", "stub", "--db", str(db))
    assert code == 2
    assert "not a verdryx store" in assert_one_error_line(err)


@pytest.mark.parametrize(
    "argv",
    [
        ["eval"],  # no eval set
        ["baseline", "r1"],  # --label missing
        ["no-such-command"],
        ["drift", "--baseline", "v1", "--window", "many"],
    ],
)
def test_argparse_usage_errors_exit_2_without_a_traceback(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "error:" in err


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys)
    assert code == 2 and "COMMAND" in out


def test_the_console_script_prints_one_error_line(tmp_path: Path) -> None:
    # The one real process: the installed entry point's `python -m` twin, stderr as a user
    # sees it.
    db = tmp_path / "v.db"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "verdryx_core.cli",
            "baseline",
            "nope",
            "--label",
            "v1",
            "--db",
            str(db),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert assert_one_error_line(result.stderr).startswith("error: no such eval run: 'nope'")
