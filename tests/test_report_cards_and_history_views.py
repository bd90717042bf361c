"""First-run review fixes: what a new user reads in the report cards, `runs` and
`show` must add up, and the report file must be shareable."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.history_support import GOOD, make_run
from verdryx_core.cli import main
from verdryx_core.reporting.html import write_report
from verdryx_core.runs import Baseline
from verdryx_core.store import Store

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _hermetic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("VERDRYX_DB", "TAIPAN_HOME"):
        monkeypatch.delenv(name, raising=False)


def store_with(path: Path, baseline: Mapping[str, float], *later: Mapping[str, float]) -> Path:
    """A baseline run (saved as `v1`) and later runs, one day apart."""
    with Store.open(path) as store:
        first = make_run("base-run", baseline, day=0)
        store.save_run(first)
        store.save_baseline(Baseline.from_run(first, id="b-1", label="v1"))
        for day, values in enumerate(later, start=1):
            store.save_run(make_run(f"run-{day}", values, day=day))
    return path


def cards(page: str) -> dict[str, tuple[str, str]]:
    found = re.findall(
        r'<div class="label">([^<]*)</div><div class="value">([^<]*)</div>'
        r'<div class="sub">([^<]*)</div>',
        page,
    )
    return {label: (value, sub) for label, value, sub in found}


def test_baseline_card_is_on_the_matched_cases_so_mean_baseline_and_delta_add_up(
    tmp_path: Path,
) -> None:
    # Baseline mean over all four cases is 0.5; the -k run matched only case-00 (1.0 there).
    db = store_with(
        tmp_path / "verdryx.db",
        {"case-00": 1.0, "case-01": 0.0, "case-02": 1.0, "case-03": 0.0},
        {"case-00": 0.0},
    )
    with Store.open(db) as store:
        page = write_report(store, tmp_path / "r.html").read_text()
    shown = cards(page)
    assert shown["baseline"][0] == "1.000"
    assert "1 matched of its 4 cases" in shown["baseline"][1]
    assert "0.500" in shown["baseline"][1]
    assert shown["delta"][0] == "\u22121.000"
    assert shown["delta"][1]  # says why there is no interval instead of staying blank


def test_cases_card_counts_a_case_failing_in_the_baseline_apart(tmp_path: Path) -> None:
    db = store_with(
        tmp_path / "verdryx.db",
        {"case-00": 1.0, "case-01": 0.0, "case-02": 1.0},
        {"case-00": 0.0, "case-01": 0.0, "case-02": 1.0},
    )
    with Store.open(db) as store:
        page = write_report(store, tmp_path / "r.html").read_text()
    value, sub = cards(page)["cases passed"]
    assert value == "1"
    assert sub == "1 below their bar, 1 below it as in the baseline"


@pytest.fixture
def umask_022() -> Iterator[None]:
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


@pytest.mark.usefixtures("umask_022")
def test_the_report_file_is_readable_by_others_like_any_new_file(tmp_path: Path) -> None:
    db = store_with(tmp_path / "verdryx.db", GOOD, GOOD)
    with Store.open(db) as store:
        path = write_report(store, tmp_path / "r.html")
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
        write_report(store, path)  # replacing keeps it shareable, and leaves no temp file
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert sorted(item.name for item in tmp_path.iterdir()) == ["r.html", "verdryx.db"]


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_runs_marks_an_on_track_verdict_on_an_inconclusive_drop(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    one_flipped = dict(GOOD, **{"case-03": 0.0})  # -0.083 on 12 cases: past 0.05, not significant
    db = store_with(tmp_path / "verdryx.db", GOOD, GOOD, one_flipped)
    document: dict[str, Any] = json.loads(run_cli(capsys, "runs", "--db", str(db), "--json"))
    by_id = {row["run_id"]: row for row in document["runs"]}
    assert by_id["run-2"]["verdict"] == "on-track" and by_id["run-2"]["inconclusive"] is True
    assert by_id["run-1"]["verdict"] == "on-track" and by_id["run-1"]["inconclusive"] is False
    lines = run_cli(capsys, "runs", "--db", str(db)).splitlines()
    assert lines[1].startswith("run-2") and lines[1].endswith("on-track (inconclusive drop)")
    assert lines[2].startswith("run-1") and lines[2].endswith("on-track")


def test_show_notes_what_a_failed_case_without_a_reason_answered(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = store_with(tmp_path / "verdryx.db", GOOD, dict(GOOD, **{"case-03": 0.0}))
    out = run_cli(capsys, "show", "run-1", "--db", str(db))
    failed = [line for line in out.splitlines() if "FAIL" in line]
    assert len(failed) == 1 and failed[0].rstrip().endswith("output: 'the answer'")
    passed = [line for line in out.splitlines() if " pass " in line]
    assert passed and all(not line.rstrip().endswith("'the answer'") for line in passed)


def _screenshot_script() -> Any:
    spec = importlib.util.spec_from_file_location(
        "screenshot_report", ROOT / "scripts" / "screenshot_report.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_screenshot_script_refuses_a_page_that_could_fetch_something(
    tmp_path: Path,
) -> None:
    script = _screenshot_script()
    fetching = (
        '<link rel="stylesheet" href="https://cdn.example/a.css">'
        "<style>@import url(//fonts.example/f.css)</style><pre>see https://a.example</pre>"
    )
    problems, quoted = script.external_references(fetching)
    assert {"<link", "href=", "url(", "@import", "https:"} <= set(problems)
    assert quoted == 1
    db = store_with(tmp_path / "verdryx.db", GOOD, GOOD)
    with Store.open(db) as store:
        page = write_report(store, tmp_path / "r.html").read_text()
    assert script.external_references(page) == ([], 0)
