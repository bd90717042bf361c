"""Totals are checked, not just values: every token count and cost is bounded where it enters
(a target's usage, a provider's answer, a price file, a custom grader, a score, a trace) and
every sum before it is stored or shown, so nothing overflows, wraps or turns negative
(docs/store.md, "Maxima"; docs/troubleshooting.md, "Reliability: stored data").

The payloads here differ on purpose from the ones that found the problems: values just past
each maximum, values thousands of digits long, infinities, and many moderate values whose
sum passes a total.
"""

from __future__ import annotations

import json
import math
import sqlite3
import sys
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fakes.anthropic_server import FakeAnthropic, Reply, message_body
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_support import BACKENDS, store_target

from verdryx_core.addons.errors import TraceError
from verdryx_core.addons.traces import cost_per_outcome, cost_report_for, reduce_traces
from verdryx_core.addons.traces.loaders import load_run_records
from verdryx_core.cli import main
from verdryx_core.errors import (
    ModelCallError,
    RunNotStoredError,
    StoreError,
    TargetResultError,
    UsageError,
)
from verdryx_core.evaluation.saving import save_run
from verdryx_core.graders import Grade
from verdryx_core.graders.registry import register_grader, unregister_grader
from verdryx_core.limits import (
    MAX_COST_USD,
    MAX_PRICE_PER_MTOK,
    MAX_TOKENS,
    MAX_TOTAL_COST_MICROUSD,
    MAX_TOTAL_COST_USD,
    MAX_TOTAL_TOKENS,
)
from verdryx_core.llm.anthropic_adapter import AnthropicAdapter
from verdryx_core.llm.prices import PriceBook
from verdryx_core.llm.usage import TokenUsage
from verdryx_core.llm.wire import MalformedAnswer
from verdryx_core.runs import EvalRun, Score
from verdryx_core.store import Store
from verdryx_core.targets.result import TargetUsage

#: Counts past a call's maximum: just past it, past 64 bits, thousands of digits.
too_many_tokens = (
    st.integers(MAX_TOKENS + 1, MAX_TOKENS + 10**6)
    | st.integers(2**63, 2**64 + 17)
    | st.integers(10**100, 10**100 + 3).map(lambda n: n**40)
)
#: Costs past a call's maximum, and what is not a cost at all.
bad_costs = (
    st.floats(MAX_COST_USD * (1 + 1e-9), 1e300)
    | st.sampled_from([math.inf, -math.inf, math.nan, -0.01, -1e-300])
    | st.floats(-1e300, -1e-300)
)


def one_line(text: str) -> str:
    assert "\n" not in text.strip() and "Traceback" not in text, text
    return text.strip()


# -- at entry: a target, a provider, a price file, a custom grader ----------------------------


@settings(max_examples=60, deadline=None)
@given(count=too_many_tokens, field=st.sampled_from(["input_tokens", "output_tokens"]))
def test_a_target_count_past_the_maximum_is_one_line_naming_the_field(
    count: int, field: str
) -> None:
    with pytest.raises(TargetResultError) as caught:
        TargetUsage.coerce({field: count})
    message = one_line(str(caught.value))
    assert f"usage.{field}" in message and "maximum" in message
    assert len(message) < 300  # a 4,000-digit count is not printed whole


@settings(max_examples=60, deadline=None)
@given(cost=bad_costs)
def test_a_target_cost_past_the_maximum_or_not_a_cost_is_refused(cost: float) -> None:
    with pytest.raises(TargetResultError, match=r"usage\.cost_usd"):
        TargetUsage.coerce({"cost_usd": cost})


def test_the_maxima_themselves_are_accepted() -> None:
    usage = TargetUsage.coerce(
        {"input_tokens": MAX_TOKENS, "output_tokens": MAX_TOKENS, "cost_usd": MAX_COST_USD}
    )
    assert usage.input_tokens == MAX_TOKENS and usage.cost_usd == MAX_COST_USD
    assert TokenUsage(fresh=MAX_TOKENS, output=0).input_tokens == MAX_TOKENS


@settings(max_examples=40, deadline=None)
@given(count=too_many_tokens)
def test_a_token_usage_past_the_maximum_is_a_malformed_answer(count: int) -> None:
    with pytest.raises(MalformedAnswer, match=r"usage\.cache_read"):
        TokenUsage(fresh=1, output=1, cache_read=count)


