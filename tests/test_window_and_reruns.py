"""A window pools only runs of the same measurement, and a rerun of an eval case keeps every
attempt (docs/options.md, `--verdryx-window`; docs/outcomes.md, "Reruns"). Real pytest
sessions over a real store, then `verdryx drift` over the same store."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from plugin_support import stored_runs, write_evalset

from verdryx_core.cli import main
from verdryx_core.gating.comparison import compare_to_baseline, window_runs
from verdryx_core.runs import Baseline, BaselineCase, EvalRun, Score
from verdryx_core.store import Store

# The agent under test: it answers "no" to the cases listed in wrong.txt beside it. `rival`
# is another agent, right on every case.
AGENT = """
import pathlib

HERE = pathlib.Path(__file__).parent


def _wrong():
    path = HERE / "wrong.txt"
    return set(path.read_text().split()) if path.exists() else set()


def answer(case):
    return "no" if case.id in _wrong() else "yes"


def rival(case):
    return "yes"
"""

CASES = 20


def _session(pytester: pytest.Pytester, db: Path, wrong: range, *args: str) -> pytest.RunResult:
    (pytester.path / "wrong.txt").write_text(" ".join(f"q{i}" for i in wrong))
    return pytester.runpytest(f"--verdryx-db={db}", "--verdryx-cache=off", *args)


def _diluted_store(pytester: pytest.Pytester, other: list[str]) -> Path:
    """Baseline v1 of agent:answer (wrong on q0-q3), three earlier runs of something else
    (`other`: the flags that make it another measurement) right on every case: pooled, they
    would lift q0-q3 far above the baseline and hide the drop the current run brings."""
    pytester.makepyfile(agent=AGENT)
    write_evalset(
        pytester.path,
        "ask",
        "ask",
        [{"id": f"q{i}", "prompt": f"question {i}", "expected": "yes"} for i in range(CASES)],
    )
    db = pytester.path / "store.db"
    saved = _session(
        pytester, db, range(4), "--verdryx-target=agent:answer", "--verdryx-save-baseline=v1"
    )
    assert saved.ret == 1, saved.stdout.str()  # q0-q3 fail their bar: no baseline is named
    for _ in range(3):
        _session(pytester, db, range(0), *other)
    return db


# Another agent altogether, and the same agent at another declared version.
DILUTERS = [
    pytest.param(["--verdryx-target=agent:rival"], "another target", id="target"),
    pytest.param(
        ["--verdryx-target=agent:answer", "--verdryx-target-version=v9"],
        "another target version",
        id="target-version",
    ),
]


@pytest.mark.parametrize(("other", "why"), DILUTERS)
def test_the_window_pools_no_run_of_another_measurement(
    pytester: pytest.Pytester, other: list[str], why: str
) -> None:
    db = _diluted_store(pytester, other)
    # The agent now also fails q4-q11: a clear regression on its own.
    current = _session(
        pytester,
        db,
        range(12),
        "--verdryx-target=agent:answer",
        "--verdryx-baseline=v1",
        "--verdryx-window=10",
    )
    assert current.ret == pytest.ExitCode.TESTS_FAILED, current.stdout.str()
    text = current.stdout.str()
    assert "verdict: REGRESSED" in text
    # The baseline's own run is the one comparable earlier run; the three others are named
    # as passed over.
    baseline_run = stored_runs(db)[-1]  # the oldest
    assert (
        f"window: this run and 1 earlier ({baseline_run.id[:8]}); 3 earlier not comparable, "
        f"not pooled (3 {why})"
    ) in text


@pytest.mark.parametrize(("other", "why"), DILUTERS)
def test_verdryx_drift_pools_no_run_of_another_measurement(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], other: list[str], why: str
) -> None:
    db = _diluted_store(pytester, other)
    stored = _session(pytester, db, range(12), "--verdryx-target=agent:answer")
    assert stored.ret == 1  # q0-q11 fail their bar; no baseline named: stored, not gated
    code = main(
        [
            "drift",
            "--baseline",
            "v1",
            "--window",
            "10",
            "--db",
            str(db),
            "--root",
            str(pytester.path),
        ]
    )
    out, err = capsys.readouterr()
    assert code == 1, out + err
    assert "verdict: REGRESSED" in out
    assert re.search(
        rf"window: this run and 1 earlier \([0-9a-f-]{{8}}\); 3 earlier not comparable, "
        rf"not pooled \(3 {why}\)",
        out,
    ), out


def _run(run_id: str, minute: int, value: float, **identity: object) -> EvalRun:
    fields: dict = {"model": "stub", "judge_model": "judge-a"} | identity
    return EvalRun(
        id=run_id,
        started_at=datetime(2025, 1, 1, 12, minute, tzinfo=UTC),
        eval_set_ids=("ask",),
        scores=tuple(
            Score(case_id=f"q{i}", eval_set_id="ask", value=value, grader="llm_judge")
            for i in range(4)
        ),
        **fields,
    )


def test_a_window_passes_over_runs_of_another_judge_or_model_and_partial_runs(
    tmp_path: Path,
) -> None:
    current = _run("current", 9, 0.2)
    earlier = [
        _run("same-1", 8, 0.4),
        _run("judge-b", 7, 1.0, judge_model="judge-b"),
        _run("unjudged", 6, 1.0, judge_model=None),
        _run("model-b", 5, 1.0, model="other"),
        _run("subset", 4, 1.0, partial=True),
        _run("same-2", 3, 0.4),
        _run("same-3", 2, 0.4),
    ]
    with Store.open(tmp_path / "s.db") as store:
        for run in earlier:
            store.save_run(run)
        window = window_runs(store, current, 3)
    assert [run.id for run in window.runs] == ["current", "same-1", "same-2"]
    assert window.skipped == (
        ("judge-b", "another judge"),
        ("unjudged", "another judge"),
        ("model-b", "another model"),
        ("subset", "partial"),
    )


def test_a_window_pools_no_sample_of_a_case_graded_otherwise_than_now() -> None:
    # A baseline saved before fingerprints were kept cannot tell an edit: the current run
    # can, and an earlier run's score of the case as it was graded before is left out.
    baseline = Baseline(
        id="b",
        label="v1",
        run_id="r0",
        mean=1.0,
        created_at=datetime(2025, 1, 1, tzinfo=UTC),
        model="stub",
        cases=tuple(BaselineCase(eval_set_id="ask", case_id=f"q{i}", value=1.0) for i in range(6)),
    )

    def run(run_id: str, value: float, fingerprint: str) -> EvalRun:
        scores = tuple(
            Score(
                case_id=f"q{i}",
                eval_set_id="ask",
                value=value,
                grader="exact",
                fingerprint=fingerprint,
            )
            for i in range(6)
        )
        return EvalRun(id=run_id, model="stub", started_at=baseline.created_at, scores=scores)

    result = compare_to_baseline([run("now", 0.0, "edited"), run("before", 1.0, "old")], baseline)
    assert result.report is not None
    assert result.report.mean_score == 0.0  # the current run alone
