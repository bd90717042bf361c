"""Sharded sessions and batch calls through real pytest sessions (docs/sharding.md): three
shards (one under xdist) gated as one group with `verdryx gate` give the verdict and the
scores of the unsharded session; `--verdryx-batch` sends the calls as Message Batches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.anthropic_server import FakeAnthropic
from plugin_support import FULL, PARTIAL, stored_runs, trace_case, write_evalset

from verdryx_core.cli import main
from verdryx_core.evaluation.sharding import shard_of
from verdryx_core.llm import PriceBook
from verdryx_core.runs import EvalRun
from verdryx_core.store import Store

MODEL = "claude-haiku-4-5"
_REPORT_KEYS = ("verdict", "mean_score", "baseline_mean", "delta", "ci_low", "ci_high", "n")


@pytest.fixture(autouse=True)
def _not_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sessions under test must not pick up this machine's CI run id as their group."""
    for name in ("GITHUB_RUN_ID", "GITHUB_ACTIONS", "CI_PIPELINE_ID", "GITLAB_CI"):
        monkeypatch.delenv(name, raising=False)


def _write_sets(directory: Path, *, drop: int) -> None:
    for set_id, count in (("support", 24), ("billing", 18)):
        # On the tool trace's own bar (1.0): a dropped case fails its item, in every face.
        cases = [
            trace_case(f"c{i}", PARTIAL if i < drop else FULL, min_score=None) for i in range(count)
        ]
        write_evalset(directory, set_id, set_id, cases)


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()  # what the in-process pytest sessions printed before
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def _scores(run: EvalRun) -> dict[str, tuple[float | None, str, bool | None]]:
    return {score.key: (score.value, score.grader, score.passed) for score in run.scores}


@pytest.mark.parametrize(("drop", "verdict"), [(9, "regressed"), (0, "on-track")])
def test_three_shards_gated_as_one_group_match_the_unsharded_session(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], drop: int, verdict: str
) -> None:
    root = pytester.path
    _write_sets(root, drop=0)
    pytester.runpytest("--verdryx-db=base.db", "--verdryx-save-baseline=v1").assert_outcomes(
        passed=42
    )
    _write_sets(root, drop=drop)

    whole = pytester.runpytest("--verdryx-db=whole.db", "--verdryx-baseline=v1")
    assert whole.ret == (1 if verdict == "regressed" else 0)
    (unsharded,) = stored_runs(root / "whole.db")
    code, out, _ = cli(
        capsys, "drift", "--baseline", "v1", "--run", unsharded.id,
        "--db", str(root / "whole.db"), "--root", str(root), "--json",
    )  # fmt: skip
    expected = json.loads(out)
    assert expected["verdict"] == verdict

    shard_files = []
    for k, extra in ((1, []), (2, ["-n", "2"]), (3, [])):
        db = f"shard{k}.db"
        result = pytester.runpytest(
            f"--verdryx-db={db}",
            f"--verdryx-shard={k}/3",
            "--verdryx-run-group=pipeline-1",
            "--verdryx-baseline=v1",
            *extra,
        )
        mine = [
            i
            for set_id, count in (("support", 24), ("billing", 18))
            for i in range(count)
            if shard_of(set_id, f"c{i}", 3) == k
        ]
        in_shard, dropped = len(mine), sum(i < drop for i in mine)
        # A case below its bar is reported as dropped (the group's verdict decides, with
        # `verdryx gate`), and no verdict here: a shard is not gated on its own.
        result.assert_outcomes(passed=in_shard - dropped, xfailed=dropped)
        assert result.ret == 0
        hint = f"shard {k}/3 stored in group pipeline-1; gate with verdryx gate --group pipeline-1"
        result.stdout.fnmatch_lines([f"next: {hint} --baseline v1"])
        assert "verdict:" not in result.stdout.str()
        if not extra:
            result.stdout.fnmatch_lines([f"{42 - in_shard} deselected by --verdryx-shard {k}/3"])
        (stored,) = stored_runs(root / db)
        assert (stored.shard, stored.run_group, stored.partial) == (f"{k}/3", "pipeline-1", True)
        assert stored.complete and len(stored.scores) == in_shard
        shard_files.append(str(root / db))

    code, _, err = cli(capsys, "merge", *shard_files, "--into", str(root / "all.db"))
    assert code == 0, err
    code, out, err = cli(
        capsys, "gate", "--group", "pipeline-1", "--baseline", "v1", "--shards", "3",
        "--db", str(root / "all.db"), "--root", str(root), "--json",
    )  # fmt: skip
    assert code == whole.ret, err
    gated = json.loads(out)
    assert {k: gated[k] for k in _REPORT_KEYS} == {k: expected[k] for k in _REPORT_KEYS}
    with Store.open(root / "all.db", read_only=True) as store:
        assembled = store.load_run(gated["run_id"])
    assert assembled is not None
    assert _scores(assembled) == _scores(unsharded)
    assert assembled.mean_score == pytest.approx(unsharded.mean_score)


