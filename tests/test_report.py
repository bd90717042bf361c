"""The HTML report: self-contained (no URL, inline SVG that parses as XML),
escaped, a verdict in words and colour, charts whose marks follow the data, cases sorted by
change, per-grader histograms, spend per run and cost per outcome."""

from __future__ import annotations

import json
import math
import re
import sys
import xml.etree.ElementTree as ET
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from tests.history_support import GOOD, history_store, make_run, make_score
from verdryx_core.addons.traces import cost_report_for
from verdryx_core.cli import main
from verdryx_core.errors import UsageError
from verdryx_core.gating.comparison import compare_to_baseline
from verdryx_core.reporting.html import build_report_html, collect_report, write_report
from verdryx_core.reporting.html._html import _baseline_band
from verdryx_core.runs import Baseline, BaselineCase
from verdryx_core.store import Store

SVG = re.compile(r"<svg\b.*?</svg>", re.S)


@pytest.fixture
def history(tmp_path: Path) -> Path:
    return history_store(tmp_path / "verdryx.db")[0]


def report_of(db: Path, tmp_path: Path, **kwargs: object) -> str:
    with Store.open(db) as store:
        path = write_report(store, tmp_path / "report.html", **kwargs)  # type: ignore[arg-type]
    return path.read_text(encoding="utf-8")


def svgs(page: str) -> list[ET.Element]:
    return [ET.fromstring(text) for text in SVG.findall(page)]


def timeline(page: str) -> ET.Element:
    found = [svg for svg in svgs(page) if svg.get("aria-label") == "mean score per run"]
    assert len(found) == 1
    return found[0]


# -- self-contained -------------------------------------------------------------------------


def test_the_page_carries_no_url_at_all(history: Path, tmp_path: Path) -> None:
    page = report_of(history, tmp_path)
    # Benign data has no URL, so any "http" would be the report's own: a CDN, a font, a link,
    # or an SVG namespace. None is allowed (the report must open offline).
    assert "http" not in page.lower()
    for pattern in (r"\bsrc\s*=", r"\bhref\s*=", r"url\(", r"@import", r"<script", r"<link"):
        assert not re.search(pattern, page, re.I), pattern
    assert page.startswith("<!DOCTYPE html>")


def test_every_svg_is_well_formed_xml_and_the_charts_are_there(
    history: Path, tmp_path: Path
) -> None:
    page = report_of(history, tmp_path)
    parsed = svgs(page)
    labels = [svg.get("aria-label") for svg in parsed]
    assert labels.count("mean score per run") == 1
    assert labels.count("cost per run") == 1
    assert labels.count("score distribution") == 1  # one grader: exact
    chart = timeline(page)
    assert chart.find("polyline") is not None
    # One point per run: the five runs of the fixture.
    assert len(chart.findall("circle")) == 5


def test_user_text_is_escaped_and_urls_only_appear_inside_it(tmp_path: Path) -> None:
    hostile = '<script>alert("x")</script> see https://evil.invalid/p?a=1&b=2 \u202edrow'
    run = make_run("r1", {"c1": 0.0}, day=0, model="m<b>")
    run = replace(
        run,
        scores=(
            make_score("c1<i>", 0.0, eval_set_id="set&1", output=hostile, expected="\x1b[31mred"),
        ),
        eval_set_ids=("set&1",),
    )
    with Store.open(tmp_path / "v.db") as store:
        store.save_run(run)
    page = report_of(tmp_path / "v.db", tmp_path)
    assert "<script" not in page
    assert "&lt;script&gt;" in page
    assert "m&lt;b&gt;" in page and "c1&lt;i&gt;" in page and "set&amp;1" in page
    # The ANSI escape byte would make the SVG/XHTML ill-formed, and a bidi override would
    # show the reader other text than the model wrote: both read as their escapes.
    assert "\x1b" not in page and "\u202e" not in page
    assert "\\x1b[31mred" in page and "\\u202edrow" in page
    # The only URL is the user's, inside the expandable output view.
    outside = re.sub(r"<pre>.*?</pre>", "", page, flags=re.S)
    assert "http" not in outside
    assert "https://evil.invalid/p?a=1&amp;b=2" in page
    for svg in svgs(page):
        assert svg is not None


# -- the verdict line -----------------------------------------------------------------------


def test_a_regressed_run_says_so_in_words_and_red(history: Path, tmp_path: Path) -> None:
    page = report_of(history, tmp_path)
    title = re.search(r"<h1>.*?</h1>", page, re.S)
    assert title is not None
    assert "REGRESSED" in title.group(0)
    assert "#cf222e" in title.group(0)
    assert "ON-TRACK" not in title.group(0)


