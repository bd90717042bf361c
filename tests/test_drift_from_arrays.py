"""`verdryx drift` reads the gate's four numbers a case from the store's arrays
(`compare_stored`, `Store.score_pairs`) instead of building every score and baseline case:
on hypothesis-drawn stores (added, removed, edited, unmeasured and twice-scored cases, other
eval sets, sampled and clustered cases, broken rows) it gives what `compare` gives on the
objects, every number, list and refusal, or None where only the objects can answer
(docs/statistics.md, "Reproducibility and speed")."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verdryx_core.cli import main
from verdryx_core.gating.compare import GateOutcome, GatePolicy, compare
from verdryx_core.gating.stored import compare_stored
from verdryx_core.runs import Baseline, BaselineCase, EvalRun, Score
from verdryx_core.store import Store

START = datetime(2026, 3, 1, tzinfo=UTC)

#: A case as a run scores it: eval set, case id, score (None: unmeasured), fingerprint,
#: samples, cluster. Plain cases are what the arrays read; the others need the objects.
_score = st.none() | st.sampled_from([0.0, 0.25, 0.5, 1.0]) | st.floats(0, 1)
_plain_case = st.tuples(
    st.sampled_from(["s", "t"]),
    st.sampled_from([f"c{i}" for i in range(8)] + ["a::b"]),
    _score,
    st.sampled_from(["", "f1", "f2"]),
    st.just(()),
    st.none(),
)
_any_case = st.tuples(
    st.sampled_from(["s", "t", "u:v"]),
    st.sampled_from([f"c{i}" for i in range(8)] + ["a::b"]),
    _score,
    st.sampled_from(["", "f1", "f2"]),
    st.sampled_from([(), (), (), (0.5, 1.0)]),
    st.sampled_from([None, None, None, "k"]),
)


def _cases(plain: bool, *, unique: bool) -> st.SearchStrategy[list[tuple[Any, ...]]]:
    return st.lists(
        _plain_case if plain else _any_case,
        max_size=14,
        unique_by=(lambda case: (case[0], case[1])) if unique else None,
    )


def _run(run_id: str, cases: list[tuple[Any, ...]], at: datetime, **fields: Any) -> EvalRun:
    return EvalRun(
        id=run_id,
        model=fields.pop("model", "m"),
        started_at=at,
        finished_at=at,
        eval_set_ids=tuple(sorted({case[0] for case in cases} | {"s"})),
        complete=True,
        scores=tuple(
            Score(
                eval_set_id=set_id,
                case_id=case_id,
                value=value,
                unmeasured="timeout" if value is None else None,
                grader="exact",
                fingerprint=fingerprint,
                samples=samples if value is not None else (),
                cluster=cluster,
            )
            for set_id, case_id, value, fingerprint, samples, cluster in cases
        ),
        **fields,
    )


def _baseline(cases: list[tuple[Any, ...]], **fields: Any) -> Baseline:
    unique = {(case[0], case[1]): case for case in cases if case[2] is not None}
    return Baseline(
        id="b-1",
        label="v1",
        run_id="base",
        mean=0.5,
        created_at=START,
        model=fields.get("model", "m"),
        judge_model=fields.get("judge_model"),
        cases=tuple(
            BaselineCase(
                eval_set_id=set_id,
                case_id=case_id,
                value=value,
                fingerprint=fingerprint,
                samples=samples,
                cluster=cluster,
            )
            for set_id, case_id, value, fingerprint, samples, cluster in unique.values()
        ),
    )


def _same(stored: GateOutcome, objects: GateOutcome, *, deltas: bool) -> None:
    assert stored.verdict == objects.verdict
    assert stored.refused == objects.refused and stored.not_gated == objects.not_gated
    assert stored.baseline == objects.baseline
    mine, theirs = stored.result, objects.result
    assert (mine is None) == (theirs is None)
    if mine is None or theirs is None:
        return
    for name in (
        "matched",
        "added",
        "removed",
        "changed",
        "unmeasured",
        "note",
        "model_change",
        "target_change",
        "metric",
        "case_drops",
        "fdr",
    ):
        assert getattr(mine, name) == getattr(theirs, name), name
    assert mine.deltas == (theirs.deltas if deltas else ())
    assert (mine.report is None) == (theirs.report is None)
    if mine.report is not None and theirs.report is not None:
        assert mine.report.to_dict() == theirs.report.to_dict()


@settings(max_examples=40, deadline=None)
@given(
    sides=st.sampled_from([(True, True), (True, True), (True, False), (False, True)]).flatmap(
        lambda kinds: st.tuples(
            _cases(kinds[0], unique=True), _cases(kinds[1], unique=kinds[0] and kinds[1])
        )
    ),
    model=st.sampled_from(["m", "m", "other"]),
    allow=st.booleans(),
    min_coverage=st.sampled_from([0.0, 0.5, 1.0]),
    two_sample=st.booleans(),
    deltas=st.booleans(),
)
def test_the_arrays_give_what_the_objects_give(
    tmp_path_factory: pytest.TempPathFactory,
    sides: tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]],
    model: str,
    allow: bool,
    min_coverage: float,
    two_sample: bool,
    deltas: bool,
) -> None:
    before, now = sides
    path = tmp_path_factory.mktemp("pairs") / "v.db"
    baseline = _baseline(before)
    current = _run("now", now, START + timedelta(hours=1), model=model)
    gate = GatePolicy(
        iterations=200,
        allow_model_change=allow,
        min_coverage=min_coverage,
        two_sample_interval=two_sample,
    )
    with Store.open(path) as store:
        store.save_baseline(baseline)
        store.save_run(current)
        run = store.load_run("now")
        full = store.get_baseline("v1")
        header = store.get_baseline("v1", cases=False)
        (summary,) = store.list_runs()
        assert run is not None and full is not None and header is not None
        assert header.cases == () and header.id == full.id and header.mean == full.mean
        objects = compare(run, full, gate=gate, history=store)
        stored = compare_stored(store, summary, header, gate=gate, deltas=deltas)
    plain = all(":" not in case[0] and not case[4] and case[5] is None for case in [*before, *now])
    twice = len({(case[0], case[1]) for case in now}) < len(now)
    if plain and not twice:
        assert stored is not None  # nothing here needs the objects
    if stored is not None:
        _same(stored, objects, deltas=deltas)


def test_the_plain_store_is_read_as_arrays_and_a_window_as_objects(tmp_path: Path) -> None:
    cases = [("s", f"c{i}", i / 10, "f", (), None) for i in range(10)]
    with Store.open(tmp_path / "v.db") as store:
        store.save_baseline(_baseline(cases))
        store.save_run(_run("now", cases, START))
        (summary,) = store.list_runs()
        header = store.get_baseline("v1", cases=False)
        assert header is not None
        assert compare_stored(store, summary, header) is not None
        assert compare_stored(store, summary, header, gate=GatePolicy(window=2)) is None
        assert compare_stored(store, summary, header, gate=GatePolicy(metric="pass")) is None


def test_a_broken_score_the_arrays_meet_is_named_by_the_objects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = [("s", f"c{i}", i / 10, "f", (), None) for i in range(10)]
    db = tmp_path / "v.db"
    with Store.open(db) as store:
        store.save_baseline(_baseline(cases))
        store.save_run(_run("now", cases, START))
    assert main(["drift", "--baseline", "v1", "--db", str(db), "--json"]) in (0, 1)
    document = json.loads(capsys.readouterr().out)
    assert document["matched"] == 10 and document["paired"]["n"] == 10
    connection = sqlite3.connect(db)
    with connection:
        connection.execute("UPDATE scores SET value = 'n/a' WHERE case_id = 'c3'")
    connection.close()
    assert main(["drift", "--baseline", "v1", "--db", str(db), "--json"]) == 2
    err = capsys.readouterr().err
    assert "run now" in err and "case s::c3" in err and "column scores.value" in err
