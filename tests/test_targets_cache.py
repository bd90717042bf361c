"""Target results are cached only under a declared version, in a real store file
(docs/targets.md, "Caching")."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import pytest

from verdryx_core.errors import UsageError
from verdryx_core.llm.cache import REFRESH
from verdryx_core.store import Store
from verdryx_core.targets import Target, TargetCache, TargetCase, TargetResult, TargetRunner


class Agent:
    """A real target counting its calls; `fail` makes it raise."""

    def __init__(self) -> None:
        self.calls = 0
        self.fail = False
        self._lock = threading.Lock()

    def __call__(self, case: TargetCase) -> TargetResult:
        with self._lock:
            self.calls += 1
        if self.fail:
            raise RuntimeError("agent down")
        return TargetResult(
            output=f"{case.prompt} #{case.repeat}",
            tool_calls=[{"name": "lookup", "arguments": {"q": case.prompt}}],
            usage={"input_tokens": 3, "output_tokens": 2, "cost_usd": 0.01},
        )


def cases(*prompts: str, repeat: int = 0) -> list[TargetCase]:
    return [
        TargetCase(id=f"c{i}", eval_set_id="s", prompt=p, repeat=repeat)
        for i, p in enumerate(prompts)
    ]


def run(
    db: Path, agent: Agent, batch: list[TargetCase], *, mode: str = "on", version: str | None
) -> tuple[list, TargetCache]:
    with Store.open(db) as store:
        cache = TargetCache(store, mode=mode, version=version)
        with TargetRunner(cache=cache) as runner:
            outcomes = runner.run(Target.of(agent, spec="agent:run"), batch)
        cache.flush()
    return outcomes, cache


def test_without_a_version_every_call_is_made(tmp_path: Path) -> None:
    agent = Agent()
    for _ in range(2):
        outcomes, cache = run(tmp_path / "v.db", agent, cases("a", "b"), version=None)
        assert not cache.enabled and all(not o.cached for o in outcomes)
    assert agent.calls == 4


def test_an_unchanged_rerun_under_a_version_calls_nothing(tmp_path: Path) -> None:
    agent = Agent()
    first, _ = run(tmp_path / "v.db", agent, cases("a", "b"), version="1.0")
    second, cache = run(tmp_path / "v.db", agent, cases("a", "b"), version="1.0")
    assert agent.calls == 2
    assert all(o.cached for o in second) and not any(o.cached for o in first)
    assert [o.result for o in second] == [o.result for o in first]
    assert (cache.hits, cache.misses) == (2, 0)
    assert cache.saved_usd == pytest.approx(0.02)


def test_a_new_version_a_changed_case_or_another_repeat_calls_again(tmp_path: Path) -> None:
    agent = Agent()
    db = tmp_path / "v.db"
    run(db, agent, cases("a"), version="1.0")
    run(db, agent, cases("a"), version="1.1")
    run(db, agent, cases("a changed"), version="1.0")
    run(db, agent, cases("a", repeat=1), version="1.0")
    assert agent.calls == 4
    run(db, agent, cases("a", repeat=1), version="1.0")
    assert agent.calls == 4


def test_errors_are_never_cached(tmp_path: Path) -> None:
    agent = Agent()
    agent.fail = True
    (outcome,), _ = run(tmp_path / "v.db", agent, cases("a"), version="1.0")
    assert outcome.error_kind == "exception"
    agent.fail = False
    (outcome,), _ = run(tmp_path / "v.db", agent, cases("a"), version="1.0")
    assert outcome.ok and not outcome.cached and agent.calls == 2


def test_replay_with_a_version_calls_nothing(tmp_path: Path) -> None:
    agent = Agent()
    db = tmp_path / "v.db"
    run(db, agent, cases("a"), version="1.0")
    outcomes, _ = run(db, agent, cases("a", "b"), mode="replay", version="1.0")
    assert agent.calls == 1
    assert outcomes[0].cached and outcomes[0].ok
    assert outcomes[1].error_kind == "not_recorded"
    assert outcomes[1].error == (
        "target agent:run: no result recorded under version 1.0 for case c1 (repeat 0), "
        "and a replay never calls"
    )
    # Replay never writes: the miss stays a miss.
    outcomes, _ = run(db, agent, cases("a", "b"), mode="replay", version="1.0")
    assert outcomes[1].error_kind == "not_recorded" and agent.calls == 1


def test_cache_off_calls_every_time_whatever_the_version(tmp_path: Path) -> None:
    agent = Agent()
    run(tmp_path / "v.db", agent, cases("a"), version="1.0")
    run(tmp_path / "v.db", agent, cases("a"), mode="off", version="1.0")
    assert agent.calls == 2


def test_replay_without_a_version_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"cannot replay target calls.*pass --target-version V"):
        TargetCache(None, mode="replay", version=None)
    with pytest.raises(UsageError, match="the target version is empty"):
        TargetCache(None, mode="on", version=" ")


class Numbered(Agent):
    """Answers with its call count, so each answer tells which call made it."""

    def __call__(self, case: TargetCase) -> TargetResult:
        super().__call__(case)
        return TargetResult(output=f"answer {self.calls}")


def test_refresh_calls_whatever_is_stored_and_replaces_it(tmp_path: Path) -> None:
    # A rerun of an item under a declared version calls the agent again.
    db, agent = tmp_path / "v.db", Numbered()
    run(db, agent, cases("a"), version="v1")
    outcomes, cache = run(db, agent, cases("a"), mode=REFRESH, version="v1")
    assert agent.calls == 2 and not outcomes[0].cached
    assert outcomes[0].result is not None and outcomes[0].result.output == "answer 2"
    assert (cache.hits, cache.misses) == (0, 1)
    outcomes, _ = run(db, agent, cases("a"), version="v1")
    assert agent.calls == 2 and outcomes[0].cached
    assert outcomes[0].result is not None and outcomes[0].result.output == "answer 2"


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param({"output": 5}, id="output-not-a-string"),
        pytest.param({"usage": {"input_tokens": -3}}, id="a-negative-count"),
        pytest.param({"surprise": 1}, id="an-unknown-key"),
    ],
)
def test_a_damaged_cached_result_is_a_miss_called_again_and_replaced(
    tmp_path: Path, damage: dict[str, object]
) -> None:
    """A row another tool or a bad merge damaged is not the agent's answer: not replayed
    as the case's error, but called again, and the fresh result replaces it."""
    db, agent = tmp_path / "v.db", Agent()
    first, _ = run(db, agent, cases("a", "b"), version="1.0")
    with sqlite3.connect(db) as connection:
        key, response = connection.execute(
            "SELECT key, response FROM model_cache ORDER BY key LIMIT 1"
        ).fetchone()
        broken = json.loads(response) | damage
        connection.execute(
            "UPDATE model_cache SET response = ? WHERE key = ?", (json.dumps(broken), key)
        )
    second, cache = run(db, agent, cases("a", "b"), version="1.0")
    assert agent.calls == 3  # the damaged one only
    assert [o.result for o in second] == [o.result for o in first]
    assert all(o.error is None for o in second)
    assert (cache.hits, cache.misses) == (1, 1)
    run(db, agent, cases("a", "b"), version="1.0")
    assert agent.calls == 3  # replaced
