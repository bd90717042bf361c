"""Who decides the exit status (docs/outcomes.md, docs/statistics.md "Coverage", "Power",
"What the gate compares"): runs that measured nothing are refused in both faces, required
cases fail alone, a different agent is refused and a new version of it compared, a narrowed
shard is never assembled as whole. Real pytest sessions and the CLI over real stores."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from plugin_support import exact_case, stored_runs, write_evalset

from verdryx_core.cli import main
from verdryx_core.evaluation.sharding import shard_of


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def _judged(case_id: str, output: str = "a fine answer") -> dict[str, Any]:
    return {
        "id": case_id,
        "prompt": "p",
        "grader": "llm_judge",
        "rubric": "helpful?",
        "output": output,
    }


def _baseline(pytester: pytest.Pytester, cases: list[dict[str, Any]], *extra: str) -> Path:
    db = pytester.path / "store.db"
    write_evalset(pytester.path, "s", "s", cases)
    saved = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-save-baseline=v1", *extra)
    assert saved.ret == 0, saved.stdout.str()
    return db


def _drift(capsys: pytest.CaptureFixture[str], root: Path, db: Path) -> tuple[int, str, str]:
    return _cli(capsys, "drift", "--baseline", "v1", "--db", str(db), "--root", str(root))


# -- nothing unmeasured passes -----------------------------------------------------------------


def test_a_judged_baseline_and_a_run_without_the_judge_is_refused(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _baseline(pytester, [_judged(f"j{i}") for i in range(6)], "--verdryx-judge=stub")
    result = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["*gate refused*judged by 'stub'*6 llm_judge case(s) had no judge*"]
    )
    code, _, err = _drift(capsys, pytester.path, db)
    assert code == 2 and "judged by 'stub'" in err
    # Allowed on purpose, it is compared, and then nothing is left to compare: still refused.
    allowed = pytester.runpytest(
        f"--verdryx-db={db}", "--verdryx-baseline=v1", "--verdryx-allow-model-change"
    )
    assert allowed.ret == pytest.ExitCode.USAGE_ERROR
    allowed.stdout.fnmatch_lines(
        ["*nothing compared: 0 of 6 baseline cases compared (6 unmeasured)*"]
    )


def test_every_case_edited_or_renamed_is_refused_in_both_faces(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = [exact_case(f"c{i}", "yes") for i in range(8)]
    db = _baseline(pytester, cases)
    # Every expectation edited: every case changed since the baseline.
    edited = [exact_case(f"c{i}", "YES", expected="YES") for i in range(8)]
    write_evalset(pytester.path, "s", "s", edited)
    result = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["*nothing compared: 0 of 8*(8 edited since the baseline)*"])
    code, _, err = _drift(capsys, pytester.path, db)
    assert code == 2 and "nothing compared" in err
    # Every id renamed: the baseline's cases are missing from the run.
    write_evalset(pytester.path, "s", "s", [exact_case(f"new{i}", "yes") for i in range(8)])
    renamed = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1")
    assert renamed.ret == pytest.ExitCode.USAGE_ERROR
    renamed.stdout.fnmatch_lines(["*nothing compared: 0 of 8*(8 missing from this run)*"])


def test_drift_on_an_all_unmeasured_run_is_refused(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _baseline(pytester, [_judged(f"j{i}") for i in range(4)], "--verdryx-judge=stub")
    # The same cases, now unmeasured (no judge), stored by the CLI as a complete run.
    evalset = pytester.path / "s.evalset.json"
    code, _, err = _cli(capsys, "eval", str(evalset), "--db", str(db))
    # Stored, and refused as a run: nothing measured says nothing (docs/statistics.md).
    assert code == 2 and "nothing was measured: all 4 eval case(s) are unmeasured" in err
    code, out, err = _cli(
        capsys, "drift", "--baseline", "v1", "--db", str(db), "--root", str(pytester.path),
        "--allow-model-change", "--json",
    )  # fmt: skip
    assert code == 2
    assert "nothing compared: 0 of 4 baseline cases compared (4 unmeasured)" in err
    assert json.loads(out)["verdict"] == "refused"


def test_too_little_compared_is_refused_below_the_coverage_asked(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _baseline(pytester, [exact_case(f"c{i}", "yes") for i in range(10)])
    # Three of ten cases kept; the other seven renamed away.
    kept = [exact_case(f"c{i}", "yes") for i in range(3)]
    write_evalset(pytester.path, "s", "s", kept + [exact_case(f"x{i}", "yes") for i in range(7)])
    result = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["*too little compared: 3 of 10 baseline cases compared*30%*80%*"])
    lenient = pytester.runpytest(
        f"--verdryx-db={db}", "--verdryx-baseline=v1", "--verdryx-min-coverage=0.2"
    )
    assert lenient.ret == pytest.ExitCode.OK, lenient.stdout.str()
    lenient.stdout.fnmatch_lines(["WARNING: only 3 of 10 baseline cases compared*this verdict*"])
    code, _, err = _cli(
        capsys, "drift", "--baseline", "v1", "--db", str(db), "--root", str(pytester.path),
        "--min-coverage", "0.2",
    )  # fmt: skip
    assert code == 0, err
    code, _, err = _drift(capsys, pytester.path, db)
    assert code == 2 and "too little compared" in err


def test_a_k_subset_is_not_too_little(pytester: pytest.Pytester) -> None:
    """Cases left out on purpose are not expected: coverage counts what was selected."""
    db = _baseline(pytester, [exact_case(f"c{i}", "yes") for i in range(10)])
    result = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1", "-k", "c1 or c2")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(passed=3)  # two cases and the gate


# -- who fails the session ---------------------------------------------------------------------


def test_a_required_case_below_its_bar_fails_the_session_alone(pytester: pytest.Pytester) -> None:
    cases = [exact_case(f"c{i}", "yes") for i in range(20)]
    cases[0] = exact_case("lookup-first", "yes", required=True)
    db = _baseline(pytester, cases)
    cases[0] = exact_case("lookup-first", "no", required=True)
    write_evalset(pytester.path, "s", "s", cases)
    xml = pytester.path / "q.xml"
    result = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1", f"--junitxml={xml}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=20, failed=1)  # 19 cases and the on-track gate; the required one
    result.stdout.fnmatch_lines(["*verdict: ON-TRACK*", "FAILED s.evalset.json::lookup-first*"])
    # The same drop on a case that is not required: dropped, and the verdict decides.
    cases[0] = exact_case("lookup-first", "no")
    write_evalset(pytester.path, "s", "s", cases)
    again = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1")
    assert again.ret == pytest.ExitCode.OK, again.stdout.str()
    again.assert_outcomes(passed=20, xfailed=1)


def test_required_in_the_set_defaults(pytester: pytest.Pytester) -> None:
    path = pytester.path / "r.evalset.json"
    path.write_text(
        json.dumps(
            {
                "id": "r",
                "defaults": {"required": True},
                "cases": [exact_case("a", "no"), exact_case("b", "yes", required=False)],
            }
        )
    )
    saved = pytester.runpytest("--no-verdryx-store", "--verdryx-save-baseline=v1")
    assert saved.ret == pytest.ExitCode.TESTS_FAILED  # no baseline yet: cases fail as tests
    result = pytester.runpytest("--no-verdryx-store", "--verdryx-baseline=v1")
    # `a` is required by the set: below its bar it fails, even though it was below its bar
    # in the baseline too (which excuses a case that is not required).
    result.assert_outcomes(passed=2, failed=1)  # b and the gate pass; a fails
    assert result.ret == pytest.ExitCode.TESTS_FAILED


# -- the agent's identity ----------------------------------------------------------------------

AGENT = """
def answer(case):
    return "yes"


