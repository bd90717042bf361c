"""What each check reads of a case's one result, and how check scores combine
(docs/scenarios.md, "Checks over the whole result"): `on` (the output, the tool calls, a path
into the metadata or into a JSON output; a missing part fails the check, saying so),
`combine: all`, the load rules, the judge's view of a conversation, and the store keeping
every check (a store of the schema before keeps its runs)."""

from __future__ import annotations

import json
import math
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verdryx_core.cases import CaseOutput, ToolCall
from verdryx_core.errors import EvalSetError
from verdryx_core.evalsets.load import evalset_from_data
from verdryx_core.graders import GradeContext, build_graders
from verdryx_core.llm import StubAdapter
from verdryx_core.runs import CheckResult, EvalRun, Score
from verdryx_core.store import Store

CONTEXT = GradeContext(eval_set_id="s")
RESULT = CaseOutput(
    text='{"status": "refunded", "items": [{"sku": "X-1"}]}',
    tool_calls=(ToolCall(name="refund_order", arguments={"order_id": "A-1", "amount": 12.5}),),
    metadata={"refund": {"amount": 12.5, "currency": "EUR"}},
)


def _case(checks: list[dict[str, Any]], **extra: Any) -> Any:
    data = {"id": "s", "cases": [{"id": "c", "prompt": "refund A-1", "checks": checks, **extra}]}
    return evalset_from_data(data, "mem.evalset.json").cases[0]


def _grade(case: Any, output: Any = RESULT, judge: StubAdapter | None = None) -> Any:
    graders = build_graders(judge=judge)
    return graders[case.grader].grade(case, output, CONTEXT)


def test_each_check_reads_the_part_it_names() -> None:
    case = _case(
        [
            {"grader": "numeric", "on": "metadata.refund.amount", "expected": 12.5},
            {"grader": "exact", "on": "metadata.refund.currency", "expected": "EUR"},
            {"grader": "exact", "on": "output.items.0.sku", "expected": "X-1"},
            {"grader": "json", "on": "metadata.refund", "fields": {"amount": 12.5}},
            {"grader": "icontains", "on": "tool_calls", "expected": '"amount":12.5'},
            {"grader": "tool_trace", "expected_tools": ["refund_order"]},
            {"grader": "icontains", "expected": "REFUNDED"},
        ]
    )
    grade = _grade(case)
    assert [c.value for c in grade.checks] == [1.0] * 7, grade.reason
    assert [c.on for c in grade.checks] == [
        "metadata.refund.amount",
        "metadata.refund.currency",
        "output.items.0.sku",
        "metadata.refund",
        "tool_calls",
        "tool_calls",
        "output",
    ]
    assert grade.value == 1.0


@pytest.mark.parametrize(
    ("on", "output", "why"),
    [
        ("metadata.refund.total", RESULT, "the metadata has no 'refund.total'"),
        ("metadata.refund", CaseOutput(text="x"), "the result reported no metadata"),
        ("output.status", CaseOutput(text="not json"), "the output is not JSON"),
        ("output.items.3", RESULT, "the output has no 'items.3'"),
    ],
)
def test_a_part_the_result_lacks_fails_its_check_saying_which(
    on: str, output: CaseOutput, why: str
) -> None:
    case = _case(
        [{"grader": "exact", "on": on, "expected": "1"}, {"grader": "regex", "expected": "."}]
    )
    grade = _grade(case, output)
    assert grade.checks[0].value == 0.0 and why in (grade.checks[0].reason or "")
    assert grade.value == pytest.approx(0.5)  # measured: the agent did not produce it
    assert f"#1 exact on {on} 0.000 (w 1): on {on!r}: " in (grade.reason or "")


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.floats(0.1, 5)), min_size=1, max_size=5))
def test_combine_all_scores_the_lowest_check(checks: list[tuple[bool, float]]) -> None:
    specs = [
        {"grader": "exact", "expected": "yes" if ok else "no", "weight": weight}
        for ok, weight in checks
    ]
    every = _grade(_case(specs, combine="all"), CaseOutput(text="yes"))
    mean = _grade(_case(specs), CaseOutput(text="yes"))
    assert every.value == (1.0 if all(ok for ok, _ in checks) else 0.0)
    reference = math.fsum(w for ok, w in checks if ok) / math.fsum(w for _, w in checks)
    assert mean.value == pytest.approx(reference)


def test_combine_all_with_partial_scores_is_the_minimum() -> None:
    case = _case(
        [
            {"grader": "tool_trace", "expected_tools": ["lookup_order", "refund_order"]},
            {"grader": "llm_judge", "rubric": "polite?"},
        ],
        combine="all",
    )
    grade = _grade(case, judge=StubAdapter(judge_value=0.8))
    assert [c.value for c in grade.checks] == [0.5, 0.8] and grade.value == 0.5


@pytest.mark.parametrize(
    ("case", "field", "message"),
    [
        (
            {"checks": [{"grader": "exact", "expected": "x", "on": "reply"}]},
            "checks[0].on",
            "'reply' is not a part of the result",
        ),
        (
            {"checks": [{"grader": "exact", "expected": "x", "on": "metadata..a"}]},
            "checks[0].on",
            "empty step",
        ),
        (
            {"checks": [{"grader": "tool_trace", "expected_tools": [], "on": "output"}]},
            "checks[0].on",
            "a tool_trace check reads the tool calls",
        ),
        ({"grader": "exact", "expected": "x", "combine": "all"}, "combine", "multi-check"),
        (
            {"checks": [{"grader": "exact", "expected": "x"}], "combine": "every"},
            "combine",
            "'every' is not allowed here",
        ),
        (
            {"grader": "tool_trace", "expected_tools": ["a"], "check_types": True},
            "check_types",
            "no 'tools'",
        ),
    ],
)
def test_a_bad_part_or_combine_is_one_line_naming_file_case_and_field(
    case: dict[str, Any], field: str, message: str
) -> None:
    data = {"id": "s", "cases": [{"id": "c1", "prompt": "p", **case}]}
    with pytest.raises(EvalSetError) as caught:
        evalset_from_data(data, "bad.evalset.json")
    text = str(caught.value)
    assert "\n" not in text and "bad.evalset.json" in text and "'c1'" in text
    assert f"field '{field}'" in text and message in text, text


