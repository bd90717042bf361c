"""The conclusion of a run, one rule at a time, in both faces: a pytest session (pytester) and
the `verdryx` command line. Each rule closes a way to get a green exit on a run that got
worse, or that measured nothing (docs/statistics.md "Coverage", docs/outcomes.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from plugin_support import exact_case, stored_runs, write_evalset

from verdryx_core.cli import main
from verdryx_core.store import Store


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()  # what an in-process pytest session printed before
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def _unjudged(case_id: str, **extra: Any) -> dict[str, Any]:
    """A judged case: unmeasured in a run that names no judge."""
    return {
        "id": case_id,
        "prompt": "p",
        "grader": "llm_judge",
        "rubric": "is it kind?",
        "output": "a kind reply",
        **extra,
    }


def _two_sets(root: Path, *, support_id: str = "support", support_output: str = "yes") -> None:
    write_evalset(root, "billing", "billing", [exact_case(f"b{i}", "yes") for i in range(10)])
    write_evalset(
        root, "support", support_id, [exact_case(f"s{i}", support_output) for i in range(10)]
    )


def _saved(pytester: pytest.Pytester) -> Path:
    db = pytester.path / "store.db"
    saved = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-save-baseline=v1")
    assert saved.ret == pytest.ExitCode.OK, saved.stdout.str()
    return db


# -- coverage counts the whole baseline ------------------------------------------------------


def test_a_renamed_eval_set_is_missing_not_new_in_both_faces(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    _two_sets(pytester.path)
    db = _saved(pytester)
    # One of the two sets renamed, and every one of its answers now wrong.
    _two_sets(pytester.path, support_id="support-v2", support_output="no")
    result = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["*too little compared: 10 of 20 baseline cases compared (10 missing from this run)"
         "; baseline eval set(s) absent from this run: support*"]
    )  # fmt: skip
    # The same run through the command line: concluded as the session was.
    evalsets = [
        str(pytester.path / name) for name in ("billing.evalset.json", "support.evalset.json")
    ]
    code, out, err = _cli(capsys, "eval", *evalsets, "--db", str(db), "--baseline", "v1",
                          "--root", str(pytester.path), "--json")  # fmt: skip
    assert code == 2 and "too little compared: 10 of 20" in err
    assert json.loads(out)["exit"] == "refused"
    # And the stored run judged again by drift.
    code, _, err = _cli(capsys, "drift", "--baseline", "v1", "--db", str(db))
    assert code == 2 and "absent from this run: support" in err


def test_a_run_narrowed_by_file_arguments_compares_its_own_sets(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    _two_sets(pytester.path)
    db = _saved(pytester)
    result = pytester.runpytest(
        f"--verdryx-db={db}", "--verdryx-baseline=v1", "billing.evalset.json"
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["*verdict: ON-TRACK*"])
    # Stored as partial: a selection, which drift says, and which is no baseline.
    newest = stored_runs(db)[0]
    assert newest.partial and newest.eval_set_ids == ("billing",)
    code, out, _ = _cli(capsys, "drift", "--baseline", "v1", "--db", str(db))
    assert code == 0 and "partial run: it measured a selection of the cases" in out
    refused = pytester.runpytest(
        f"--verdryx-db={db}", "--verdryx-save-baseline=v2", "billing.evalset.json"
    )
    assert refused.ret == pytest.ExitCode.TESTS_FAILED
    refused.stdout.fnmatch_lines(
        ["*baseline 'v2' NOT saved: this run measured a subset*file arguments*"]
    )


def test_a_floor_reached_exactly_is_not_a_pass_in_both_faces(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    write_evalset(pytester.path, "s", "s", [exact_case(f"c{i}", "yes") for i in range(10)])
    db = _saved(pytester)
    # Eight of ten kept, two renamed: 80% compared.
    kept = [exact_case(f"c{i}", "yes") for i in range(8)]
    write_evalset(
        pytester.path, "s", "s", [*kept, exact_case("x0", "yes"), exact_case("x1", "yes")]
    )
    exact = pytester.runpytest(
        f"--verdryx-db={db}", "--verdryx-baseline=v1", "--verdryx-min-coverage=0.8"
    )
    assert exact.ret == pytest.ExitCode.USAGE_ERROR, exact.stdout.str()
    exact.stdout.fnmatch_lines(["*too little compared: 8 of 10*80%, not above the 80% floor*"])
    code, _, err = _cli(
        capsys, "drift", "--baseline", "v1", "--db", str(db), "--min-coverage", "0.8"
    )
    assert code == 2 and "not above the 80% floor" in err
    # Nine of ten is above the default floor.
    write_evalset(
        pytester.path, "s", "s", [*kept, exact_case("c8", "yes"), exact_case("x1", "yes")]
    )
    assert (
        pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1").ret == pytest.ExitCode.OK
    )


# -- a new case that fails fails -------------------------------------------------------------


def test_a_new_case_below_its_bar_fails_under_the_default_policy_in_both_faces(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = [exact_case(f"c{i}", "yes") for i in range(6)]
    path = write_evalset(pytester.path, "s", "s", cases)
    db = _saved(pytester)
    write_evalset(pytester.path, "s", "s", [*cases, exact_case("fresh", "no")])
    result = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1")
    result.assert_outcomes(passed=7, failed=1)  # the gate testcase passes: on track
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*new since baseline v1: it cannot have dropped*",
         "*new since baseline v1 and below the bar: 1 of 1 new case(s) failed*: s::fresh"]
    )  # fmt: skip
    code, out, _ = _cli(capsys, "eval", str(path), "--db", str(db), "--baseline", "v1",
                        "--root", str(pytester.path), "--json")  # fmt: skip
    document = json.loads(out)
    assert code == 1 and document["failed"] == ["s::fresh"] and document["new"] == ["s::fresh"]
    assert document["drift"]["verdict"] == "on-track"
    # The stored run judged again: drift fails it too, and says why.
    code, out, _ = _cli(capsys, "drift", "--baseline", "v1", "--db", str(db))
    assert code == 1 and "1 case(s) failed (first: s::fresh)" in out


# -- nothing measured, and a required case not measured -------------------------------------


def test_a_run_with_nothing_measured_is_refused_without_a_baseline_in_both_faces(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_evalset(pytester.path, "s", "s", [_unjudged("j0"), _unjudged("j1")])
    result = pytester.runpytest("--no-verdryx-store")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["*ERROR: nothing was measured: all 2 eval case(s) are unmeasured*"]
    )
    code, _, err = _cli(capsys, "eval", str(path), "--db", str(pytester.path / "v.db"))
    assert code == 2 and "nothing was measured" in err


def test_a_required_case_that_is_not_measured_fails_in_both_faces(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = [exact_case("ok", "yes"), _unjudged("must", required=True)]
    path = write_evalset(pytester.path, "s", "s", cases)
    result = pytester.runpytest("--no-verdryx-store")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*required case s::must was not measured (unmeasured: *"])
    code, out, _ = _cli(capsys, "eval", str(path), "--db", str(pytester.path / "v.db"), "--json")
    document = json.loads(out)
    assert code == 1 and document["failed"] == ["s::must"] and document["exit"] == "failed"


# -- partial runs say so, and are no baseline -------------------------------------------------


def test_a_partial_run_says_so_in_drift_and_is_refused_by_verdryx_baseline(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    write_evalset(pytester.path, "s", "s", [exact_case(f"c{i}", "yes") for i in range(6)])
    db = _saved(pytester)
    narrowed = pytester.runpytest(f"--verdryx-db={db}", "-k", "c1 or c2")
    assert narrowed.ret == pytest.ExitCode.OK
    partial = stored_runs(db)[0]
    assert partial.partial
    code, out, _ = _cli(capsys, "drift", "--baseline", "v1", "--db", str(db), "--json")
    assert code == 0 and json.loads(out)["partial"] is True
    code, _, err = _cli(capsys, "baseline", partial.id, "--label", "v2", "--db", str(db))
    assert code == 2 and "this run measured a subset of the cases" in err
    assert "--allow-partial" in err
    code, _, err = _cli(capsys, "baseline", partial.id, "--label", "v2", "--db", str(db),
                        "--allow-partial")  # fmt: skip
    assert code == 0, err


# -- the Python API -------------------------------------------------------------------------


def test_conclude_is_the_notebooks_answer_too(tmp_path: Path) -> None:
    from verdryx_core import Conclusion, RunPolicy, conclude, evaluate, load_evalsets

    path = write_evalset(tmp_path, "s", "s", [exact_case("a", "yes"), exact_case("b", "no")])
    run = evaluate(load_evalsets([path]))
    conclusion = conclude(run, policy=RunPolicy(save_baseline="v1"), root=tmp_path)
    assert isinstance(conclusion, Conclusion)
    assert (conclusion.exit, conclusion.failed) == ("failed", ("s::b",))
    assert conclusion.baseline_saved is not None  # a whole run is a baseline, failing or not
    assert (tmp_path / ".verdryx" / "baselines" / "v1.json").is_file()
    assert "exit: failed: 1 case(s) failed (first: s::b)" in str(conclusion)


# -- verdryx gate concludes the assembled run the same way -----------------------------------


def test_verdryx_gate_fails_a_group_with_a_new_case_below_its_bar(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from datetime import UTC, datetime

    from junitparser import Failure, JUnitXml

    from verdryx_core.evaluation.sharding import shard_of
    from verdryx_core.runs import Baseline, EvalRun, Score

    started = datetime(2026, 3, 1, tzinfo=UTC)

    def score(case_id: str, value: float) -> Score:
        return Score(
            case_id=case_id, eval_set_id="s", value=value, grader="exact", passed=value >= 0.5
        )

    kept = [score(f"c{i}", 1.0) for i in range(10)]
    db = tmp_path / "v.db"
    with Store.open(db) as store:
        base = EvalRun(id="base", model="stub", started_at=started, scores=tuple(kept))
        store.save_run(base)
        store.save_baseline(Baseline.from_run(base, id="b-1", label="v1"))
        scores = [*kept, score("fresh", 0.0)]
        for k in (1, 2):
            mine = tuple(s for s in scores if shard_of("s", s.case_id, 2) == k)
            store.save_run(
                EvalRun(
                    id=f"ci-{k}",
                    model="stub",
                    started_at=started,
                    scores=mine,
                    run_group="g",
                    shard=f"{k}/2",
                    partial=True,
                    eval_set_ids=("s",),
                )
            )
    junit = tmp_path / "gate.xml"
    code, out, _ = _cli(capsys, "gate", "--group", "g", "--baseline", "v1", "--db", str(db),
                        "--root", str(tmp_path), "--junitxml", str(junit), "--json")  # fmt: skip
    document = json.loads(out)
    assert code == 1 and document["verdict"] == "on-track" and document["failed"] == ["s::fresh"]
    ((case,),) = [list(suite) for suite in JUnitXml.fromfile(str(junit))]
    (failure,) = case.result
    assert isinstance(failure, Failure)
    assert "the run fails: 1 case(s) failed (first: s::fresh)" in failure.message
