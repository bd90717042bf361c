"""The run by eval set and by grader (verdryx_core.reporting.breakdown): numbers checked against an
independent tally and the paired interval against scipy's bootstrap; then the three places
that print it: `verdryx show` (text and --json), the HTML report and the pytest summary."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from plugin_support import FULL, PARTIAL, exact_case, trace_case, write_evalset
from scipy import stats

from verdryx_core.cli import main
from verdryx_core.gating.comparison import compare_to_baseline
from verdryx_core.reporting.breakdown import breakdown_lines, compute_breakdown
from verdryx_core.reporting.html import build_report_html, collect_report
from verdryx_core.runs import Baseline, EvalRun, Score
from verdryx_core.store import Store

START = datetime(2026, 1, 1, tzinfo=UTC)
SETS = ("s10", "s2", "s1")  # natural order: s1, s2, s10
GRADERS = ("regex", "exact")


def _score(eval_set: str, index: int, value: float | None) -> Score:
    grader = GRADERS[index % 2]
    if value is None:
        return Score(
            case_id=f"c{index}", eval_set_id=eval_set, value=None, grader=grader, unmeasured="x"
        )
    return Score(
        case_id=f"c{index}",
        eval_set_id=eval_set,
        value=value,
        grader=grader,
        passed=value >= 0.5,
    )


def _runs(seed: int = 7) -> tuple[EvalRun, EvalRun]:
    """A baseline run and a current one over three sets; set s2 has one measured case only."""
    rng = np.random.default_rng(seed)
    base_scores, cur_scores = [], []
    for eval_set in SETS:
        size = 2 if eval_set == "s2" else 12
        for index in range(size):
            base = float(np.round(rng.uniform(0.3, 1.0), 3))
            cur = float(np.clip(np.round(base + rng.normal(-0.1, 0.2), 3), 0.0, 1.0))
            unmeasured = eval_set == "s2" and index == 1
            base_scores.append(_score(eval_set, index, base))
            cur_scores.append(_score(eval_set, index, None if unmeasured else cur))
    make = lambda run_id, scores, minutes: EvalRun(  # noqa: E731
        id=run_id,
        model="stub",
        started_at=START + timedelta(minutes=minutes),
        eval_set_ids=SETS,
        scores=tuple(scores),
    )
    return make("base", base_scores, 0), make("cur", cur_scores, 1)


def test_each_group_matches_an_independent_tally_and_scipys_paired_bootstrap() -> None:
    base_run, current = _runs()
    baseline = Baseline.from_run(base_run, id="b1", label="v1")
    result = compare_to_baseline([current], baseline)
    breakdown = compute_breakdown(current, result)
    assert breakdown.gated
    assert [group.name for group in breakdown.eval_sets] == ["s1", "s2", "s10"]
    assert [group.name for group in breakdown.graders] == ["exact", "regex"]
    base_values = {score.key: score.value for score in base_run.scores}
    groups = [(g, "eval_set_id") for g in breakdown.eval_sets]
    groups += [(g, "grader") for g in breakdown.graders]
    for group, field in groups:
        mine = [s for s in current.scores if getattr(s, field) == group.name]
        measured = [s.value for s in mine if s.value is not None]
        assert group.cases == len(mine)
        assert group.mean == pytest.approx(sum(measured) / len(measured), abs=1e-12)
        assert group.passed == len([v for v in measured if v >= 0.5])
        assert group.failed == len([v for v in measured if v < 0.5])
        assert group.unmeasured == len(mine) - len(measured)
        diffs = np.array([s.value - base_values[s.key] for s in mine if s.value is not None])
        assert group.matched == diffs.size
        assert group.delta == pytest.approx(float(diffs.mean()), abs=1e-12)
        if diffs.size < 2:
            assert group.ci_low is None and group.ci_high is None
            continue
        assert group.ci_low is not None and group.ci_high is not None
        reference = stats.bootstrap(
            (diffs,),
            np.mean,
            method="percentile",
            n_resamples=20000,
            confidence_level=0.95,
            rng=np.random.default_rng(1),
        ).confidence_interval
        # Two bootstraps of the same data agree up to their Monte Carlo error.
        assert group.ci_low == pytest.approx(reference.low, abs=0.03)
        assert group.ci_high == pytest.approx(reference.high, abs=0.03)
    lines = breakdown_lines(breakdown)
    single = next(line for line in lines if line.strip().startswith("s2 "))
    assert "delta" in single and "1 matched, too few for an interval" in single
    assert any(
        re.search(r"s10 .*95% CI \[[-+]\d\.\d{3}, [-+]\d\.\d{3}\], 12 matched", x) for x in lines
    )


def test_without_a_gate_there_is_no_delta() -> None:
    _, current = _runs()
    breakdown = compute_breakdown(current)
    assert not breakdown.gated
    assert all(group.delta is None for group in breakdown.eval_sets)
    assert not any("delta" in line for line in breakdown_lines(breakdown))


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    db = tmp_path / "store.db"
    base_run, current = _runs()
    with Store.open(db) as store:
        store.save_run(base_run)
        store.save_run(current)
        store.save_baseline(Baseline.from_run(base_run, id="b1", label="v1"))
    return db


def test_show_json_has_the_breakdown(stored: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "cur", "--db", str(stored), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    sets = document["breakdown"]["eval_sets"]
    assert [group["name"] for group in sets] == ["s1", "s2", "s10"]
    s2 = sets[1]
    assert (s2["cases"], s2["unmeasured"]) == (2, 1)
    _, current = _runs()
    s1 = [s.value for s in current.scores if s.eval_set_id == "s1" and s.value is not None]
    assert sets[0]["mean"] == pytest.approx(sum(s1) / len(s1))
    graders = {group["name"]: group for group in document["breakdown"]["graders"]}
    assert graders["exact"]["cases"] + graders["regex"]["cases"] == len(current.scores)


def test_show_text_prints_the_breakdown_by_set_and_grader(
    stored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", "cur", "--db", str(stored)]) == 0
    out = capsys.readouterr().out
    at = out.index("by eval set:")
    assert out.index("  s1 ", at) < out.index("  s2 ", at) < out.index("  s10 ", at)
    assert "by grader:" in out
    assert re.search(r"s2 +mean \d\.\d{3}  \d passed, \d below the bar, 1 unmeasured", out)


def test_the_report_has_a_breakdown_section_with_deltas(stored: Path) -> None:
    with Store.open(stored) as store:
        data = collect_report(store, run_id="cur")
    page = build_report_html(data)
    section = page[page.index('<h2 id="breakdown">') :]
    section = section[: section.index("<h2", 5)]
    assert section.index(">s1<") < section.index(">s2<") < section.index(">s10<")
    assert "paired 95% CI" in section
    assert data.result is not None
    expected = compute_breakdown(data.current, data.result).eval_sets[2]
    assert f"[{expected.ci_low:+.3f}, {expected.ci_high:+.3f}]" in section


def test_the_pytest_summary_breaks_a_two_set_run_down(pytester: pytest.Pytester) -> None:
    db = pytester.path / "store.db"
    write_evalset(pytester.path, "a", "set2", [trace_case(f"c{i}", FULL) for i in range(3)])
    write_evalset(pytester.path, "b", "set10", [exact_case("only", "yes")])
    pytester.runpytest(f"--verdryx-db={db}", "--verdryx-save-baseline=v1").assert_outcomes(passed=4)
    cases = [trace_case(f"c{i}", PARTIAL if i == 0 else FULL) for i in range(3)]
    write_evalset(pytester.path, "a", "set2", cases)
    result = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1")
    drop = (2 / 3 - 1) / 3  # one of three cases falls from 1.0 to 2/3
    result.stdout.fnmatch_lines(
        [
            "by eval set:",
            f"  set2   mean {1 + drop:.3f}  3 passed, 0 below the bar, 0 unmeasured   "
            f"delta {drop:+.3f} (95% CI *, 3 matched)",
            "  set10  mean 1.000  1 passed, 0 below the bar, 0 unmeasured   "
            "delta +0.000 (1 matched, too few for an interval)",
            "by grader:",
            "  exact       mean 1.000  1 passed*",
            "  tool_trace  mean*",
        ]
    )


def test_a_one_set_one_grader_run_prints_no_breakdown(pytester: pytest.Pytester) -> None:
    write_evalset(pytester.path, "a", "only", [exact_case(f"c{i}", "yes") for i in range(2)])
    result = pytester.runpytest("--no-verdryx-store")
    result.assert_outcomes(passed=2)
    assert "by eval set:" not in result.stdout.str()