def test_a_missing_shard_session_is_named_by_the_gate(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    _write_sets(pytester.path, drop=0)
    pytester.runpytest("--verdryx-db=s.db", "--verdryx-save-baseline=v1")
    for k in (1, 3):
        pytester.runpytest("--verdryx-db=s.db", f"--verdryx-shard={k}/3", "--verdryx-run-group=g")
    code, _, err = cli(
        capsys, "gate", "--group", "g", "--baseline", "v1", "--db", str(pytester.path / "s.db")
    )
    assert code == 2
    assert "missing shard 2/3 of 3 (arrived: 1/3, 3/3)" in err


_GROUP = "--verdryx-run-group=g"
_NOT_STUB = "batch model calls need an Anthropic model; 'stub' is not one; drop --verdryx-batch"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--verdryx-shard=4/3", _GROUP], "--verdryx-shard 4/3: shard 4 is not in 1..3"),
        (["--verdryx-shard=x"], "--verdryx-shard 'x': expected K/N"),
        (["--verdryx-shard=1/2"], "needs a run group*pass --verdryx-run-group=ID"),
        (["--verdryx-shard=1/2", _GROUP, "--verdryx-save-baseline=v2"], "a shard holds only"),
        (["--verdryx-shard=1/2", _GROUP, "--no-verdryx-store"], "must be stored"),
        (["--verdryx-batch"], _NOT_STUB),
        (
            ["--verdryx-batch", "--verdryx-model=claude-x", "--verdryx-cache=replay"],
            "need the response cache on, not 'replay'*pass --verdryx-cache on",
        ),
    ],
)
def test_bad_shard_and_batch_settings_are_one_line_usage_errors(
    pytester: pytest.Pytester, args: list[str], words: str
) -> None:
    _write_sets(pytester.path, drop=0)
    result = pytester.runpytest("--verdryx-db=s.db", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{words}*"])
    assert "Traceback" not in result.stderr.str()


def test_the_ini_key_and_the_ci_run_id(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_sets(pytester.path, drop=0)
    pytester.makeini("[pytest]\nverdryx_shard = 2/2\n")
    monkeypatch.setenv("GITHUB_RUN_ID", "777")
    monkeypatch.setenv("GITHUB_RUN_ATTEMPT", "2")
    result = pytester.runpytest("--verdryx-db=s.db")
    assert result.ret == 0
    (run,) = stored_runs(pytester.path / "s.db")
    assert (run.shard, run.run_group) == ("2/2", "github-777-2")
    result.stdout.fnmatch_lines(["*shard 2/2 stored in group github-777-2; gate with*LABEL"])


@pytest.mark.parametrize(
    "mode", [pytest.param([], id="no-xdist"), pytest.param(["-n", "2"], id="xdist-2")]
)
def test_batch_sends_model_then_judge_calls_as_two_batches(
    pytester: pytest.Pytester, anthropic_env: FakeAnthropic, mode: list[str]
) -> None:
    server = anthropic_env
    server.batch_polls = 1
    cases = [
        {"id": f"q{i}", "prompt": f"question {i}", "expected": f"echo: question {i}"}
        for i in range(4)
    ] + [
        {"id": f"j{i}", "prompt": f"explain {i}", "grader": "llm_judge", "rubric": "clear"}
        for i in range(3)
    ]
    write_evalset(pytester.path, "live", "live", cases)
    args = ["--verdryx-db=s.db", f"--verdryx-model={MODEL}", f"--verdryx-judge={MODEL}"]
    result = pytester.runpytest(*args, "--verdryx-batch", *mode)
    result.assert_outcomes(passed=7)
    assert [r.path for r in server.requests if r.method == "POST"] == [
        "/v1/messages/batches",
        "/v1/messages/batches",
    ]
    first, second = server.batches.values()
    assert len(first) == 7 and len(second) == 3  # every case's model call; the judge's after
    result.stdout.fnmatch_lines(["*batch msgbatch_fake0001: 7 requests (7 model calls)*"])
    (run,) = stored_runs(pytester.path / "s.db")
    price = PriceBook.default().cost(MODEL, 10, 5)
    assert all(score.cost_usd == pytest.approx(price / 2) for score in run.scores)
    judged = [score for score in run.scores if score.grader == "llm_judge"]
    assert all(score.judge_cost_usd == pytest.approx(price / 2) for score in judged)

    # Unchanged: the answers are cached, no batch is sent again.
    before = len(server.requests)
    pytester.runpytest(*args, "--verdryx-batch", *mode).assert_outcomes(passed=7)
    assert len(server.requests) == before


def test_an_expired_batch_request_fails_only_its_case(
    pytester: pytest.Pytester, anthropic_env: FakeAnthropic
) -> None:
    from verdryx_core.llm import CachedAdapter, make_adapter
    from verdryx_core.llm.batch import custom_id

    server = anthropic_env
    cases = [
        {"id": f"q{i}", "prompt": f"question {i}", "expected": f"echo: question {i}"}
        for i in range(3)
    ]
    write_evalset(pytester.path, "live", "live", cases)
    key = CachedAdapter(make_adapter(MODEL, env=server.env()), None).cache_key(
        "complete", "question 1"
    )
    server.batch_outcomes[custom_id(key)] = "expired"
    result = pytester.runpytest("--verdryx-db=s.db", f"--verdryx-model={MODEL}", "--verdryx-batch")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*case live::q1, model call, batch result expired*"])
    assert not any(r.path == "/v1/messages" for r in server.requests)
