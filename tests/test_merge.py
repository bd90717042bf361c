"""`verdryx merge`: stores copied into one SQLite or PostgreSQL store, conflicts refused with
nothing written, a second merge changing nothing (docs/store.md, "Merging stores")."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.store_support import BACKENDS, store_target
from verdryx_core.addons.contracts.history import save_verdicts, verdicts
from verdryx_core.cli import main
from verdryx_core.runs import Baseline, EvalRun, Score
from verdryx_core.store import CacheEntry, Store, StoreTarget

T0 = datetime(2026, 2, 1, 8, 0, tzinfo=UTC)


def run_of(run_id: str, values: list[float | None], **extra: Any) -> EvalRun:
    return EvalRun(
        id=run_id,
        model="stub",
        started_at=extra.pop("started_at", T0),
        eval_set_ids=("s",),
        scores=tuple(
            Score(
                case_id=f"c{i}",
                eval_set_id="s",
                value=value,
                grader="exact",
                unmeasured=None if value is not None else "no number",
                output=f"answer {i}",
            )
            for i, value in enumerate(values)
        ),
        **extra,
    )


def fill(target: StoreTarget, prefix: str, *, shift: int = 0) -> None:
    """A store as one CI shard leaves it: runs, a baseline, cache entries, verdicts."""
    with Store.open(target) as store:
        runs = [
            run_of(
                f"{prefix}-{i}",
                [1.0, 0.5, None][: i + 1],
                started_at=T0 + timedelta(minutes=shift + i),
                run_group="pipeline-7",
                shard=f"{shift + 1}/2",
                partial=True,
            )
            for i in range(3)
        ]
        for run in runs:
            store.save_run(run)
        store.save_baseline(
            Baseline.from_run(runs[1], id=f"{prefix}-base", label=prefix, created_at=T0)
        )
        store.cache_put_many(
            [
                CacheEntry(
                    key=f"{prefix}-k{i}",
                    model="stub",
                    response={"text": f"{prefix} {i}"},
                    cost_usd=0.01 * i,
                )
                for i in range(3)
            ]
            + [CacheEntry(key="shared-key", model="stub", response={"text": "same"}, cost_usd=0.0)]
        )
        save_verdicts(
            store,
            [
                {
                    "agent_id": "agent",
                    "task_id": f"{prefix}-task",
                    "verdict": "PASS",
                    "reason": "all checks",
                    "bundle_hash": None,
                    "run_id": runs[0].id,
                    "created_at": (T0 + timedelta(minutes=shift)).isoformat(),
                }
            ],
        )


def dump(target: StoreTarget) -> dict[str, Any]:
    """Everything a store holds, through the store interface."""
    with Store.open(target, read_only=True) as store:
        return {
            "runs": [store.load_run(run_id) for run_id in store.run_ids()],
            "listed": [summary.id for summary in store.list_runs()],
            "baselines": [store.get_baseline(row[0]) for row in store.list_baselines()],
            "cache": [
                json.dumps([entry.key, entry.model, entry.response, entry.cost_usd])
                for entry in store.cache_entries()
            ],
            "verdicts": verdicts(store),
        }


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


@pytest.fixture(params=BACKENDS)
def into(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreTarget]:
    with store_target(request.param, tmp_path, "all.db") as where:
        yield where


def _arg(target: StoreTarget) -> str:
    return getattr(target, "url", str(target))


def test_merge_round_trips_every_row_and_twice_changes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, into: StoreTarget
) -> None:
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    fill(a, "a")
    fill(b, "b", shift=1)
    code, out, err = cli(capsys, "merge", str(a), str(b), "--into", _arg(into), "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["runs_added"] == 6 and summary["baselines_added"] == 2
    assert summary["cache_added"] == 7 and summary["cache_present"] == 1  # shared-key
    assert summary["verdicts_added"] == 2
    merged, from_a, from_b = dump(into), dump(a), dump(b)
    assert merged["runs"] == from_a["runs"] + from_b["runs"]
    # Same created_at: the one merged last is listed first, as if saved in that order.
    assert merged["baselines"] == from_b["baselines"] + from_a["baselines"]
    assert sorted(merged["cache"]) == sorted(set(from_a["cache"]) | set(from_b["cache"]))
    assert sorted(merged["verdicts"], key=str) == sorted(
        from_a["verdicts"] + from_b["verdicts"], key=str
    )
    with Store.open(into, read_only=True) as store:
        assert [r.shard for r in store.list_group_runs("pipeline-7")].count("2/2") == 3
    # Twice: nothing added, nothing changed.
    code, out, err = cli(capsys, "merge", str(a), str(b), "--into", _arg(into))
    assert code == 0, err
    assert ": added 0 runs, 0 baselines, 0 cache entries, 0 contract verdicts;" in out
    assert "already there: 6 runs, 2 baselines, 8 cache entries, 2 contract verdicts" in out
    assert dump(into) == merged


def test_a_conflicting_run_refuses_the_merge_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, into: StoreTarget
) -> None:
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    fill(a, "a")
    fill(b, "b")
    with Store.open(into) as store:
        store.save_run(run_of("a-1", [0.0, 0.0]))  # same id as a's, other scores
    with Store.open(b) as store:
        store.save_run(run_of("a-2", [1.0]))  # a's a-2 differs too
    before = dump(into)
    code, out, err = cli(capsys, "merge", str(a), str(b), "--into", _arg(into))
    assert code == 2 and out == ""
    error = err.splitlines()[-1]  # after one progress line per source
    assert err.splitlines()[:2] == [f"reading {a}: 3 runs", f"reading {b}: 4 runs"]
    assert error.startswith("error: merge refused")
    assert "run a-1" in error and "run a-2" in err and "nothing written" in err
    assert str(b) in err  # names where each side came from
    assert dump(into) == before


def test_a_conflicting_baseline_and_verdict_are_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    a, b, into = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "all.db"
    fill(a, "x")
    fill(b, "x")  # identical: merges cleanly
    code, _, err = cli(capsys, "merge", str(a), str(b), "--into", str(into))
    assert code == 0, err
    with Store.open(b) as store:
        baseline = store.get_baseline("x-base")
        assert baseline is not None
        store.save_baseline(Baseline(**{**_fields(baseline), "label": "renamed"}))
        verdict = verdicts(store)[0]
        save_verdicts(store, [{**verdict, "verdict": "FAIL"}])
    code, _, err = cli(capsys, "merge", str(a), str(b), "--into", str(into))
    assert code == 2 and "baseline x-base" in err and "contract verdict x-task" in err


def test_a_cache_entry_with_another_answer_keeps_the_first(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    a, b, into = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "all.db"
    for path, text in ((a, "first"), (b, "second")):
        with Store.open(path) as store:
            store.cache_put_many(
                [CacheEntry(key="k", model="stub", response={"text": text}, cost_usd=0.0)]
            )
    code, out, err = cli(capsys, "merge", str(a), str(b), "--into", str(into))
    assert code == 0, err
    assert "1 cache entries had another answer there and kept it" in out
    with Store.open(into) as store:
        assert store.cache_get_many(["k"]) == {"k": ({"text": "first"}, 0.0)}


def test_a_missing_source_creates_no_target(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = cli(
        capsys, "merge", str(tmp_path / "nope.db"), "--into", str(tmp_path / "all.db")
    )
    assert code == 2 and "no verdryx store" in err and "nope.db" in err
    assert list(tmp_path.iterdir()) == []


def test_a_store_cannot_be_merged_into_itself(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    fill(tmp_path / "a.db", "a")
    code, _, err = cli(capsys, "merge", str(tmp_path / "a.db"), "--into", str(tmp_path / "a.db"))
    assert code == 2 and "both a source and the target" in err


def _fields(item: Any) -> dict[str, Any]:
    return {name: getattr(item, name) for name in item.__dataclass_fields__}
