"""The plugin's session state crosses xdist as builtins and merges back whole."""

from __future__ import annotations

import json

from pytest_verdryx.state import SessionState
from verdryx_core.runs import Score
from verdryx_core.store import CacheEntry


def _score(case_id: str, value: float, bar: float, samples: tuple[float, ...] = ()) -> Score:
    return Score(
        case_id=case_id,
        eval_set_id="s",
        value=value,
        grader="exact",
        passed=value >= bar,
        bar=bar,
        samples=samples,
    )


def _worker(nodeids: list[str], scores: list[Score]) -> SessionState:
    state = SessionState()
    state.order = {nodeid: index for index, nodeid in enumerate(nodeids)}
    state.expected = set(nodeids)
    state.expected_count = len(nodeids)
    for nodeid, score in zip(nodeids, scores, strict=True):
        state.add_score(nodeid, score)
    state.known_keys = {f"s::{score.case_id}" for score in scores}
    state.calls.hits, state.calls.misses, state.calls.saved_usd = 1, 2, 0.5
    state.calls.entries.append(
        CacheEntry(key="k-" + nodeids[0], model="m", response={"text": "t"}, cost_usd=0.25)
    )
    state.calls.unpriced.add("m")
    return state


def test_two_workers_merge_into_the_controller_state() -> None:
    first = _worker(["a.evalset.json::c1"], [_score("c1", 0.9, 0.5, (1.0, 0.8))])
    second = _worker(["a.evalset.json::c2"], [_score("c2", 0.4, 0.7)])
    second.stopped_early = True
    second.not_run.add("a.evalset.json::c3")
    controller = SessionState()
    for worker in (first, second):
        payload = json.loads(json.dumps(worker.to_payload()))  # builtins only
        controller.merge(payload)
    assert [score.case_id for score in controller.ordered_scores()] == ["c1", "c2"]
    # The bar each score was decided against crosses too (the summary counts with it).
    assert [score.bar for score in controller.ordered_scores()] == [0.5, 0.7]
    assert controller.stability() == {"s::c1": "stable-pass"}
    assert controller.expected_count == 1
    assert controller.known_keys == {"s::c1", "s::c2"}
    assert controller.stopped_early
    assert controller.not_run == {"a.evalset.json::c3"}
    calls = controller.calls
    assert (calls.hits, calls.misses, calls.saved_usd) == (2, 4, 1.0)
    assert [entry.key for entry in calls.entries] == [
        "k-a.evalset.json::c1",
        "k-a.evalset.json::c2",
    ]
    assert calls.unpriced == {"m"}


def test_missing_counts_scores_and_skips() -> None:
    state = _worker(["x::a", "x::b"], [_score("a", 1.0, 0.5), _score("b", 0.0, 0.5)])
    state.expected.add("x::c")
    state.expected_count = 3
    assert state.missing() == 1  # c errored before it could score
    state.not_run.add("x::c")
    assert state.missing() == 0  # c was skipped: not run is not an error


def test_a_score_crosses_whole_its_rare_fields_included() -> None:
    """Scores travel as rows under one list of field names; what only some scores carry
    (notes, required, cluster, workspaces) goes with its row."""
    plain = _score("p", 1.0, 0.5)
    rare = Score(
        case_id="r",
        eval_set_id="s",
        value=0.25,
        grader="contains",
        passed=False,
        bar=0.5,
        output="out",
        expected="exp",
        reason="why",
        fingerprint="f" * 64,
        notes={"stdout": "x"},
        required=True,
        cluster="c-1",
        workspaces=("/tmp/w",),
    )
    worker = _worker(["x::p", "x::r"], [plain, rare])
    controller = SessionState()
    controller.merge(json.loads(json.dumps(worker.to_payload())))
    assert controller.ordered_scores() == [plain, rare]
