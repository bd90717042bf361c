"""`verdryx gate` (docs/sharding.md): a run group's shards, written through the store API,
assembled into one run and gated once, on SQLite (one file, or merged files) and PostgreSQL."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from junitparser import Error, Failure, JUnitXml

from tests.store_support import BACKENDS, store_target
from verdryx_core.cli import main
from verdryx_core.evaluation.sharding import shard_of
from verdryx_core.gating.baselines import write_baseline_file
from verdryx_core.runs import Baseline, EvalRun, Score
from verdryx_core.store import Store, StoreTarget

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
SETS = ("support", "billing")


def _run(run_id: str, values: dict[tuple[str, str], float | None], **extra: object) -> EvalRun:
    return EvalRun(
        id=run_id,
        model=str(extra.pop("model", "stub")),
        started_at=extra.pop("started_at", T0),  # type: ignore[arg-type]
        finished_at=T0 + timedelta(minutes=1),
        eval_set_ids=tuple(sorted({set_id for set_id, _ in values})),
        scores=tuple(
            Score(
                case_id=case_id,
                eval_set_id=set_id,
                value=value,
                grader="exact",
                unmeasured=None if value is not None else "no answer",
                tokens=7,
                cost_usd=0.001,
            )
            for (set_id, case_id), value in values.items()
        ),
        **extra,  # type: ignore[arg-type]
    )


def _values(seed: int, shift: float = 0.0) -> dict[tuple[str, str], float | None]:
    rng = random.Random(seed)
    values: dict[tuple[str, str], float | None] = {}
    for set_id in SETS:
        for i in range(30):
            value = min(1.0, max(0.0, rng.uniform(0.5, 1.0) + shift))
            values[(set_id, f"case-{i:02d}")] = None if i == 7 else value
    return values


BASE = _values(1)


def _shards(run: EvalRun, total: int, group: str) -> list[EvalRun]:
    """The run as `total` shard runs would have stored it."""
    parts = []
    for k in range(1, total + 1):
        scores = tuple(s for s in run.scores if shard_of(s.eval_set_id, s.case_id, total) == k)
        parts.append(
            replace(
                run,
                id=f"{run.id}-shard{k}",
                scores=scores,
                eval_set_ids=tuple(sorted({s.eval_set_id for s in scores})),
                started_at=run.started_at + timedelta(seconds=k),
                run_group=group,
                shard=f"{k}/{total}",
                partial=True,
            )
        )
    return parts


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def _arg(target: StoreTarget) -> str:
    return getattr(target, "url", str(target))


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--root` defaults to the current directory: each test its own, with no baseline file."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture(params=BACKENDS)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreTarget]:
    with store_target(request.param, tmp_path) as where:
        yield where


def _seed(target: StoreTarget, runs: list[EvalRun]) -> None:
    with Store.open(target) as store:
        baseline_run = _run("baseline-run", BASE, started_at=T0 - timedelta(days=1))
        store.save_run(baseline_run)
        store.save_baseline(Baseline.from_run(baseline_run, id="b-1", label="v1"))
        for run in runs:
            store.save_run(run)


_REPORT_KEYS = ("verdict", "mean_score", "baseline_mean", "delta", "ci_low", "ci_high", "n")


@pytest.mark.parametrize(("shift", "exit_code"), [(0.0, 0), (-0.25, 1)])
def test_three_shards_gate_like_the_unsharded_run(
    capsys: pytest.CaptureFixture[str], target: StoreTarget, shift: float, exit_code: int
) -> None:
    whole = _run("whole", _values(2, shift) if shift else BASE)
    _seed(target, [whole, *_shards(replace(whole, id="ci"), 3, "pipeline-7")])

    code, out, _ = cli(
        capsys, "drift", "--baseline", "v1", "--run", "whole", "--db", _arg(target), "--json"
    )
    assert code == exit_code
    unsharded = json.loads(out)
    code, out, err = cli(
        capsys, "gate", "--group", "pipeline-7", "--baseline", "v1", "--db", _arg(target), "--json"
    )
    assert code == exit_code, err
    gated = json.loads(out)
    assert {k: gated[k] for k in _REPORT_KEYS} == {k: unsharded[k] for k in _REPORT_KEYS}
    assert gated["verdict"] == ("on-track" if exit_code == 0 else "regressed")
    assert gated["shards"] == 3 and gated["cases"] == len(whole.scores)

    with Store.open(target, read_only=True) as store:
        assembled = store.load_run(gated["run_id"])
    assert assembled is not None
    assert assembled.complete and not assembled.partial
    assert assembled.shard is None and assembled.run_group == "pipeline-7"
    assert {s.key: s for s in assembled.scores} == {s.key: s for s in whole.scores}
    assert assembled.mean_score == pytest.approx(whole.mean_score)
    assert assembled.total_cost_usd == pytest.approx(whole.total_cost_usd)


def test_gating_twice_replaces_the_assembled_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "v.db"
    _seed(db, _shards(_run("ci", BASE), 3, "g"))
    first = json.loads(
        cli(capsys, "gate", "--group", "g", "--baseline", "v1", "--db", str(db), "--json")[1]
    )
    second = json.loads(
        cli(capsys, "gate", "--group", "g", "--baseline", "v1", "--db", str(db), "--json")[1]
    )
    assert first["run_id"] == second["run_id"]
    with Store.open(db, read_only=True) as store:
        assert len(store.run_ids()) == 1 + 3 + 1  # baseline run, shards, one assembled run


def test_shard_stores_merged_with_verdryx_merge(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The SQLite path of docs/sharding.md: each shard job uploads its own store."""
    whole = _run("ci", _values(3, -0.3))
    files = []
    for shard in _shards(whole, 3, "github-99-1"):
        path = tmp_path / f"shard{shard.shard.replace('/', 'of')}.db"  # type: ignore[union-attr]
        with Store.open(path) as store:
            store.save_run(shard)
        files.append(str(path))
    merged = tmp_path / "all.db"
    _seed(merged, [])
    code, _, err = cli(capsys, "merge", *files, "--into", str(merged))
    assert code == 0, err
    code, out, _ = cli(
        capsys, "gate", "--group", "github-99-1", "--baseline", "v1", "--db", str(merged)
    )
    assert code == 1
    assert "3 shards assembled" in out and "verdict: REGRESSED" in out