def other(case):
    return "yes"
"""


def test_a_different_target_is_refused_and_a_new_version_compared(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(agent=AGENT)
    write_evalset(
        pytester.path,
        "s",
        "s",
        [{"id": f"c{i}", "prompt": "p", "expected": "yes"} for i in range(6)],
    )
    db = pytester.path / "store.db"
    base = ["--verdryx-target=agent:answer", f"--verdryx-db={db}"]
    saved = pytester.runpytest(*base, "--verdryx-target-version=a1", "--verdryx-save-baseline=v1")
    assert saved.ret == 0, saved.stdout.str()
    saved.stdout.fnmatch_lines(["run * target=agent:answer@a1"])  # every case its: no model
    assert "model=stub" not in saved.stdout.str()
    (run,) = stored_runs(db)
    assert (run.target, run.target_version) == ("agent:answer", "a1")

    newer = pytester.runpytest(*base, "--verdryx-target-version=a2", "--verdryx-baseline=v1")
    assert newer.ret == 0, newer.stdout.str()
    newer.stdout.fnmatch_lines(["compared across versions: target agent:answer a1 -> a2"])

    other = pytester.runpytest(
        "--verdryx-target=agent:other", f"--verdryx-db={db}", "--verdryx-baseline=v1"
    )
    assert other.ret == pytest.ExitCode.USAGE_ERROR
    other.stdout.fnmatch_lines(["*gate refused*target 'agent:other' (baseline: 'agent:answer')*"])

    # In a process of its own: the sessions above ran in this one.
    done = subprocess.run(
        [sys.executable, "-m", "verdryx_core.cli", "runs", "--db", str(db), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)["runs"]
    assert {row["target"] for row in listed} == {"agent:answer", "agent:other"}
    assert {row["target_version"] for row in listed} == {"a1", "a2", None}


# -- shards ------------------------------------------------------------------------------------


def test_a_narrowed_shard_is_never_assembled_as_whole(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = [exact_case(f"c{i}", "yes") for i in range(12)]
    db = _baseline(pytester, cases)
    # A case of shard 2 left out by -k: the shard measures less than its share.
    left_out = next(f"c{i}" for i in range(12) if shard_of("s", f"c{i}", 2) == 2)
    for k in (1, 2):
        narrow = ["-k", f"not {left_out}"] if k == 2 else []
        done = pytester.runpytest(
            f"--verdryx-db={db}", f"--verdryx-shard={k}/2", "--verdryx-run-group=g", *narrow
        )
        assert done.ret == 0, done.stdout.str()
    shards = [run for run in stored_runs(db) if run.shard == "2/2"]
    assert shards and shards[0].shard_share is not None
    assert len(shards[0].scores) < shards[0].shard_share  # the -k left some of its share out
    code, _, err = _cli(
        capsys, "gate", "--group", "g", "--baseline", "v1", "--db", str(db),
        "--root", str(pytester.path),
    )  # fmt: skip
    assert code == 2
    assert "shard 2/2" in err and "narrowed" in err


# -- power and what is compared ----------------------------------------------------------------


def test_an_on_track_verdict_that_cannot_see_the_drop_asked_says_so(
    pytester: pytest.Pytester,
) -> None:
    db = _baseline(pytester, [exact_case(f"c{i}", "yes") for i in range(6)])
    cases = [exact_case(f"c{i}", "no" if i == 0 else "yes") for i in range(6)]
    write_evalset(pytester.path, "s", "s", cases)
    xml = pytester.path / "q.xml"
    result = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1", f"--junitxml={xml}")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*inconclusive: a drop this size happens by chance*",
            "verdict: ON-TRACK (underpowered: the smallest drop this run can see is *, "
            "more than the 0.050 asked for)*",
        ]
    )
    assert "underpowered" in xml.read_text()  # the gate testcase's verdict line
    strict = pytester.runpytest(
        f"--verdryx-db={db}", "--verdryx-baseline=v1", "--verdryx-require-power"
    )
    assert strict.ret == pytest.ExitCode.USAGE_ERROR
    strict.stdout.fnmatch_lines(
        ["*gate refused*underpowered: the smallest drop this run can see is *"]
    )
    # Asked for a drop this run can see: no label.
    coarse = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1", "--verdryx-detect=1")
    assert "underpowered" not in coarse.stdout.str()


def test_the_pass_metric_compares_pass_rates_not_partial_credit(pytester: pytest.Pytester) -> None:
    """Every answer keeps its pass but loses words: the mean score drops, the pass rate does
    not. Each metric gives its own, right, verdict."""
    words = "refund issued to the original card within five days"
    cases = [
        {"id": f"c{i}", "prompt": "p", "grader": "f1", "expected": words, "output": words}
        for i in range(30)
    ]
    db = _baseline(pytester, cases)
    shorter = " ".join(words.split()[:6])  # F1 about 0.75: still above the 0.5 bar
    write_evalset(pytester.path, "s", "s", [case | {"output": shorter} for case in cases])
    by_score = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1")
    assert by_score.ret == pytest.ExitCode.TESTS_FAILED
    by_score.stdout.fnmatch_lines(["verdict: REGRESSED  (gate: significant)"])
    by_pass = pytester.runpytest(
        f"--verdryx-db={db}", "--verdryx-baseline=v1", "--verdryx-gate-metric=pass"
    )
    assert by_pass.ret == pytest.ExitCode.OK, by_pass.stdout.str()
    by_pass.stdout.fnmatch_lines(["delta: +0.000*", "verdict: ON-TRACK*metric: pass)"])
