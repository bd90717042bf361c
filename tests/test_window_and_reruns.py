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
from verdryx_core.evaluation.attempts import pooled_attempts
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


def test_the_window_pools_no_run_of_another_target_in_both_faces(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _diluted_store(pytester, ["--verdryx-target=agent:rival"])
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
    window_line = (
        f"window: this run and 1 earlier ({baseline_run.id[:8]}); 3 earlier not comparable, "
        "not pooled (3 another target)"
    )
    assert window_line in text
    # The command line pools the stored run's window by the same rule.
    root = str(pytester.path)
    code = main(["drift", "--baseline", "v1", "--window", "10", "--db", str(db), "--root", root])
    out, err = capsys.readouterr()
    assert code == 1, out + err
    assert "verdict: REGRESSED" in out and window_line in out


def test_neither_face_pools_a_run_of_another_target_version(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    # The same agent at another declared version, right on every case.
    db = _diluted_store(pytester, ["--verdryx-target=agent:answer", "--verdryx-target-version=v9"])
    # The pytest face: the session gated with the window, and stored for drift.
    stored = _session(
        pytester,
        db,
        range(12),
        "--verdryx-target=agent:answer",
        "--verdryx-baseline=v1",
        "--verdryx-window=10",
    )
    assert stored.ret == pytest.ExitCode.TESTS_FAILED, stored.stdout.str()
    stored.stdout.fnmatch_lines(
        ["window: this run and 1 earlier *(3 another target version)", "*verdict: REGRESSED*"]
    )
    root = str(pytester.path)
    code = main(["drift", "--baseline", "v1", "--window", "10", "--db", str(db), "--root", root])
    out, err = capsys.readouterr()
    assert code == 1, out + err
    assert "verdict: REGRESSED" in out
    assert re.search(
        r"window: this run and 1 earlier \([0-9a-f-]{8}\); 3 earlier not comparable, "
        r"not pooled \(3 another target version\)",
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
    assert result.stats is not None
    assert result.stats.mean_score == 0.0  # the current run alone


# -- reruns ------------------------------------------------------------------------------------

# An agent that got worse: wrong on the first try of q0-q9, right when asked again. Its
# tries are counted in a file beside it, so a rerun on an xdist worker sees the
# controller's first call.
SECOND_TRY = """
import pathlib

HERE = pathlib.Path(__file__).parent


def answer(case):
    log = HERE / "tries.log"
    with log.open("a") as tries:
        tries.write(case.id + "\\n")
    worse = (HERE / "worse").exists() and int(case.id[1:]) < 10
    first = log.read_text().split().count(case.id) == 1
    return "no" if worse and first else "yes"
"""


def _rerun_store(pytester: pytest.Pytester, *current: str) -> tuple[pytest.RunResult, Path]:
    """Baseline v1 of the agent right on all 20 cases; then the worse agent, run with
    `--reruns=3` under `--verdryx-fail-on=cases` (a case below its bar fails, so it is run
    again) and `current`."""
    pytester.makepyfile(agent=SECOND_TRY)
    write_evalset(
        pytester.path,
        "ask",
        "ask",
        [{"id": f"q{i}", "prompt": f"question {i}", "expected": "yes"} for i in range(CASES)],
    )
    db = pytester.path / "store.db"
    common = [f"--verdryx-db={db}", "--verdryx-target=agent:answer"]
    saved = pytester.runpytest(*common, "--verdryx-save-baseline=v1")
    assert saved.ret == 0, saved.stdout.str()
    (pytester.path / "worse").touch()
    (pytester.path / "tries.log").unlink()
    result = pytester.runpytest(*common, "--reruns=3", "--verdryx-fail-on=cases", *current)
    # Each worse case was asked twice, wrong then right; the others once.
    tries = (pytester.path / "tries.log").read_text().split()
    assert [tries.count(f"q{i}") for i in range(CASES)] == [2] * 10 + [1] * 10
    run = stored_runs(db)[0]
    by_case = {score.case_id: score for score in run.scores}
    assert [by_case[f"q{i}"].samples for i in range(10)] == [(0.0, 1.0)] * 10
    assert [by_case[f"q{i}"].value for i in range(10)] == [0.5] * 10
    assert run.mean_score == pytest.approx(0.75)
    return result, db


@pytest.mark.parametrize("mode", [["-n", "0"], ["-n", "2"]], ids=["n0", "n2"])
def test_every_attempt_of_a_rerun_case_is_a_sample_never_the_best_of_them(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    result, _ = _rerun_store(pytester, "--verdryx-baseline=v1", *mode)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines(["*delta: -0.250*", "*verdict: REGRESSED*"])
    # The second try passes the bar of 0.5 as the mean of both: the item passes on its rerun.
    outcomes = result.parseoutcomes()
    assert (outcomes["passed"], outcomes["rerun"]) == (20, 10)


def test_verdryx_drift_gates_every_attempt_of_a_rerun_case(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    result, db = _rerun_store(pytester)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()  # no baseline named
    code = main(["drift", "--baseline", "v1", "--db", str(db), "--root", str(pytester.path)])
    out, err = capsys.readouterr()
    assert code == 1, out + err
    assert "delta: -0.250" in out and "verdict: REGRESSED" in out


def _attempt(value: float | None, samples: tuple[float, ...] = (), cost: float = 0.1) -> Score:
    return Score(
        case_id="q0",
        eval_set_id="ask",
        value=value,
        unmeasured=None if value is not None else "the provider refused",
        grader="exact",
        cost_usd=cost,
        samples=samples,
        bar=0.5,
        passed=None if value is None else value >= 0.5,
    )


def test_attempts_pool_their_samples_by_the_cases_aggregate() -> None:
    first, second = _attempt(0.0, (0.0, 0.0)), _attempt(0.5, (1.0, 0.0))
    pooled = pooled_attempts(first, second, rule=None)
    assert (pooled.samples, pooled.value, pooled.passed) == ((0.0, 0.0, 1.0, 0.0), 0.25, False)
    assert pooled.cost_usd == pytest.approx(0.2)  # both attempts were paid for
    # pass@2 over the four samples: 1 - C(3, 2) / C(4, 2).
    assert pooled_attempts(first, second, rule="pass@2").value == pytest.approx(0.5)
    # An attempt that measured nothing adds no sample, and its cost all the same.
    unmeasured = pooled_attempts(_attempt(1.0), _attempt(None), rule=None)
    assert (unmeasured.value, unmeasured.samples) == (1.0, ())
    assert unmeasured.cost_usd == pytest.approx(0.2)


def test_a_rerun_custom_case_keeps_every_attempts_score(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_custom="""
        import pytest

        TRIES = []

        @pytest.mark.verdryx(case_id="steps")
        def test_steps(verdryx):
            TRIES.append(1)
            verdryx.record(0.2 if len(TRIES) == 1 else 1.0)
        """
    )
    db = pytester.path / "s.db"
    result = pytester.runpytest(f"--verdryx-db={db}", "--reruns=2")
    assert result.parseoutcomes() == {"passed": 1, "rerun": 1}, result.stdout.str()
    (score,) = stored_runs(db)[0].scores
    assert (score.samples, score.value) == ((0.2, 1.0), pytest.approx(0.6))