def test_a_missing_shard_is_named_and_never_gated(
    capsys: pytest.CaptureFixture[str], target: StoreTarget, tmp_path: Path
) -> None:
    shards = _shards(_run("ci", BASE), 4, "g")
    _seed(target, [shards[0], shards[2]])
    junit = tmp_path / "gate.xml"
    code, out, err = cli(
        capsys, "gate", "--group", "g", "--baseline", "v1", "--db", _arg(target),
        "--junitxml", str(junit),
    )  # fmt: skip
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert "missing shards 2/4, 4/4 of 4 (arrived: 1/4, 3/4)" in err
    with Store.open(target, read_only=True) as store:
        assert sorted(store.run_ids()) == sorted(["baseline-run", shards[0].id, shards[2].id])
    case = _gate_case(junit)
    (error,) = case.result
    assert isinstance(error, Error)
    assert "missing shards 2/4, 4/4" in error.message


def test_shards_counted_from_the_flag(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    _seed(db, _shards(_run("ci", BASE), 3, "g"))
    code, _, err = cli(
        capsys, "gate", "--group", "g", "--baseline", "v1", "--db", str(db), "--shards", "4"
    )
    assert code == 2 and "split into 3 shards, not 4 (--shards)" in err
    code, _, err = cli(
        capsys, "gate", "--group", "nope", "--baseline", "v1", "--db", str(db), "--shards", "2"
    )
    assert code == 2 and "run group 'nope' has no shard runs" in err and "expected 2 shards" in err


def _incomplete(runs: list[EvalRun]) -> list[EvalRun]:
    return [replace(runs[0], complete=False), *runs[1:]]


def _other_model(runs: list[EvalRun]) -> list[EvalRun]:
    return [runs[0], replace(runs[1], model="claude-x"), runs[2]]


def _overlapping(runs: list[EvalRun]) -> list[EvalRun]:
    return [runs[0], replace(runs[1], scores=runs[1].scores + runs[0].scores[:1]), runs[2]]


def _other_count(runs: list[EvalRun]) -> list[EvalRun]:
    return [runs[0], replace(runs[1], shard="2/4"), runs[2]]


@pytest.mark.parametrize(
    ("break_it", "words"),
    [
        (_incomplete, "the run of shard 1/3 (run ci-shard1) is incomplete"),
        (_other_model, "its shards measured different models"),
        (_overlapping, "1 case(s) measured by two shards"),
        (_other_count, "mixes shard counts 3, 4"),
    ],
)
def test_groups_that_are_not_one_run_are_refused(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    break_it: Callable[[list[EvalRun]], list[EvalRun]],
    words: str,
) -> None:
    db = tmp_path / "v.db"
    _seed(db, break_it(_shards(_run("ci", BASE), 3, "g")))
    code, out, err = cli(capsys, "gate", "--group", "g", "--baseline", "v1", "--db", str(db))
    assert code == 2 and out == ""
    assert words in err and err.count("\n") == 1


def test_a_rerun_shard_counts_by_its_newest_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "v.db"
    shards = _shards(_run("ci", BASE), 3, "g")
    failed_first = replace(shards[1], id="ci-shard2-attempt1", complete=False, started_at=T0)
    _seed(db, [failed_first, *shards])
    code, out, err = cli(capsys, "gate", "--group", "g", "--baseline", "v1", "--db", str(db))
    assert code == 0, err
    assert "newest run counts, not ci-shard2-attempt1" in out


def test_no_store_is_not_created(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = cli(
        capsys, "gate", "--group", "g", "--baseline", "v1", "--db", str(tmp_path / "none.db")
    )
    assert code == 2 and "no store at" in err
    assert not (tmp_path / "none.db").exists()


def _gate_case(path: Path) -> object:
    xml = JUnitXml.fromfile(str(path))
    (suite,) = list(xml)
    (case,) = list(suite)
    assert (case.classname, case.name) == ("verdryx", "gate")
    return case


def _suite_properties(path: Path) -> dict[str, str]:
    (suite,) = list(JUnitXml.fromfile(str(path)))
    return {prop.name: prop.value for prop in suite.properties()}


@pytest.mark.parametrize(("shift", "outcome"), [(0.0, "passed"), (-0.25, "failure")])
def test_junit_carries_the_gate_testcase_and_properties(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, shift: float, outcome: str
) -> None:
    db = tmp_path / "v.db"
    _seed(db, _shards(_run("ci", _values(2, shift) if shift else BASE), 3, "g"))
    junit = tmp_path / "out" / "gate.xml"
    code, out, _ = cli(
        capsys, "gate", "--group", "g", "--baseline", "v1", "--db", str(db),
        "--junitxml", str(junit), "--json",
    )  # fmt: skip
    document = json.loads(out)
    case = _gate_case(junit)
    properties = _suite_properties(junit)
    assert properties["verdryx.run_id"] == document["run_id"]
    assert properties["verdryx.verdict"] == document["verdict"]
    assert properties["verdryx.baseline"] == "v1"
    assert properties["verdryx.run_group"] == "g" and properties["verdryx.shards"] == "3"
    assert float(properties["verdryx.delta"]) == pytest.approx(document["delta"], rel=1e-5)
    assert float(properties["verdryx.mean_score"]) == pytest.approx(
        document["mean_score"], rel=1e-5
    )
    assert properties["verdryx.complete"] == "true"
    # The interval the verdict used (docs/ci.md): the paired one, as the pytest face writes.
    assert document["paired"] is not None
    for end in ("ci_low", "ci_high"):
        assert properties[f"verdryx.{end}"] == properties[f"verdryx.paired_{end}"] != ""
        assert float(properties[f"verdryx.{end}"]) == pytest.approx(
            document["paired"][end], rel=1e-5
        )
    if outcome == "passed":
        assert code == 0 and case.is_passed  # type: ignore[attr-defined]
    else:
        assert code == 1
        (failure,) = case.result  # type: ignore[attr-defined]
        assert isinstance(failure, Failure)
        assert failure.message.startswith("verdryx gate: REGRESSED against baseline v1: mean ")


def test_github_actions_gets_the_annotation_and_the_job_summary(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "v.db"
    _seed(db, _shards(_run("ci", _values(2, -0.25)), 3, "g"))
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, out, _ = cli(capsys, "gate", "--group", "g", "--baseline", "v1", "--db", str(db))
    assert code == 1
    (annotation,) = [line for line in out.splitlines() if line.startswith("::error")]
    assert annotation.startswith("::error title=verdryx gate%3A regressed::verdryx gate: REGRESSED")
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n## verdryx: REGRESSED against baseline v1\n")
    assert "| delta |" in text

    # With the committed baseline file, the annotation is pinned to it.
    write_baseline_file(tmp_path, Baseline.from_run(_run("b", BASE), id="b-2", label="v1"))
    code, out, _ = cli(capsys, "gate", "--group", "g", "--baseline", "v1", "--db", str(db))
    assert "::error file=.verdryx/baselines/v1.json,title=verdryx gate%3A regressed::" in out

    monkeypatch.setenv("GITHUB_ACTIONS", "false")
    before = summary.read_text(encoding="utf-8")
    code, out, _ = cli(capsys, "gate", "--group", "g", "--baseline", "v1", "--db", str(db))
    assert code == 1 and "::error" not in out
    assert summary.read_text(encoding="utf-8") == before


def test_a_refused_gate_is_annotated_and_summarised(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "v.db"
    _seed(db, _shards(_run("ci", BASE), 3, "g")[:2])
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, out, err = cli(capsys, "gate", "--group", "g", "--baseline", "v1", "--db", str(db))
    assert code == 2
    assert out.startswith("::error title=verdryx gate%3A refused::verdryx gate refused")
    assert "missing shard 3/3" in err
    assert summary.read_text(encoding="utf-8").startswith("## verdryx: REFUSED against baseline v1")
