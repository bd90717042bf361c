"""The agent under test is recorded and compared per eval set (docs/targets.md, "One target
per eval set"): one file, a `-k` subset or a shard of a project whose eval sets name their own
targets gates on its own sets, and the model alone against an agent is a change in either
direction. Real pytest sessions over a real store, then `verdryx drift` / `verdryx gate`."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from plugin_support import stored_runs

from verdryx_core.cli import main
from verdryx_core.errors import GroupError
from verdryx_core.evaluation.sharding import shard_of
from verdryx_core.gating.run_group import assemble_group
from verdryx_core.gating.set_targets import target_differences
from verdryx_core.runs import Baseline, EvalRun
from verdryx_core.store import Store

AGENTS = """
def refunds(case):
    return "yes"


def invoices(case):
    return "yes"
"""


def _ids(set_id: str, shard: int, count: int = 6) -> list[str]:
    """`count` case ids of `set_id` that fall in `shard` of 2."""
    found = (f"k{i}" for i in range(1000) if shard_of(set_id, f"k{i}", 2) == shard)
    return [next(found) for _ in range(count)]


def _project(pytester: pytest.Pytester) -> Path:
    """Two eval sets, each naming its own agent; the cases of `refunds` all fall in shard 1
    of 2 and those of `invoices` in shard 2, so each shard measures one agent. Baseline v1
    of the whole project."""
    pytester.makepyfile(agents=AGENTS)
    for set_id, shard in (("refunds", 1), ("invoices", 2)):
        cases = [
            {"id": case_id, "prompt": "p", "expected": "yes"} for case_id in _ids(set_id, shard)
        ]
        document = {"id": set_id, "target": f"agents:{set_id}", "cases": cases}
        (pytester.path / f"{set_id}.evalset.json").write_text(json.dumps(document))
    db = pytester.path / "store.db"
    saved = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-save-baseline=v1")
    assert saved.ret == 0, saved.stdout.str()
    return db


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_each_run_and_baseline_records_the_target_of_each_eval_set(
    pytester: pytest.Pytester,
) -> None:
    db = _project(pytester)
    (run,) = stored_runs(db)
    assert run.set_targets == {"invoices": "agents:invoices", "refunds": "agents:refunds"}
    assert run.target == "agents:invoices, agents:refunds"
    with Store.open(db) as store:
        baseline = store.get_baseline("v1")
    assert baseline is not None and baseline.set_targets == run.set_targets
    committed = json.loads((pytester.path / ".verdryx" / "baselines" / "v1.json").read_text())
    assert committed["set_targets"] == run.set_targets


@pytest.mark.parametrize(
    "narrowed",
    [
        pytest.param(["refunds.evalset.json"], id="one-file"),
        pytest.param(["-k", "refunds"], id="k"),
    ],
)
def test_one_file_of_a_multi_target_project_gates_on_its_own_sets(
    pytester: pytest.Pytester, narrowed: list[str]
) -> None:
    db = _project(pytester)
    result = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1", *narrowed)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["*baseline v1: 1.000 over 6 matched cases*", "*verdict: ON-TRACK*"]
    )


def test_verdryx_drift_gates_one_file_of_a_multi_target_project(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _project(pytester)
    one = pytester.runpytest(f"--verdryx-db={db}", "invoices.evalset.json")
    assert one.ret == 0, one.stdout.str()
    code, out, err = _cli(
        capsys, "drift", "--baseline", "v1", "--db", str(db), "--root", str(pytester.path)
    )
    assert code == 0, out + err
    assert "over 6 matched cases" in out and "verdict: ON-TRACK" in out


def _shards(pytester: pytest.Pytester, db: Path, *extra: str) -> list[pytest.RunResult]:
    return [
        pytester.runpytest(
            f"--verdryx-db={db}", f"--verdryx-shard={k}/2", "--verdryx-run-group=g", *extra
        )
        for k in (1, 2)
    ]


def test_each_shard_of_a_multi_target_project_records_the_target_of_its_own_sets(
    pytester: pytest.Pytester,
) -> None:
    # A shard session never gates on its own (docs/sharding.md): it stores what `verdryx
    # gate` compares, set by set.
    db = _project(pytester)
    assert [shard.ret for shard in _shards(pytester, db, "--verdryx-baseline=v1")] == [0, 0]
    shards = {run.shard: run for run in stored_runs(db) if run.shard}
    assert shards["1/2"].set_targets == {"refunds": "agents:refunds"}
    assert shards["2/2"].set_targets == {"invoices": "agents:invoices"}


def test_verdryx_gate_assembles_the_shards_of_a_multi_target_project(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _project(pytester)
    assert [shard.ret for shard in _shards(pytester, db)] == [0, 0]
    code, out, err = _cli(
        capsys, "gate", "--group", "g", "--baseline", "v1", "--db", str(db),
        "--root", str(pytester.path),
    )  # fmt: skip
    assert code == 0, out + err
    assert "verdict: ON-TRACK" in out


def test_two_shards_measuring_one_eval_set_with_two_agents_are_refused(tmp_path: Path) -> None:
    def shard(k: int, target: str | None) -> EvalRun:
        return EvalRun(
            id=f"r{k}",
            model="stub",
            started_at=datetime(2025, 1, 1, 12, k, tzinfo=UTC),
            eval_set_ids=("refunds",),
            run_group="g",
            shard=f"{k}/2",
            set_targets={"refunds": target},
        )

    with Store.open(tmp_path / "s.db") as store:
        store.save_run(shard(1, "agents:refunds"))
        store.save_run(shard(2, None))
        with pytest.raises(GroupError, match="eval set 'refunds' was measured with target "
                           "'agents:refunds' by shard 1/2 and with the model alone"):  # fmt: skip
            assemble_group(store, "g")


# -- the model alone against an agent, both ways -------------------------------------------------


def _bare_and_agent(pytester: pytest.Pytester, baseline_target: bool) -> tuple[Path, list[str]]:
    """A baseline of the model alone (or of an agent), and the flags of a run of the other."""
    pytester.makepyfile(agents=AGENTS)
    cases = [{"id": f"c{i}", "prompt": f"say {i}", "expected": "yes"} for i in range(6)]
    (pytester.path / "ask.evalset.json").write_text(json.dumps({"id": "ask", "cases": cases}))
    db = pytester.path / "store.db"
    agent = ["--verdryx-target=agents:refunds"]
    saved = pytester.runpytest(
        f"--verdryx-db={db}", "--verdryx-save-baseline=v1", *(agent if baseline_target else [])
    )
    assert saved.ret in (0, 1), saved.stdout.str()  # the stub model answers "stub output"
    assert (pytester.path / ".verdryx" / "baselines" / "v1.json").is_file()
    return db, ([] if baseline_target else agent)


DIRECTIONS = [
    pytest.param(
        False, "target 'agents:refunds' (baseline: the model alone, no target)", id="bare-baseline"
    ),
    pytest.param(
        True, "the model alone, no target (baseline: target 'agents:refunds')", id="agent-baseline"
    ),
]


@pytest.mark.parametrize(("baseline_target", "words"), DIRECTIONS)
def test_the_model_alone_against_an_agent_is_refused_like_a_model_change(
    pytester: pytest.Pytester, baseline_target: bool, words: str
) -> None:
    db, current = _bare_and_agent(pytester, baseline_target)
    result = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1", *current)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stdout.fnmatch_lines([f"*gate refused*this run measured {words} for eval set 'ask'*"])
    allowed = pytester.runpytest(
        f"--verdryx-db={db}", "--verdryx-baseline=v1", "--verdryx-allow-model-change", *current
    )
    assert allowed.ret != pytest.ExitCode.USAGE_ERROR, allowed.stdout.str()
    allowed.stdout.fnmatch_lines([f"WARNING: this run measured {words}*"])


@pytest.mark.parametrize(("baseline_target", "words"), DIRECTIONS)
def test_verdryx_drift_refuses_the_model_alone_against_an_agent(
    pytester: pytest.Pytester,
    capsys: pytest.CaptureFixture[str],
    baseline_target: bool,
    words: str,
) -> None:
    db, current = _bare_and_agent(pytester, baseline_target)
    pytester.runpytest(f"--verdryx-db={db}", *current)
    root = str(pytester.path)
    code, _, err = _cli(capsys, "drift", "--baseline", "v1", "--db", str(db), "--root", root)
    assert code == 2
    assert f"this run measured {words} for eval set 'ask'" in err
    assert "--allow-model-change" in err


# -- stored before targets were kept per eval set ------------------------------------------------


def _legacy(target: str | None, **fields: Any) -> Baseline:
    return Baseline(
        id="b",
        label="old",
        run_id="r0",
        mean=1.0,
        created_at=datetime_utc(),
        model="stub",
        target=target,
        **fields,
    )


def datetime_utc() -> datetime:
    return datetime(2025, 1, 1, tzinfo=UTC)


def test_a_baseline_stored_before_targets_per_eval_set_keeps_the_old_rule() -> None:
    def run(set_targets: dict[str, str | None]) -> EvalRun:
        return EvalRun(
            id="r", model="stub", started_at=datetime_utc(), eval_set_ids=tuple(set_targets),
            set_targets=set_targets,
        )  # fmt: skip

    # One file of the old multi-target baseline: its target is one the baseline ran.
    old = _legacy("agents:invoices, agents:refunds")
    assert target_differences(run({"refunds": "agents:refunds"}), old) == []
    # A target it never ran is a change; one without a target cannot tell.
    assert target_differences(run({"refunds": "agents:other"}), old) == [
        "target 'agents:other' (baseline: 'agents:invoices, agents:refunds') for eval set 'refunds'"
    ]
    assert target_differences(run({"refunds": "agents:other"}), _legacy(None)) == []


def test_a_store_of_the_schema_before_keeps_its_runs_and_baselines_readable(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v.db"
    run = EvalRun(
        id="r", model="stub", started_at=datetime_utc(), eval_set_ids=("ask",), target="a:b",
        set_targets={"ask": "a:b"},
    )  # fmt: skip
    with Store.open(path) as store:
        store.save_run(run)
        store.save_baseline(_legacy("a:b", set_targets={"ask": "a:b"}))
    # Back to the schema before targets per eval set were kept (and none of the later
    # versions' columns: outputs that failed grading, each sample's pass).
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE runs DROP COLUMN set_targets")
        db.execute("ALTER TABLE baselines DROP COLUMN set_targets")
        db.execute("ALTER TABLE scores DROP COLUMN failed_by_output")
        db.execute("ALTER TABLE scores DROP COLUMN passes")
        db.execute("ALTER TABLE baseline_cases DROP COLUMN passes")
        db.execute("PRAGMA user_version = 5")
    with Store.open(path) as store:
        old = store.load_run("r")
        baseline = store.get_baseline("old")
        assert old is not None and (old.target, old.set_targets) == ("a:b", None)
        assert baseline is not None and (baseline.target, baseline.set_targets) == ("a:b", None)
        store.save_run(run)  # the column is there again
        assert store.load_run("r") == run