def test_a_provider_answering_a_count_past_the_maximum_is_one_model_call_error(
    server: FakeAnthropic,
) -> None:
    body = message_body(text="hi")
    body["usage"]["output_tokens"] = MAX_TOKENS * 7 + 3
    server.script(Reply(body=body))
    adapter = AnthropicAdapter(
        "claude-haiku-4-5", api_key=server.api_key, base_url=server.url, max_retries=0
    )
    with pytest.raises(ModelCallError) as caught:
        adapter.complete("hi")
    message = one_line(str(caught.value))
    assert "usage.output_tokens" in message and "maximum" in message


@pytest.mark.parametrize("price", [MAX_PRICE_PER_MTOK + 0.5, 1e200])
def test_a_price_past_the_maximum_is_refused_naming_the_entry(tmp_path: Path, price: float) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"models": {"pricey": {"input": 1.0, "output": price}}}))
    with pytest.raises(UsageError) as caught:
        PriceBook.from_file(path)
    message = one_line(str(caught.value))
    assert "pricey" in message and ".output" in message and "maximum" in message


class _Greedy:
    """A custom grader that claims more grading tokens than any call has."""

    def grade(self, case: object, output: object, context: object) -> Grade:
        return Grade(value=1.0, tokens=MAX_TOKENS + 11)


def test_a_custom_grader_claiming_too_many_tokens_is_that_case_s_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    register_grader("greedy_totals", _Greedy())
    try:
        path = tmp_path / "g.evalset.json"
        cases = [{"id": "g1", "prompt": "p", "output": "o", "grader": "greedy_totals"}]
        path.write_text(json.dumps({"id": "g", "cases": cases}))
        db = tmp_path / "v.db"
        code = main(["eval", str(path), "--db", str(db)])
    finally:
        unregister_grader("greedy_totals")
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert "case g::g1" in err and "tokens" in err and "maximum" in err
    with Store.open(db) as store:
        (run,) = store.list_runs()
    assert not run.complete  # stored, marked incomplete


class _Buggy:
    """A custom grader with a bug of its own on one case."""

    def grade(self, case: Any, output: object, context: object) -> Grade:
        if case.id == "g2":
            return Grade(value=1 / len(""))  # ZeroDivisionError, not a VerdryxError
        return Grade(value=1.0)


def test_a_case_that_dies_midway_is_its_line_and_the_run_is_stored_incomplete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    register_grader("buggy_totals", _Buggy())
    try:
        path = tmp_path / "b.evalset.json"
        cases = [
            {"id": f"g{i}", "prompt": "p", "output": "o", "grader": "buggy_totals"}
            for i in range(1, 4)
        ]
        path.write_text(json.dumps({"id": "b", "cases": cases}))
        db = tmp_path / "v.db"
        code = main(["eval", str(path), "--db", str(db)])
    finally:
        unregister_grader("buggy_totals")
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert (
        "error: case b::g2: custom grader 'buggy_totals' raised ZeroDivisionError: "
        "division by zero for case 'g2' (at "
    ) in err
    with Store.open(db) as store:
        (summary,) = store.list_runs()
        run = store.load_run(summary.id)
    assert run is not None and not run.complete  # never stored as a whole run
    assert [score.case_id for score in run.scores] == ["g1", "g3"]


# -- a score and a run: each bounded, and their sum --------------------------------------------


@settings(max_examples=40, deadline=None)
@given(tokens=st.integers(MAX_TOTAL_TOKENS + 1, 2**90) | st.integers(-(2**70), -1))
def test_a_score_past_the_total_token_bound_is_refused(tokens: int) -> None:
    with pytest.raises(ValueError, match=r"case 'c': tokens"):
        Score(case_id="c", eval_set_id="s", value=1.0, grader="exact", tokens=tokens)


@settings(max_examples=40, deadline=None)
@given(cost=st.floats(MAX_TOTAL_COST_USD * 1.0001, 1e308) | st.sampled_from([math.nan, -2.5]))
def test_a_score_cost_past_the_total_bound_is_refused(cost: float) -> None:
    with pytest.raises(ValueError, match=r"judge_cost_usd"):
        Score(case_id="c", eval_set_id="s", value=1.0, grader="exact", judge_cost_usd=cost)