def test_an_unchanged_run_is_on_track_in_green(history: Path, tmp_path: Path) -> None:
    page = report_of(history, tmp_path, run_id="b3333333")
    title = re.search(r"<h1>.*?</h1>", page, re.S)
    assert title is not None
    assert "ON-TRACK" in title.group(0) and "#1a7f37" in title.group(0)


def test_the_verdict_agrees_with_the_gate(history: Path, tmp_path: Path) -> None:
    with Store.open(history) as store:
        run = store.load_run("c5555555-run")
        baseline = store.get_baseline("v1")
        assert run is not None and baseline is not None
        expected = compare_to_baseline([run], baseline)
        data = collect_report(store, baseline=baseline)
    assert expected.stats is not None and data.result is not None
    assert data.result.stats == expected.stats
    assert data.current.id == "c5555555-run"


def test_a_given_gate_result_is_what_the_page_shows(history: Path, tmp_path: Path) -> None:
    # The pytest session passes its own verdict (its gate, window and threshold): the page
    # must not recompute a different one. Run 4 dropped 0.5 on one case: on-track under the
    # default gate, regressed under a threshold gate of 0.04.
    with Store.open(history) as store:
        run = store.load_run("b4444444-run")
        baseline = store.get_baseline("v1")
        assert run is not None and baseline is not None
        strict = compare_to_baseline([run], baseline, gate="threshold", threshold=0.04)
        lenient = compare_to_baseline([run], baseline)
    assert strict.regressed and not lenient.regressed
    given = report_of(history, tmp_path, run_id=run.id, baseline=baseline, result=strict)
    assert "REGRESSED" in given and "<code>threshold</code>" in given
    default = report_of(history, tmp_path, run_id=run.id, baseline=baseline)
    assert "REGRESSED" not in default


def test_without_a_baseline_the_page_says_so_and_lists_lowest_first(tmp_path: Path) -> None:
    run = make_run("r1", {"hi": 1.0, "lo": 0.0, "mid": 0.5, "gone": None}, day=0)
    with Store.open(tmp_path / "v.db") as store:
        store.save_run(run)
    page = report_of(tmp_path / "v.db", tmp_path)
    assert "NO BASELINE" in page
    assert "verdryx baseline RUN_ID --label v1" in page
    order = [page.index(f"<tr><td>{case}<") for case in ("gone", "lo", "mid", "hi")]
    assert order == sorted(order)


def test_an_incomplete_run_is_not_gated(tmp_path: Path) -> None:
    base_run = make_run("r1", GOOD, day=0)
    cut = make_run("r2", {"case-00": 0.0}, day=1, complete=False)
    with Store.open(tmp_path / "v.db") as store:
        store.save_run(base_run)
        store.save_run(cut)
        store.save_baseline(Baseline.from_run(base_run, id="b", label="v1"))
    page = report_of(tmp_path / "v.db", tmp_path, run_id="r2")
    assert "NOT COMPARED" in page and "incomplete" in page


# -- the charts follow the data -------------------------------------------------------------


def test_points_are_in_run_order_and_higher_means_sit_higher(history: Path, tmp_path: Path) -> None:
    page = report_of(history, tmp_path)
    chart = timeline(page)
    line = chart.find("polyline")
    assert line is not None
    points = [tuple(map(float, pair.split(","))) for pair in line.get("points", "").split()]
    xs = [x for x, _ in points]
    assert xs == sorted(xs) and len(set(xs)) == 5
    means = [1.0, 1.0, 1.0, 11.5 / 12, 8.25 / 12]
    ys = [y for _, y in points]
    # SVG y grows downwards: a lower mean is a larger y.
    for (mean_a, y_a), (mean_b, y_b) in pairwise(zip(means, ys, strict=True)):
        if mean_a > mean_b:
            assert y_a < y_b
        elif mean_a == mean_b:
            assert y_a == pytest.approx(y_b)
    # The baseline line sits at the first run's height (it is that run's snapshot).
    baseline = chart.find("line[@class='baseline']")
    assert baseline is not None
    assert float(baseline.get("y1", "nan")) == pytest.approx(ys[0], abs=0.11)


def test_the_whisker_crosses_the_baseline_exactly_when_on_track(
    history: Path, tmp_path: Path
) -> None:
    for run_id, regressed in (("c5555555-run", True), ("b4444444-run", False)):
        chart = timeline(report_of(history, tmp_path, run_id=run_id))
        baseline = chart.find("line[@class='baseline']")
        whisker = chart.find("g[@class='whisker']/line")
        assert baseline is not None and whisker is not None
        base_y = float(baseline.get("y1", "nan"))
        top = min(float(whisker.get("y1", "nan")), float(whisker.get("y2", "nan")))
        # Below the baseline line means a larger y everywhere on the whisker.
        assert (top > base_y) is regressed, run_id


