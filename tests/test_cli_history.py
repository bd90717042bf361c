"""Run history in the CLI: `runs`, `show`, `diff` and `report`, through
`verdryx_core.cli.main` over a real store; text for people, one JSON document for machines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from json_document_keys import EVAL_KEYS, RUNS_KEYS, SCORE_KEYS

from tests.history_support import GOOD, history_store, make_run
from verdryx_core.addons.contracts.history import save_verdicts
from verdryx_core.cli import main
from verdryx_core.gating.comparison import compare_to_baseline
from verdryx_core.runs import Baseline
from verdryx_core.store import Store

#: docs/cli.md, `runs`: the stable keys, plus the verdict.
RUN_KEYS = RUNS_KEYS | {"verdict"}


@pytest.fixture(autouse=True)
def _hermetic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("VERDRYX_DB", "TAIPAN_HOME"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return history_store(tmp_path / "verdryx.db")[0]


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code, out, err = cli(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)  # exactly one document: trailing text would be rejected


# -- runs -----------------------------------------------------------------------------------


def test_runs_json_lists_newest_first_with_verdicts(
    capsys: pytest.CaptureFixture[str], db: Path
) -> None:
    document = cli_json(capsys, "runs", "--db", str(db))
    runs = document["runs"]
    assert [run["run_id"] for run in runs] == [
        "c5555555-run",
        "b4444444-run",
        "b3333333-run",
        "a2222222-run",
        "a1111111-run",
    ]
    for run in runs:
        assert set(run) >= RUN_KEYS
        assert run["eval_set_ids"] == ["support"] and run["model"] == "stub"
        assert run["cases"] == 12 and run["complete"] is True
    assert runs[0]["mean_score"] == pytest.approx(8.25 / 12)
    assert [run["verdict"] for run in runs] == [
        "regressed",
        "on-track",
        "on-track",
        "on-track",
        "on-track",
    ]
    assert document["baseline"] == {"id": "base-1", "label": "v1", "mean": 1.0}
    assert runs[0]["started_at"].startswith("2026-03-05T09:00:00")


def test_runs_verdicts_are_those_of_the_gate(capsys: pytest.CaptureFixture[str], db: Path) -> None:
    document = cli_json(capsys, "runs", "--db", str(db))
    with Store.open(db) as store:
        baseline = store.get_baseline("v1")
        assert baseline is not None
        for row in document["runs"]:
            run = store.load_run(row["run_id"])
            assert run is not None
            report = compare_to_baseline([run], baseline).stats
            assert report is not None and row["verdict"] == report.verdict


def test_runs_text_is_a_table(capsys: pytest.CaptureFixture[str], db: Path) -> None:
    code, out, _ = cli(capsys, "runs", "--db", str(db), "--limit", "2")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == [
        "ID",
        "WHEN",
        "(UTC)",
        "EVAL",
        "SETS",
        "MODEL",
        "CASES",
        "MEAN",
        "VERDICT",
        "SOURCE",  # label, branch@commit, partial: empty for these runs
    ]
    assert lines[1].split() == [
        "c5555555",
        "2026-03-05",
        "09:00",
        "support",
        "stub",
        "12",
        "0.688",
        "REGRESSED",
    ]
    # A small drop the test cannot tell from chance is on track, and said to be inconclusive.
    assert lines[2].split()[0] == "b4444444"
    assert lines[2].endswith("on-track (inconclusive drop)")
    assert len([line for line in lines if line.startswith(("a", "b", "c"))]) == 2  # --limit 2
    assert "verdicts against baseline v1" in out


def test_runs_against_a_named_baseline_and_other_models(
    capsys: pytest.CaptureFixture[str], db: Path
) -> None:
    with Store.open(db) as store:
        late = store.load_run("c5555555-run")
        assert late is not None
        store.save_baseline(Baseline.from_run(late, id="base-2", label="v2"))
        store.save_run(make_run("d6666666-run", GOOD, day=5, model="other"))
        store.save_run(make_run("e7777777-run", GOOD, day=6, complete=False))
    runs = cli_json(capsys, "runs", "--db", str(db))["runs"]
    by_id = {run["run_id"]: run for run in runs}
    # Default: the newest baseline (v2, the regressed run): the good runs are now above it.
    assert by_id["a1111111-run"]["verdict"] == "on-track"
    assert by_id["d6666666-run"]["verdict"] is None
    assert "other model" in by_id["d6666666-run"]["verdict_note"]
    assert by_id["e7777777-run"]["verdict"] is None
    assert by_id["e7777777-run"]["complete"] is False
    named = cli_json(capsys, "runs", "--db", str(db), "--baseline", "v1")["runs"]
    assert {run["run_id"]: run["verdict"] for run in named}["c5555555-run"] == "regressed"


def test_runs_of_an_agent_with_its_contract_verdicts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "agents.db"
    with Store.open(db) as store:
        store.save_run(make_run("r-ops-1", GOOD, day=0, agent_id="ops-bot"))
        store.save_run(make_run("r-other", GOOD, day=1, agent_id="sales-bot"))
        save_verdicts(
            store,
            [
                {
                    "agent_id": "ops-bot",
                    "task_id": "weekly-report",
                    "verdict": "FAIL",
                    "reason": "report.md is missing",
                    "run_id": "r-ops-1",
                    "created_at": "2026-03-01T10:00:00+00:00",
                },
                {
                    "agent_id": "sales-bot",
                    "task_id": "quote",
                    "verdict": "PASS",
                    "reason": "all checks passed",
                },
            ],
        )
    document = cli_json(capsys, "runs", "--db", str(db), "--agent", "ops-bot")
    assert [run["run_id"] for run in document["runs"]] == ["r-ops-1"]
    assert [item["task_id"] for item in document["contract_verdicts"]] == ["weekly-report"]
    assert document["contract_verdicts"][0]["verdict"] == "FAIL"
    code, out, _ = cli(capsys, "runs", "--db", str(db), "--agent", "ops-bot")
    assert code == 0
    assert "contract verdicts of agent ops-bot" in out
    assert "weekly-report" in out and "report.md is missing" in out and "quote" not in out
    assert "no baseline stored" in out


def test_runs_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str], db: Path) -> None:
    code, out, err = cli(capsys, "runs", "--db", str(db), "--baseline", "nope")
    assert code == 2 and out == ""
    assert err.startswith("error: unknown baseline 'nope'") and "v1" in err
    assert len(err.strip().splitlines()) == 1
    code, _, err = cli(capsys, "runs", "--db", str(db), "--limit", "0")
    assert code == 2 and "--limit 0" in err


def test_runs_of_an_empty_store(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    Store.open(tmp_path / "empty.db").close()
    code, out, _ = cli(capsys, "runs", "--db", str(tmp_path / "empty.db"))
    assert code == 0 and "no runs stored in" in out
    assert cli_json(capsys, "runs", "--db", str(tmp_path / "empty.db")) == {
        "runs": [],
        "baseline": None,
    }


# -- show -----------------------------------------------------------------------------------


def test_show_json_has_the_eval_shape_and_every_case(
    capsys: pytest.CaptureFixture[str], db: Path
) -> None:
    document = cli_json(capsys, "show", "c5555", "--db", str(db))
    assert set(document) >= EVAL_KEYS
    assert document["run_id"] == "c5555555-run"
    assert document["cases"] == 12 and len(document["scores"]) == 12
    assert document["mean_score"] == pytest.approx(8.25 / 12)
    for score in document["scores"]:
        assert set(score) >= SCORE_KEYS
    values = {score["case_id"]: score["value"] for score in document["scores"]}
    assert values["case-01"] == 0.0 and values["case-07"] == 0.25 and values["case-00"] == 1.0
    # cost_usd is model plus judge spend, as in `eval --json`: 0.02 + 0.004 per case.
    assert document["scores"][0]["cost_usd"] == pytest.approx(0.024)
    assert document["total_cost_usd"] == pytest.approx(12 * 0.024)


def test_show_sorted_by_score_puts_unmeasured_then_lowest_first(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "v.db"
    with Store.open(db) as store:
        store.save_run(make_run("r1", {"hi": 1.0, "lo": 0.0, "mid": 0.5, "gone": None}, day=0))
    code, out, _ = cli(capsys, "show", "r1", "--db", str(db), "--sort", "score")
    assert code == 0
    order = [out.index(f" {case} ") for case in ("gone", "lo", "mid", "hi")]
    assert order == sorted(order)
    assert "the judge answered 'maybe'" in out
    document = cli_json(capsys, "show", "r1", "--db", str(db))
    assert document["unmeasured"] == [
        {
            "case_id": "gone",
            "eval_set_id": "support",
            "reason": "the judge answered 'maybe', not a number",
        }
    ]


def test_show_unknown_and_ambiguous_ids(capsys: pytest.CaptureFixture[str], db: Path) -> None:
    code, _, err = cli(capsys, "show", "zzz", "--db", str(db))
    assert code == 2 and "no such eval run: 'zzz'" in err and "verdryx runs" in err
    code, _, err = cli(capsys, "show", "b", "--db", str(db))
    assert code == 2 and "ambiguous" in err


# -- diff -----------------------------------------------------------------------------------


def test_diff_lists_the_biggest_changes_first(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "v.db"
    with Store.open(db) as store:
        store.save_run(
            make_run("ra", {"a": 1.0, "b": 0.5, "c": 0.2, "d": 1.0, "e": 1.0, "only-a": 1.0}, day=0)
        )
        store.save_run(
            make_run(
                "rb", {"a": 0.0, "b": 0.75, "c": 0.9, "d": 1.0, "e": None, "only-b": 0.0}, day=1
            )
        )
    document = cli_json(capsys, "diff", "ra", "rb", "--db", str(db))
    assert [item["case_id"] for item in document["changes"]] == ["a", "c", "b"]
    assert [item["delta"] for item in document["changes"]] == pytest.approx([-1.0, 0.7, 0.25])
    assert document["changed"] == 3 and document["matched"] == 4
    assert document["matched_delta"] == pytest.approx((2.65 - 2.7) / 4)
    assert document["only_in_a"] == ["support::only-a"]
    assert document["only_in_b"] == ["support::only-b"]
    assert [item["case_id"] for item in document["measured_changes"]] == ["e"]
    assert document["measured_changes"][0]["b"] is None
    limited = cli_json(capsys, "diff", "ra", "rb", "--db", str(db), "--limit", "1")
    assert len(limited["changes"]) == 1 and limited["changed"] == 3

    code, out, _ = cli(capsys, "diff", "ra", "rb", "--db", str(db), "--limit", "2")
    assert code == 0
    assert out.index("support::a") < out.index("support::c")
    assert "support::b " not in out and "1 smaller changes" in out
    assert "unmeasured in B: support::e" in out
    assert "only in A: 1: support::only-a" in out


def test_diff_of_a_run_with_itself_changes_nothing(
    capsys: pytest.CaptureFixture[str], db: Path
) -> None:
    document = cli_json(capsys, "diff", "a1111111", "a1111111-run", "--db", str(db))
    assert document["changes"] == [] and document["matched"] == 12
    code, _, err = cli(capsys, "diff", "a1111111", "nope", "--db", str(db))
    assert code == 2 and "no such eval run: 'nope'" in err


# -- report ---------------------------------------------------------------------------------


def test_report_writes_the_page(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path
) -> None:
    out_path = tmp_path / "report.html"
    code, out, err = cli(capsys, "report", "--db", str(db), "-o", str(out_path))
    assert code == 0, err
    assert out.strip() == f"report: {out_path}"
    page = out_path.read_text(encoding="utf-8")
    assert "REGRESSED" in page and "http" not in page


def test_report_options(capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path) -> None:
    out_path = tmp_path / "report.html"
    records = tmp_path / "records.ndjson"
    records.write_text('{"outcome": "case_resolved", "cost_usd": 0.5}\n')
    code, _, err = cli(
        capsys,
        "report",
        "--db",
        str(db),
        "-o",
        str(out_path),
        "--run",
        "b4444",
        "--baseline",
        "v1",
        "--gate",
        "threshold",
        "--threshold",
        "0.04",
        "--traces",
        str(records),
        "--model",
        "stub",
        "--eval-set",
        "support",
    )
    assert code == 0, err
    page = out_path.read_text(encoding="utf-8")
    assert "run <code>b4444444-run</code>" in page
    assert "REGRESSED" in page and "<code>threshold</code>" in page
    assert "Cost per outcome" in page and "case_resolved" in page


def test_report_baseline_from_a_committed_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # A fresh CI runner: the store has runs but no baseline; the label is a committed file.
    db = tmp_path / "fresh.db"
    base_run = make_run("r1", GOOD, day=0)
    with Store.open(db) as store:
        store.save_run(make_run("r2", GOOD, day=1))
    from verdryx_core.gating.baselines import write_baseline_file

    write_baseline_file(tmp_path, Baseline.from_run(base_run, id="b", label="main"))
    out_path = tmp_path / "r.html"
    code, _, err = cli(capsys, "report", "--db", str(db), "-o", str(out_path), "--baseline", "main")
    assert code == 0, err
    assert "ON-TRACK" in out_path.read_text(encoding="utf-8")


def test_report_errors(capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path) -> None:
    code, _, err = cli(capsys, "report", "--db", str(db), "-o", str(tmp_path / "no" / "r.html"))
    assert code == 2 and "does not exist" in err
    code, _, err = cli(
        capsys, "report", "--db", str(db), "-o", str(tmp_path / "r.html"), "--model", "gpt-x"
    )
    assert code == 2 and "no eval run of model 'gpt-x'" in err
    code, _, err = cli(
        capsys, "report", "--db", str(db), "-o", str(tmp_path / "r.html"), "--traces", "x.txt"
    )
    assert code == 2 and "x.txt" in err