def test_a_judge_check_sees_the_case_conversation_not_only_its_last_turn() -> None:
    judge = StubAdapter(judge_value=1.0)
    case = _case(
        [{"grader": "llm_judge", "rubric": "Does it keep the earlier promise?"}],
        system="You are a support agent.",
        messages=[
            {"role": "user", "content": "My order A-1 is late."},
            {"role": "assistant", "content": "I will refund the shipping."},
            {"role": "user", "content": "So, did you?"},
        ],
    )
    _grade(case, CaseOutput(text="Yes, refunded."), judge=judge)
    (call,) = [c for c in judge.calls if c.kind == "judge"]
    assert "system: You are a support agent." in call.prompt
    assert "assistant: I will refund the shipping." in call.prompt
    assert call.prompt.rstrip().endswith("user: So, did you?")


def _run(checks: tuple[CheckResult, ...]) -> EvalRun:
    score = Score(case_id="c", eval_set_id="s", value=0.5, grader="checks", checks=checks)
    return EvalRun(id="r", model="stub", started_at=datetime.now(UTC), scores=(score,))


def test_the_store_keeps_every_check_and_a_store_of_the_schema_before_keeps_its_runs(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v.db"
    with Store.open(path) as store:
        store.save_run(_run(()))
    # Back to the schema before checks were stored: no column, version 3 (and none of the
    # later versions' columns: clusters, baseline samples, outputs that failed grading, each
    # sample's pass).
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE scores DROP COLUMN checks")
        db.execute("ALTER TABLE scores DROP COLUMN cluster")
        db.execute("ALTER TABLE baseline_cases DROP COLUMN samples")
        db.execute("ALTER TABLE baseline_cases DROP COLUMN cluster")
        db.execute("ALTER TABLE runs DROP COLUMN set_targets")
        db.execute("ALTER TABLE baselines DROP COLUMN set_targets")
        db.execute("ALTER TABLE scores DROP COLUMN failed_by_output")
        db.execute("ALTER TABLE scores DROP COLUMN passes")
        db.execute("ALTER TABLE baseline_cases DROP COLUMN passes")
        db.execute("PRAGMA user_version = 3")
    checks = (
        CheckResult(grader="tool_trace", weight=2.0, value=0.5, reason="a\nb", on="tool_calls"),
        CheckResult(grader="llm_judge", weight=1.0, value=None, unmeasured="no judge\x00"),
    )
    with Store.open(path) as store:
        old = store.load_run("r")
        assert old is not None and old.scores[0].checks == ()
        store.save_run(
            EvalRun(id="r2", model="stub", started_at=datetime.now(UTC), scores=_run(checks).scores)
        )
        new = store.load_run("r2")
    assert new is not None and new.scores[0].checks == checks
    with sqlite3.connect(path) as db:
        (text,) = db.execute("SELECT checks FROM scores WHERE run_id = 'r2'").fetchone()
    assert json.loads(text)[0] == {
        "grader": "tool_trace",
        "weight": 2.0,
        "value": 0.5,
        "unmeasured": None,
        "reason": "a\nb",
        "on": "tool_calls",
    }
    assert "\x00" not in text  # escaped: a TEXT column of either backend holds it


def test_a_broken_checks_column_names_itself_and_repair_clears_it(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    with Store.open(path) as store:
        store.save_run(_run((CheckResult(grader="exact", weight=1.0, value=1.0),)))
    with sqlite3.connect(path) as db:
        db.execute('UPDATE scores SET checks = \'[{"grader": "exact", "value": 7}]\'')
    with Store.open(path) as store:
        with pytest.raises(Exception, match=r"scores\.checks") as caught:
            store.load_run("r")
        assert "verdryx repair" in str(caught.value)
        changed = store.repair_run("r")
        assert any("scores.checks -> NULL" in item for item in changed)
        repaired = store.load_run("r")
    assert repaired is not None and repaired.scores[0].checks == ()
    assert repaired.scores[0].value == 0.5


def test_the_html_report_lists_each_check_escaped(tmp_path: Path) -> None:
    from verdryx_core.reporting.html import write_report

    hostile = "<script>x</script>\x1b[2J \u202eevil"
    checks = (
        CheckResult(grader="tool_trace", weight=2.0, value=0.5, reason=hostile, on="tool_calls"),
        CheckResult(grader="numeric", weight=1.0, value=0.0, on="metadata.refund.amount"),
    )
    with Store.open(tmp_path / "v.db") as store:
        store.save_run(_run(checks))
        page = write_report(store, tmp_path / "report.html").read_text(encoding="utf-8")
    table = page[page.index('<table class="checks">') :]
    table = table[: table.index("</table>")]
    assert table.count("<tr>") == 3  # the head and one row per check
    assert "metadata.refund.amount" in table and "0.500" in table and "tool_calls" in table
    assert "<script" not in table and "&lt;script&gt;" in table
    assert "\x1b" not in page and "\u202e" not in page
