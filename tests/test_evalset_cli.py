"""The CLI face of the new eval set formats and graders: `verdryx eval` reads JSONL and CSV,
`verdryx show` lists case ids in natural order and gives tool traces back as JSON lists, and
the HTML report orders cases naturally (docs/evalset-reference.md, docs/report-and-history.md).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from verdryx_core.cli import main
from verdryx_core.reporting.html import write_report
from verdryx_core.reporting.naturalsort import natural_key
from verdryx_core.store import Store

IDS = ["HumanEval/106", "HumanEval/18", "HumanEval/2", "HumanEval/0"]


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def _jsonl(path: Path) -> Path:
    header = {"id": "he", "defaults": {"grader": "exact", "normalize_whitespace": True}}
    cases: list[dict[str, Any]] = [
        {"id": case_id, "prompt": "p", "expected": "x", "output": " x "} for case_id in IDS
    ]
    cases.append(
        {
            "id": "calls/1",
            "prompt": "weather?",
            "grader": "tool_trace",
            "expected_tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
            "output": [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "noop"}],
            "tool_match": "superset",
        }
    )
    path.write_text("\n".join(json.dumps(item) for item in [header, *cases]) + "\n")
    return path


def test_eval_reads_jsonl_and_csv_and_show_sorts_naturally(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    jsonl = _jsonl(tmp_path / "he.evalset.jsonl")
    csv_path = tmp_path / "qa.evalset.csv"
    csv_path.write_text(
        "id,prompt,grader,expected,output\nq/10,p,f1,the cat,cat\nq/9,p,numeric,3,3.0\n"
    )
    db = tmp_path / "v.db"
    code, out, err = run_cli(capsys, "eval", str(jsonl), str(csv_path), "--db", str(db), "--json")
    assert code == 0, err
    document = json.loads(out)
    values = {s["case_id"]: s["value"] for s in document["scores"]}
    assert values == {**dict.fromkeys(IDS, 1.0), "calls/1": 1.0, "q/10": 1.0, "q/9": 1.0}
    run_id = document["run_id"]

    code, out, _ = run_cli(capsys, "show", run_id, "--db", str(db), "--json")
    shown = json.loads(out)["scores"]
    he = [s["case_id"] for s in shown if s["eval_set_id"] == "he"]
    assert he == ["calls/1", "HumanEval/0", "HumanEval/2", "HumanEval/18", "HumanEval/106"]
    assert [s["eval_set_id"] for s in shown] == ["he"] * 5 + ["qa"] * 2
    assert [s["case_id"] for s in shown if s["eval_set_id"] == "qa"] == ["q/9", "q/10"]
    trace = next(s for s in shown if s["case_id"] == "calls/1")
    # A recorded call written without arguments was made with none.
    assert trace["output"] == [
        {"name": "get_weather", "arguments": {"city": "Paris"}},
        {"name": "noop", "arguments": {}},
    ]
    text_output = next(s for s in shown if s["case_id"] == "HumanEval/0")["output"]
    assert text_output == " x "

    code, out, _ = run_cli(capsys, "show", run_id, "--db", str(db))
    positions = [out.index(f" {case_id} ") for case_id in sorted(IDS, key=natural_key)]
    assert positions == sorted(positions)

    with Store.open(db) as store:
        page = write_report(store, tmp_path / "r.html", run_id=run_id).read_text()
    found = [m for m in re.findall(r"HumanEval/\d+", page) if m in IDS]
    first_seen = list(dict.fromkeys(found))
    assert first_seen == sorted(IDS, key=natural_key)


def test_a_name_only_trace_shows_as_a_list_of_names(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "t.evalset.json"
    case = {
        "id": "t",
        "prompt": "p",
        "grader": "tool_trace",
        "expected_tools": ["a", "b"],
        "output": ["a", "b"],
    }
    path.write_text(json.dumps({"id": "s", "cases": [case]}))
    db = tmp_path / "v.db"
    code, out, err = run_cli(capsys, "eval", str(path), "--db", str(db), "--json")
    assert code == 0, err
    run_id = json.loads(out)["run_id"]
    _, out, _ = run_cli(capsys, "show", run_id, "--db", str(db), "--json")
    assert json.loads(out)["scores"][0]["output"] == ["a", "b"]


def test_a_bad_jsonl_line_is_one_line_from_the_cli(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "bad.evalset.jsonl"
    path.write_text(
        '{"id": "s"}\n{"id": "a", "prompt": "p", "grader": "numeric", "expected": "lots"}\n'
    )
    code, _, err = run_cli(capsys, "eval", str(path), "--db", str(tmp_path / "v.db"))
    assert code != 0
    line = err.strip().splitlines()[-1]
    assert f"{path}:2: case 'a' (#1): field 'expected'" in line


def test_eval_takes_a_folder_as_pytest_does(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    evals = tmp_path / "evals"
    (evals / "nested").mkdir(parents=True)
    _jsonl(evals / "nested" / "he.evalset.jsonl")
    (evals / "qa.evalset.csv").write_text("id,prompt,grader,expected,output\nq/1,p,exact,a,a\n")
    (evals / "notes.json").write_text("{}")
    # Hidden folders and environments are never searched: a copy there is not graded twice.
    (evals / ".venv").mkdir()
    (evals / ".venv" / "qa.evalset.csv").write_text("not, an eval set\n")
    (evals / "node_modules").mkdir()
    _jsonl(evals / "node_modules" / "dep.evalset.jsonl")
    db = str(tmp_path / "v.db")
    code, out, err = run_cli(capsys, "eval", str(evals), "--db", db, "--json")
    assert code == 0, err
    graded = sorted({(s["case_id"]) for s in json.loads(out)["scores"]})
    assert graded == sorted([*IDS, "calls/1", "q/1"])

    (tmp_path / "empty").mkdir()
    code, _, err = run_cli(capsys, "eval", str(tmp_path / "empty"), "--db", db)
    assert code == 2
    assert err.strip() == (
        f"error: {str(tmp_path / 'empty')!r} holds no eval set file "
        "(named *.evalset.json, *.evalset.jsonl, *.evalset.csv)"
    )