def test_the_baseline_band_is_a_95_percent_interval_of_its_mean() -> None:
    rng = np.random.default_rng(3)
    values = rng.uniform(0.3, 1.0, size=40)
    cases = [
        BaselineCase(eval_set_id="s", case_id=str(index), value=float(value))
        for index, value in enumerate(values)
    ]
    band = _baseline_band(cases)
    assert band is not None
    low, high = stats.norm.interval(0.95, loc=values.mean(), scale=stats.sem(values))
    assert band[0] == pytest.approx(low, abs=1e-9)
    assert band[1] == pytest.approx(high, abs=1e-9)
    assert _baseline_band(cases[:1]) is None


def test_one_histogram_per_grader_counting_its_scores(tmp_path: Path) -> None:
    values = {"a": 1.0, "b": 1.0, "c": 0.95, "d": 0.0, "e": 0.45, "f": None, "g": 0.3}
    graders = {"a": "exact", "b": "exact", "c": "llm_judge", "d": "exact", "e": "llm_judge"}
    graders |= {"f": "llm_judge", "g": "regex"}
    run = make_run("r1", values, day=0, graders=graders)
    with Store.open(tmp_path / "v.db") as store:
        store.save_run(run)
    page = report_of(tmp_path / "v.db", tmp_path)
    histograms = [svg for svg in svgs(page) if svg.get("aria-label") == "score distribution"]
    assert len(histograms) == 3
    titles = {
        grader: [title.text for title in svg.iter("title")][1:]
        for grader, svg in zip(("exact", "llm_judge", "regex"), histograms, strict=True)
    }
    assert titles["exact"][:2] == ["0.0 to 0.1: 1 case", "0.9 to 1.0: 2 cases"]
    assert titles["llm_judge"][:2] == ["0.4 to 0.5: 1 case", "0.9 to 1.0: 1 case"]
    assert titles["regex"][0] == "0.3 to 0.4: 1 case"
    assert "2 measured, mean 0.700, 1 unmeasured" in page


# -- cases ----------------------------------------------------------------------------------


def test_cases_are_sorted_by_change_worst_first(tmp_path: Path) -> None:
    base = make_run("r1", {"a": 1.0, "b": 1.0, "c": 0.5, "d": 0.5, "e": 1.0, "f": 1.0}, day=0)
    now = make_run(
        "r2", {"a": 0.75, "b": 0.0, "c": 1.0, "d": 0.75, "e": None, "f": 1.0, "new": 1.0}, day=1
    )
    with Store.open(tmp_path / "v.db") as store:
        store.save_run(base)
        store.save_run(now)
        store.save_baseline(Baseline.from_run(base, id="b", label="v1"))
    page = report_of(tmp_path / "v.db", tmp_path)
    changed = page.split('<details class="more">')[0]
    rows = re.findall(r"<tr><td>([a-z]+)<div class=set>", changed)
    # drops (worst first), unmeasured now, then gains (biggest first)
    assert rows == ["b", "a", "e", "c", "d"]
    assert "−1.000" in changed and "+0.500" in changed
    assert "Not in the baseline (1)" in page and "Unchanged (1)" in page
    assert "2 dropped, 2 rose, 1 unchanged, 1 unmeasured now" in page


def test_details_show_output_expected_and_reason_without_links(tmp_path: Path) -> None:
    long_output = "x" * 5000
    score = make_score("c1", 0.5, output=long_output, expected="yes", reason="half right")
    run = replace(make_run("r1", {}, day=0), scores=(score,))
    with Store.open(tmp_path / "v.db") as store:
        store.save_run(run)
    page = report_of(tmp_path / "v.db", tmp_path)
    details = re.search(r"<details><summary>view</summary>(.*?)</details>", page, re.S)
    assert details is not None
    body = details.group(1)
    assert "<dt>output</dt>" in body and "<dt>expected</dt>" in body
    assert "half right" in body
    assert "1,000 more characters in the store" in body
    assert "x" * 4000 in body and "x" * 4001 not in body


def test_an_eval_set_filter_narrows_series_and_cases(tmp_path: Path) -> None:
    other = [make_score("o1", 0.0, eval_set_id="other")]
    runs = [
        make_run("r1", {"s1": 1.0}, day=0, extra=other),
        make_run("r2", {"s1": 0.5}, day=1),
        make_run("r3", {"x1": 1.0}, day=2, eval_set_id="unrelated"),
    ]
    with Store.open(tmp_path / "v.db") as store:
        for run in runs:
            store.save_run(run)
        data = collect_report(store, eval_set_id="other")
        everything = collect_report(store)
    assert data.current.id == "r1"
    assert [score.case_id for score in data.current.scores] == ["o1"]
    assert [run.id for run in data.series] == ["r1"]
    assert data.mixed_sets
    # Without a filter the newest run is reported, with runs of exactly its eval sets.
    assert everything.current.id == "r3"
    assert [run.id for run in everything.series] == ["r3"]


