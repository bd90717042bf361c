"""`--verdryx-sequential` in real pytest sessions against a saved baseline: a seeded random
order, calls that stop once the confidence sequence settles the verdict, and the cases left
"not needed" in the summary, JUnit and the store (docs/statistics.md, "The sequential gate")."""

from __future__ import annotations

import textwrap

import pytest
from junitparser import JUnitXml
from plugin_support import stored_runs, write_evalset

from verdryx_core.gating.sequential import seeded_order

CASES = 60

#: The agent under test: right on every case, or (mode.txt says "wrong") wrong on every one;
#: every call is logged, in the order it was made. A call takes 50 ms, as a real agent's
#: takes seconds: the calls made ahead then run only the concurrency ahead of the items.
AGENT = textwrap.dedent(
    """
    import pathlib, threading, time
    HERE = pathlib.Path(__file__).parent
    _lock = threading.Lock()

    def answer(case):
        with _lock, (HERE / "calls.log").open("a") as log:
            log.write(case.id + "\\n")
        mode = (HERE / "mode.txt").read_text().strip()
        time.sleep(0.05 if (HERE / "slow.txt").exists() else 0)
        return "no" if mode == "wrong" else "yes"
    """
)


def _calls(pytester: pytest.Pytester) -> list[str]:
    log = pytester.path / "calls.log"
    return log.read_text().split() if log.exists() else []


@pytest.fixture
def gated(pytester: pytest.Pytester) -> pytest.Pytester:
    """A set of CASES cases and a baseline v1 of the right agent, saved by a plain run."""
    pytester.makepyfile(agent_target=AGENT)
    cases = [
        {"id": f"c{i:02d}", "prompt": f"question {i}", "expected": "yes"} for i in range(CASES)
    ]
    write_evalset(pytester.path, "seq", "seq", cases)
    (pytester.path / "mode.txt").write_text("right")
    saved = pytester.runpytest_inprocess(
        "--verdryx-target=agent_target:answer",
        "--verdryx-db=v.db",
        "--verdryx-save-baseline=v1",
        "-p",
        "no:cacheprovider",
    )
    assert saved.ret == 0, saved.stdout.str()
    (pytester.path / "calls.log").unlink()
    (pytester.path / "slow.txt").write_text("")
    return pytester


def _sequential(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(
        "--verdryx-target=agent_target:answer",
        "--verdryx-db=v.db",
        "--verdryx-baseline=v1",
        "--verdryx-sequential",
        "--verdryx-concurrency=2",
        "--junitxml=out.xml",
        "-p",
        "no:cacheprovider",
        *args,
    )


def test_a_regression_stops_the_calls_and_fails_the_session(gated: pytest.Pytester) -> None:
    (gated.path / "mode.txt").write_text("wrong")
    result = _sequential(gated)
    out = result.stdout.str()
    assert result.ret == 1, out
    calls = _calls(gated)
    # Every difference is -1: ten settle it; the calls in flight then (two, more on a busy
    # machine) are the only extra.
    assert 10 <= len(calls) <= 30, calls
    result.stdout.fnmatch_lines(
        [
            # Below their bar but dropped, not failed: the verdict decides (the default).
            f"*{len(calls)} xfailed*{CASES - len(calls)} not needed*",
        ]
    )
    assert "sequential gate regressed" in out
    assert f"{len(calls)} called, {CASES - len(calls)} not needed (seed 0)" in out
    # The store holds the cases called, as a run that measured a subset on purpose.
    (run,) = [r for r in stored_runs(gated.path / "v.db") if r.label is None and r.partial]
    assert sorted(score.case_id for score in run.scores) == sorted(calls)
    xml = JUnitXml.fromfile(str(gated.path / "out.xml"))
    suite = next(iter(xml))
    properties = {p.name: p.value for p in suite.properties()}
    assert properties["verdryx.verdict"] == "regressed"
    assert properties["verdryx.not_needed"] == str(CASES - len(calls))
    skipped = [
        case
        for case in suite
        if case.result and any("not needed:" in (r.message or "") for r in case.result)
    ]
    assert len(skipped) == CASES - len(calls)


def test_an_unchanged_agent_is_on_track_before_every_case_is_called(
    gated: pytest.Pytester,
) -> None:
    # Every difference is 0: the sequence lies above -0.2 after 32 cases.
    result = _sequential(gated, "--verdryx-detect=0.2")
    out = result.stdout.str()
    assert result.ret == 0, out
    calls = _calls(gated)
    assert 32 <= len(calls) <= 50, len(calls)
    assert "sequential gate on track" in out
    assert f"{CASES - len(calls)} not needed" in out
    # The coverage floor did not refuse it, and the run is no baseline.
    assert "refused" not in out


def test_the_order_is_seeded_random(gated: pytest.Pytester) -> None:
    # A drop of 0.01 is never ruled out on 60 cases: every case is called,
    # in the seeded order, and the fixed-sample gate decides.
    (gated.path / "slow.txt").unlink()
    result = _sequential(
        gated, "--verdryx-sequential-seed=7", "--verdryx-detect=0.01", "--verdryx-concurrency=1"
    )
    assert result.ret == 0, result.stdout.str()
    ids = [f"c{i:02d}" for i in range(CASES)]
    expected = [ids[i] for i in seeded_order(CASES, 7)]
    assert _calls(gated) == expected != ids
    assert "not settled" in result.stdout.str()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ([], "name one with --verdryx-baseline"),
        (["--verdryx-baseline=v1", "--verdryx-batch"], "--verdryx-batch"),
        (["--verdryx-baseline=v1", "-n", "2"], "drop -n"),
        (["--verdryx-baseline=v1", "--verdryx-challenger=json:loads"], "--verdryx-challenger"),
    ],
)
def test_what_it_cannot_do_is_a_usage_error(
    pytester: pytest.Pytester, args: list[str], words: str
) -> None:
    write_evalset(pytester.path, "seq", "seq", [{"id": "a", "prompt": "p", "expected": "p"}])
    result = pytester.runpytest_inprocess("--verdryx-sequential", "-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert words in result.stderr.str()
