"""What CI sees, rendered by the core: GitHub annotations, the job summary, case lines
(docs/ci.md). Pure functions, checked byte for byte on chosen inputs."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from verdryx_core.evalsets.lines import case_lines_by_id, read_case_lines_by_id
from verdryx_core.gating.compare import GateOutcome
from verdryx_core.gating.comparison import CaseDelta, Comparison, compare_to_baseline
from verdryx_core.gating.drift import DriftStats, PairedStats
from verdryx_core.reporting.ci import (
    CaseFailure,
    escape_data,
    escape_property,
    github_annotations,
    step_summary,
    verdict_interval,
    verdict_line,
)
from verdryx_core.runs import Baseline, EvalRun, Score

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def _run(values: dict[str, float], *, cost: float = 0.0, tokens: int = 0) -> EvalRun:
    return EvalRun(
        id="run-1",
        model="stub",
        started_at=WHEN,
        eval_set_ids=("s",),
        scores=tuple(
            Score(
                case_id=case,
                eval_set_id="s",
                value=value,
                grader="exact",
                cost_usd=cost,
                tokens=tokens,
            )
            for case, value in values.items()
        ),
    )


def _baseline(values: dict[str, float]) -> Baseline:
    return Baseline.from_run(_run(values), id="b-1", label="v1", created_at=WHEN)


def _report(**overrides: object) -> DriftStats:
    fields: dict[str, object] = {
        "verdict": "regressed",
        "gate": "significant",
        "inconclusive": False,
        "chance": 0.01,
        "mde": 0.1,
        "baseline_id": "v1",
        "baseline_mean": 0.9,
        "mean_score": 0.75,
        "delta": -0.15,
        "threshold": 0.05,
        "min_effect": 0.0,
        "window": 1,
        "n": 4,
        "baseline_n": 4,
        "t_statistic": -2.0,
        "ci_low": -0.4,
        "ci_high": 0.05,
        "paired": PairedStats(n=4, mean_diff=-0.15, t_statistic=-3.0, ci_low=-0.3, ci_high=-0.02),
    }
    fields.update(overrides)
    return DriftStats(**fields)  # type: ignore[arg-type]


def _gate(report: DriftStats | None = None, **extra: object) -> GateOutcome:
    result = Comparison(
        baseline=_baseline({"a": 1.0, "b": 1.0, "c": 0.6, "d": 1.0}),
        stats=report if report is not None else _report(),
        matched=4,
        added=(),
        removed=(),
        changed=(),
        deltas=(
            CaseDelta(key="s::a", baseline=1.0, current=0.4),
            CaseDelta(key="s::c", baseline=0.6, current=0.6),
            CaseDelta(key="s::b", baseline=1.0, current=1.0),
        ),
    )
    return GateOutcome(baseline="v1", result=result, **extra)  # type: ignore[arg-type]


def test_escaping_follows_the_actions_toolkit() -> None:
    assert escape_data("50% done\r\nnext: a,b") == "50%25 done%0D%0Anext: a,b"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    assert escape_data("%0A") == "%250A"  # an escape in the text is not taken as an escape


@given(st.text())
def test_escaped_text_has_no_line_break_and_unescapes_back(text: str) -> None:
    prop = escape_property(text)
    assert not {"\r", "\n", ":", ","} & set(prop)
    back = (
        prop.replace("%2C", ",").replace("%3A", ":").replace("%0A", "\n").replace("%0D", "\r")
    ).replace("%25", "%")
    assert back == text


def test_annotations_for_failed_cases_and_a_regressed_gate() -> None:
    failures = [
        CaseFailure(
            key="s::a,1",
            file="evals/s.evalset.json",
            line=7,
            message="s::a,1 scored 0.000, below the pass bar 0.5\nexpected: '50%'",
        ),
        CaseFailure(key="s::b", file=None, line=None, message="lost"),
    ]
    text = github_annotations(failures, _gate(), baseline_file=".verdryx/baselines/v1.json")
    assert text == (
        "::error file=evals/s.evalset.json,line=7,title=verdryx%3A s%3A%3Aa%2C1 failed::"
        "s::a,1 scored 0.000, below the pass bar 0.5%0Aexpected: '50%25'\n"
        "::error title=verdryx%3A s%3A%3Ab failed::lost\n"
        "::error file=.verdryx/baselines/v1.json,title=verdryx gate%3A regressed::"
        "verdryx gate: REGRESSED against baseline v1: mean 0.750 (baseline 0.900), "
        "delta -0.150, 95%25 CI (paired, n=4) [-0.300, -0.020]\n"
    )


def test_a_refused_gate_is_annotated_and_an_on_track_gate_is_not() -> None:
    refused = GateOutcome(baseline="v1", refused="this run measured model 'x' (baseline: 'stub')")
    assert github_annotations([], refused) == (
        "::error title=verdryx gate%3A refused::verdryx gate refused against baseline v1: "
        "this run measured model 'x' (baseline: 'stub')\n"
    )
    on_track = _gate(_report(verdict="on-track"))
    assert github_annotations([], on_track) == ""
    assert github_annotations([], None) == ""


def test_the_verdict_uses_the_paired_interval_when_cases_pair() -> None:
    paired = verdict_interval(_report())
    assert paired is not None and (paired.low, paired.high, paired.paired) == (-0.3, -0.02, True)
    # One matched case: no paired interval, so the verdict rested on the two-sample one.
    single = PairedStats(n=1, mean_diff=-0.1, t_statistic=None, ci_low=None, ci_high=None)
    two = verdict_interval(_report(paired=single))
    assert two is not None and (two.low, two.high, two.paired, two.n) == (-0.4, 0.05, False, 4)
    assert verdict_interval(_report(paired=None, ci_low=None, ci_high=None)) is None


def test_the_verdict_interval_is_the_one_compute_drift_decided_on() -> None:
    """Against the real gate: the paired interval lies below zero exactly when regressed."""
    base = {f"c{i}": 1.0 for i in range(30)}
    now = {f"c{i}": (0.0 if i < 12 else 1.0) for i in range(30)}
    result = compare_to_baseline([_run(now)], _baseline(base))
    assert result.stats is not None and result.regressed
    interval = verdict_interval(result.stats)
    assert interval is not None and interval.paired and interval.high < 0
    assert interval.low == result.stats.paired.ci_low  # type: ignore[union-attr]
    line = verdict_line(GateOutcome(baseline="v1", result=result))
    assert line.startswith("verdryx gate: REGRESSED against baseline v1: mean 0.600")
    assert f"[{interval.low:+.3f}, {interval.high:+.3f}]" in line


def test_the_step_summary_byte_for_byte() -> None:
    run = _run({"a": 0.4, "b": 1.0, "c": 0.6, "d": 1.0}, cost=0.0125, tokens=30)
    failures = [
        CaseFailure(
            key="s::a|x",
            file="evals/s.evalset.json",
            line=3,
            message="s::a|x scored 0.400, below the pass bar 0.5\nexpected: 'yes'",
        )
    ]
    text = step_summary(run, _gate(), failures, passed=2, failed=1, xfailed=1)
    assert text == (
        "## verdryx: REGRESSED against baseline v1\n"
        "\n"
        "verdryx gate: REGRESSED against baseline v1: mean 0.750 (baseline 0.900), delta "
        "-0.150, 95% CI (paired, n=4) \\[-0.300, -0.020\\]\n"
        "\n"
        "| | |\n"
        "|---|---|\n"
        "| run | `run-1` (model `stub`) |\n"
        "| mean score | 0.750 over 4 measured cases |\n"
        "| cases | 2 passed, 1 failed, 1 below the bar as in the baseline, 0 unmeasured |\n"
        "| baseline v1 | 0.900 over 4 matched cases |\n"
        "| delta | -0.150 |\n"
        "| 95% CI | [-0.300, -0.020] (paired, n=4) |\n"
        "| verdict | **regressed** (gate: significant) |\n"
        "| spend | $0.0500 (model $0.0500, judge $0), 120 tokens |\n"
        "\n"
        "### Cases that dropped most (1 dropped)\n"
        "\n"
        "| case | baseline | current | change |\n"
        "|---|---:|---:|---:|\n"
        "| `s::a` | 1.000 | 0.400 | -0.600 |\n"
        "\n"
        "### Failed cases (1)\n"
        "\n"
        "- `s::a\\|x` (`evals/s.evalset.json:3`): s::a\\|x scored 0.400, below the pass bar 0.5\n"
    )


def test_the_step_summary_without_a_baseline_and_when_refused() -> None:
    run = _run({"a": 1.0})
    assert step_summary(run, None) == (
        "## verdryx: no baseline named\n"
        "\n"
        "| | |\n"
        "|---|---|\n"
        "| run | `run-1` (model `stub`) |\n"
        "| mean score | 1.000 over 1 measured cases |\n"
        "| spend | $0 (model $0, judge $0), 0 tokens |\n"
    )
    refused = step_summary(run, GateOutcome(baseline="v_1", refused="model changed"))
    assert refused.startswith(
        "## verdryx: REFUSED against baseline v\\_1\n\n"
        "verdryx gate refused against baseline v\\_1: model changed\n\n"
    )


def test_long_lists_are_cut_with_a_count() -> None:
    run = _run({f"c{i}": 0.0 for i in range(15)})
    deltas = tuple(CaseDelta(key=f"s::c{i}", baseline=1.0, current=0.0) for i in range(15))
    result = Comparison(
        baseline=_baseline({f"c{i}": 1.0 for i in range(15)}),
        stats=_report(),
        matched=15,
        added=(),
        removed=(),
        changed=(),
        deltas=deltas,
    )
    failures = [CaseFailure(key=f"s::c{i}", file=None, line=None, message="x") for i in range(15)]
    text = step_summary(run, GateOutcome(baseline="v1", result=result), failures, rows=3)
    assert "| `s::c2` | 1.000 | 0.000 | -1.000 |\n| ... and 12 more | | | |\n" in text
    assert "- `s::c2`: x\n- ... and 12 more\n" in text
    assert "`s::c3`" not in text


def test_a_code_span_survives_backticks() -> None:
    run = _run({"a": 1.0})
    gate = GateOutcome(baseline="v1", refused="r")
    text = step_summary(run, gate, [CaseFailure(key="s::`x`", file=None, line=None, message="m")])
    assert "- `` `s::`x` `` ``: m\n" not in text  # sanity: not a broken fence
    assert "- `` s::`x` ``: m\n" in text


def test_case_lines_of_a_json_eval_set(tmp_path: Path) -> None:
    path = tmp_path / "s.evalset.json"
    path.write_text(
        '{\n  "id": "s",\n  "notes": {"cases": [{"id": "decoy"}]},\n  "cases": [\n'
        '    {"id": "a", "prompt": "p\\n"},\n'
        '    {\n      "id": "b",\n      "prompt": "two\\nlines"\n    },'
        '{"id": "c", "prompt": "same line as b\'s end"}\n  ]\n}\n'
    )
    assert read_case_lines_by_id(path) == {"a": 5, "b": 6, "c": 9}
    assert json.loads(path.read_text())["cases"][2]["id"] == "c"  # the file is valid JSON


def test_case_lines_on_one_line_with_a_bom_and_on_bad_files(tmp_path: Path) -> None:
    path = tmp_path / "s.evalset.json"
    path.write_text('\ufeff{"cases":[{"id":"a"},{"id":"b"}],"id":"s"}', encoding="utf-8")
    assert read_case_lines_by_id(path) == {"a": 1, "b": 1}
    path.write_text('{"id": "s", "cases": [{"id": "a"}')  # cut short
    assert read_case_lines_by_id(path) == {}
    assert read_case_lines_by_id(tmp_path / "missing.evalset.json") == {}
    assert case_lines_by_id("[1, 2]") == {}


@given(
    st.lists(
        st.fixed_dictionaries(
            {"id": st.text(min_size=1, max_size=8), "prompt": st.text(max_size=20)}
        ),
        max_size=12,
        unique_by=lambda case: case["id"],
    ),
    st.integers(min_value=0, max_value=3),
)
def test_case_lines_agree_with_where_json_dumps_puts_them(
    cases: list[dict[str, str]], indent: int
) -> None:
    """With `indent`, json.dumps puts each case object's `{` on its own line: line 3 + i
    for the i-th case when `id` comes first, then one line per key and the closing brace."""
    text = json.dumps({"id": "s", "cases": cases}, indent=indent or None)
    found = case_lines_by_id(text)
    assert set(found) == {case["id"] for case in cases}
    if indent:
        per_case = len(next(iter(cases), {})) + 2  # "{", the keys, "}"
        assert [found[case["id"]] for case in cases] == [
            4 + i * per_case for i in range(len(cases))
        ]
    else:
        assert set(found.values()) <= {1}


@pytest.mark.parametrize("cases", [20_000])
def test_case_lines_of_a_large_file_match_a_naive_search(tmp_path: Path, cases: int) -> None:
    rows = [{"id": f"c{i}", "prompt": f"q{i}", "expected": "yes"} for i in range(cases)]
    text = json.dumps({"id": "s", "cases": rows}, indent=1)
    lines = text.splitlines()
    naive = {
        json.loads(lines[n + 1].strip().rstrip(",")[len('"id": ') :]): n + 1
        for n, line in enumerate(lines)
        if line.strip() == "{" and n > 0
    }
    assert case_lines_by_id(text) == naive