def test_the_default_baseline_is_the_newest_of_the_run_model(tmp_path: Path) -> None:
    stub = make_run("r1", GOOD, day=0)
    other = make_run("r2", GOOD, day=1, model="other-model")
    with Store.open(tmp_path / "v.db") as store:
        store.save_run(stub)
        store.save_run(other)
        store.save_baseline(Baseline.from_run(stub, id="b1", label="stub-v1"))
        store.save_baseline(Baseline.from_run(other, id="b2", label="other-v1"))
        data = collect_report(store, model="stub")
    assert data.current.id == "r1"
    assert data.baseline is not None and data.baseline.label == "stub-v1"


# -- spend and outcomes ---------------------------------------------------------------------


def test_cost_bars_stack_model_and_judge_spend(history: Path, tmp_path: Path) -> None:
    page = report_of(history, tmp_path)
    chart = next(svg for svg in svgs(page) if svg.get("aria-label") == "cost per run")
    bars = [rect for rect in chart.iter("rect") if rect.find("title") is not None]
    blue = [rect for rect in bars if rect.get("fill") == "#0969da"]
    orange = [rect for rect in bars if rect.get("fill") == "#bc4c00"]
    assert len(blue) == 5 and len(orange) == 2
    # The bar of the run that spent most (12 cases x 0.024) is the tallest.
    stacked = {rect.get("x"): float(rect.get("height", "0")) for rect in orange}
    heights = [float(rect.get("height", "0")) + stacked.get(rect.get("x"), 0.0) for rect in blue]
    assert max(heights) == heights[-1]
    assert "$0.2880" in page  # the last run's total in the runs table


def test_no_spend_says_why_instead_of_an_empty_chart(tmp_path: Path) -> None:
    with Store.open(tmp_path / "v.db") as store:
        store.save_run(make_run("r1", GOOD, day=0))
    page = report_of(tmp_path / "v.db", tmp_path)
    assert "No spend recorded" in page
    assert all(svg.get("aria-label") != "cost per run" for svg in svgs(page))


def test_traces_add_the_cost_per_outcome_table(history: Path, tmp_path: Path) -> None:
    records = tmp_path / "outcomes.ndjson"
    rows = [
        {"outcome": "case_resolved", "cost_usd": 0.02},
        {"outcome": "case_resolved", "cost_usd": 0.04},
        {"outcome": "abandoned", "cost_usd": 0.06},
    ]
    records.write_text("".join(json.dumps(row) + "\n" for row in rows))
    page = report_of(
        history, tmp_path, traces=records, traces_costs=(cost_report_for(records), None)
    )
    section = page.split('<h2 id="outcomes">')[1]
    assert re.search(r"<td>case_resolved</td><td class=num>2</td>", section)
    assert "$0.0300" in section  # mean of the resolved runs
    assert "$0.0600" in section  # every resolved case, all spend paid for: 0.12 / 2
    assert "50% of spend went to abandoned runs" in section


def test_without_the_traces_package_the_section_is_skipped_with_a_note(
    history: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The traces add-on is read by the command; without its extra (pyarrow) Parquet traces
    # cannot be read: the report is still written, and says why the section is not there.
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "part-0.parquet").write_bytes(b"PAR1")
    out = tmp_path / "page.html"
    code = main(["report", "--db", str(history), "--output", str(out), "--traces", str(traces)])
    assert code == 0, capsys.readouterr().err
    page = out.read_text(encoding="utf-8")
    assert "Cost per outcome skipped" in page
    assert "REGRESSED" in page


# -- writing --------------------------------------------------------------------------------


def test_a_missing_folder_is_an_error_naming_it(history: Path, tmp_path: Path) -> None:
    with Store.open(history) as store, pytest.raises(UsageError, match="does not exist"):
        write_report(store, tmp_path / "nope" / "report.html")
    assert not (tmp_path / "nope").exists()


def test_an_empty_store_is_an_error_saying_what_to_do(tmp_path: Path) -> None:
    with Store.open(tmp_path / "v.db") as store, pytest.raises(UsageError, match="verdryx eval"):
        write_report(store, tmp_path / "report.html")


def test_build_is_pure(history: Path) -> None:
    with Store.open(history) as store:
        data = collect_report(store)
    assert build_report_html(data) == build_report_html(data)
    assert math.isclose(data.current.mean_score or 0.0, 8.25 / 12)