def _run(scores: list[Score], run_id: str = "big-run") -> EvalRun:
    return EvalRun(
        id=run_id, model="stub", started_at=datetime(2025, 3, 1, tzinfo=UTC), scores=tuple(scores)
    )


def _scores(count: int, **values: float) -> list[Score]:
    return [
        Score(case_id=f"c{i}", eval_set_id="s", value=0.5, grader="exact", **values)
        for i in range(count)
    ]


@pytest.fixture(params=BACKENDS)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[object]:
    with store_target(request.param, tmp_path) as where:
        yield where


@pytest.mark.parametrize(
    "scores",
    [
        pytest.param(_scores(3, tokens=4 * 10**18 + 1), id="three-scores-of-4e18-tokens"),
        pytest.param(_scores(3, cost_usd=3.5 * 10**12), id="model-cost-1.05e13"),
        pytest.param(
            _scores(2, cost_usd=4 * 10**12, judge_cost_usd=1.5 * 10**12), id="total-cost-1.1e13"
        ),
    ],
)
def test_a_run_whose_sum_passes_a_total_is_not_stored_and_nothing_is_written(
    target: object, scores: list[Score]
) -> None:
    with Store.open(target) as store:
        with pytest.raises(StoreError) as caught:
            store.save_run(_run(scores))
        message = one_line(str(caught.value))
        assert "big-run" in message and "maximum" in message
        assert store.run_ids() == []
        assert store.case_scores(["big-run"]) == []
        store.save_run(_run(scores[:1], "fits"))  # one of them alone fits
        assert store.run_ids() == ["fits"]


def test_a_run_at_exactly_the_total_is_stored(tmp_path: Path) -> None:
    half = MAX_TOTAL_TOKENS // 2
    scores = [
        Score(case_id="a", eval_set_id="s", value=1.0, grader="exact", tokens=half),
        Score(case_id="b", eval_set_id="s", value=1.0, grader="exact", tokens=half + 1),
    ]
    with Store.open(tmp_path / "v.db") as store:
        store.save_run(_run(scores))
        (summary,) = store.list_runs()
    assert summary.total_tokens == MAX_TOTAL_TOKENS


def test_a_run_and_its_contract_verdicts_are_stored_together_or_not_at_all(
    tmp_path: Path,
) -> None:
    """A verdict row the store refuses (here a real SQLite trigger) takes the run with it: the
    store never holds a run without the verdicts it produced."""
    db = tmp_path / "v.db"
    run = _run(
        [Score(case_id="k1", eval_set_id="s", value=1.0, grader="contract", reason="ok")], "rk"
    )
    with Store.open(db) as store:
        store.save_run(_run([], "warm-up"))
        save_run(store, _run([], "creates-nothing"), cache_entries=[])
    connection = sqlite3.connect(db)
    connection.executescript(
        """
        CREATE TABLE contract_verdicts (id INTEGER PRIMARY KEY AUTOINCREMENT, agent_id TEXT,
            task_id TEXT NOT NULL, verdict TEXT NOT NULL, reason TEXT NOT NULL,
            bundle_hash TEXT, run_id TEXT, created_at TEXT NOT NULL);
        CREATE TRIGGER refuse BEFORE INSERT ON contract_verdicts
        BEGIN SELECT RAISE(ABORT, 'verdicts are read-only here'); END;
        """
    )
    connection.close()
    with Store.open(db) as store:
        with pytest.raises(StoreError, match="read-only here"):
            save_run(store, run, cache_entries=[])
        assert "rk" not in store.run_ids()
        assert sorted(store.run_ids()) == ["creates-nothing", "warm-up"]


# -- both faces: a target's counts, and a run whose total passes the maximum --------------------

AGENT = textwrap.dedent(
    """
    def greedy(case):
        # One count far past any call, one cost past any call, by case.
        if case.id == "tok":
            return {"output": case.prompt, "usage": {"output_tokens": 5 * 10**18}}
        if case.id == "usd":
            return {"output": case.prompt, "usage": {"cost_usd": 2.5e9}}
        return {"output": case.prompt}

    def rich(case):
        # Each call is within the maximum; together they pass the maximum of a run's cost.
        return {"output": case.prompt, "usage": {"cost_usd": 10**9}}
    """
)


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = f"hard_totals_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(AGENT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def _evalset(directory: Path, ids: list[str], name: str = "t") -> Path:
    path = directory / f"{name}.evalset.json"
    cases = [{"id": case_id, "prompt": "same", "expected": "same"} for case_id in ids]
    path.write_text(json.dumps({"id": name, "cases": cases}))
    return path


def test_eval_a_target_count_past_the_maximum_is_that_case_s_line_and_the_run_is_kept(
    tmp_path: Path, agent: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _evalset(tmp_path, ["tok", "usd", "fine"])
    db = tmp_path / "v.db"
    code = main(["eval", str(path), "--target", f"{agent}:greedy", "--db", str(db)])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert "case t::tok" in err and "usage.output_tokens" in err
    assert "case t::usd" in err and "usage.cost_usd" in err
    with Store.open(db) as store:
        (summary,) = store.list_runs()
        run = store.load_run(summary.id)
    assert run is not None and not run.complete
    assert [score.case_id for score in run.scores] == ["fine"]


def test_pytest_a_target_count_past_the_maximum_errors_that_item_and_the_run_is_kept(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(hard_agent=AGENT)
    _evalset(pytester.path, ["tok", "usd", "fine"])
    db = pytester.path / "v.db"
    result = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-target=hard_agent:greedy")
    output = result.stdout.str()
    assert "INTERNALERROR" not in output and "OverflowError" not in output
    result.assert_outcomes(passed=1, errors=2)
    assert "usage.output_tokens" in output and "usage.cost_usd" in output
    with Store.open(db) as store:
        (summary,) = store.list_runs()
    assert not summary.complete


#: 91 cases x 100 samples x $1e9 = $9.1e12: each call is allowed, the run's sum is not.
_RICH_CASES = [f"r{i}" for i in range(91)]


def test_eval_a_run_whose_cost_passes_the_total_says_it_was_not_stored(
    tmp_path: Path, agent: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _evalset(tmp_path, _RICH_CASES)
    db = tmp_path / "v.db"
    code = main(
        ["eval", str(path), "--target", f"{agent}:rich", "--repeat", "100", "--db", str(db)]
    )
    err = capsys.readouterr().err
    assert code == 2
    line = one_line(err.strip().splitlines()[-1])
    assert line.startswith("error: the run was not stored: ") and "maximum" in line
    with Store.open(db) as store:
        assert store.run_ids() == []


@pytest.mark.slow
def test_pytest_a_run_whose_cost_passes_the_total_says_it_was_not_stored(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(hard_agent=AGENT)
    _evalset(pytester.path, _RICH_CASES)
    db = pytester.path / "v.db"
    result = pytester.runpytest(
        f"--verdryx-db={db}", "--verdryx-target=hard_agent:rich", "--verdryx-repeat=100"
    )
    output = result.stdout.str()
    assert "INTERNALERROR" not in output and "Traceback" not in output
    result.stdout.fnmatch_lines(["*ERROR: the run was not stored: *maximum*"])
    assert "the run was not stored: the run was not stored" not in output
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    with Store.open(db) as store:
        assert store.run_ids() == []


def test_the_evaluation_raises_run_not_stored_with_the_graded_run(tmp_path: Path) -> None:
    from verdryx_core.evaluation import EvalSettings, Evaluation

    run = _run(_scores(3, cost_usd=3.5 * 10**12))
    with Store.open(tmp_path / "v.db") as store:
        with pytest.raises(RunNotStoredError) as caught:
            Evaluation(EvalSettings(), store=store).save(store, run, cache_entries=[])
        assert store.run_ids() == []
    assert caught.value.run is run
    assert str(caught.value).startswith("the run was not stored: ")


# -- traces: a negative or huge call, a sum past int64, a nested column -------------------------


def _trace(path: Path, costs: list[int], **columns: object) -> Path:
    table = {
        "run_id": [f"r{i % 3}" for i in range(len(costs))],
        "outcome": ["case_resolved"] * len(costs),
        "cost_microusd": pa.array(costs, pa.int64()),
    }
    table.update(columns)
    pq.write_table(pa.table(table), path)
    return path


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    bad=st.integers(-(2**63), -1) | st.integers(MAX_COST_USD * 10**6 + 1, 2**63 - 1),
    where=st.integers(0, 4),
)
def test_a_trace_call_cost_below_zero_or_past_the_maximum_is_one_line(
    tmp_path: Path, bad: int, where: int
) -> None:
    costs = [1_000, 2_000, 3_000, 4_000, 5_000]
    costs[where] = bad
    path = _trace(tmp_path / "calls-neg.parquet", costs)
    with pytest.raises(TraceError) as caught:
        cost_report_for(path)
    message = one_line(str(caught.value))
    assert "calls-neg.parquet" in message and "'cost_microusd'" in message
    assert f"holds {bad} (trace row {where}" in message


def test_a_trace_whose_sum_passes_int64_is_refused_not_wrapped(tmp_path: Path) -> None:
    per_call = MAX_COST_USD * 10**6  # each allowed
    count = MAX_TOTAL_COST_MICROUSD // per_call + 1  # together one call too many
    path = _trace(tmp_path / "calls-rich.parquet", [per_call] * count)
    for read in (cost_report_for, lambda p: reduce_traces(p, detail=True)):
        with pytest.raises(TraceError, match=r"total cost passes the maximum"):
            read(path)
    fits = _trace(tmp_path / "calls-fits.parquet", [per_call] * (count - 1))
    report = cost_report_for(fits)
    assert report.overall.total_cost_usd == MAX_TOTAL_COST_USD  # exact, positive
    assert np.int64(MAX_TOTAL_COST_MICROUSD) > 0


@pytest.mark.parametrize(
    ("column", "values"),
    [
        ("run_id", pa.array([{"a": "x"}, {"a": "y"}])),
        ("outcome", pa.array([["case_resolved"], []])),
        ("decision", pa.array([["budget"], ["ok"]])),
        ("agent_id", pa.array([[("k", "v")], []], pa.map_(pa.string(), pa.string()))),
        ("step", pa.array([[1], [2]])),
        ("ts_millis", pa.array([{"t": 1}, {"t": 2}])),
    ],
)
def test_a_nested_column_in_a_trace_is_one_line_naming_it(
    tmp_path: Path, column: str, values: pa.Array
) -> None:
    columns = {"run_id": ["r1", "r2"], "outcome": ["case_resolved", "escalated"]}
    columns[column] = values
    columns["cost_microusd"] = pa.array([10, 20], pa.int64())
    path = tmp_path / "calls-nested.parquet"
    pq.write_table(pa.table(columns), path)
    with pytest.raises(TraceError) as caught:
        reduce_traces(path, detail=True)
    message = one_line(str(caught.value))
    assert f"'{column}'" in message and "calls-nested.parquet" in message


@pytest.mark.parametrize("cost", [-0.5, 1e9 + 1, "-3", "4e12"])
def test_a_record_file_cost_below_zero_or_past_the_maximum_is_refused(
    tmp_path: Path, cost: object
) -> None:
    path = tmp_path / "runs.ndjson"
    lines = [{"outcome": "case_resolved", "cost_usd": 0.1}, {"outcome": "x", "cost_usd": cost}]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    for read in (cost_report_for, load_run_records):
        with pytest.raises(TraceError, match=r"runs\.ndjson: line 2: cost_usd"):
            read(path)


def test_records_whose_sum_passes_the_total_are_refused() -> None:
    records = ({"outcome": "x", "cost_usd": MAX_COST_USD} for _ in range(9_001))
    with pytest.raises(TraceError, match=r"total cost .* passes the maximum"):
        cost_per_outcome(records)


def test_the_cli_prints_a_negative_trace_cost_as_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _trace(tmp_path / "calls-cli.parquet", [7, -1, 9])
    assert main(["cost-per-correct", "--traces", str(path)]) == 2
    out, err = capsys.readouterr()
    assert "$ -" not in out and "$-" not in out
    one_line(err)


def test_the_report_refuses_a_trace_with_a_negative_cost_instead_of_drawing_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "v.db"
    with Store.open(db) as store:
        store.save_run(_run(_scores(2, cost_usd=0.25), "reported"))
    trace = _trace(tmp_path / "calls-report.parquet", [10, 20, -30_000_000])
    html = tmp_path / "report.html"
    code = main(["report", "--db", str(db), "--traces", str(trace), "-o", str(html)])
    err = capsys.readouterr().err
    assert code == 2 and "'cost_microusd' holds -30000000" in one_line(err)
    assert not html.exists()
    assert main(["report", "--db", str(db), "-o", str(html)]) == 0  # the run itself reports
    assert "$-" not in html.read_text() and "$ -" not in html.read_text()
