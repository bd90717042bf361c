"""The response cache: a second run calls nothing, replay never calls,
repeats are separate samples, and new answers are written in one transaction at flush."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from fakes.anthropic_server import DEFAULT_KEY, FakeAnthropic, error_reply, message_reply

from verdryx_core.errors import ModelCallError, UsageError
from verdryx_core.llm import CachedAdapter, CacheStats, ModelAdapter, StubAdapter, make_adapter
from verdryx_core.llm.cache import REFRESH
from verdryx_core.store import CacheEntry, Store
from verdryx_core.store.sqlite import SqliteStore

MODEL = "claude-haiku-4-5"
TOOLS = [{"name": "lookup", "input_schema": {"type": "object"}}]


class CountingStore(SqliteStore):
    """A real store that counts cache writes, to see that flush is one transaction."""

    puts = 0

    def cache_put_many(self, entries: Iterable[CacheEntry]) -> None:
        self.puts += 1
        super().cache_put_many(entries)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "verdryx.db"


def session(server: FakeAnthropic, store: Store | None, mode: str = "on") -> CachedAdapter:
    return CachedAdapter(make_adapter(MODEL, env=server.env()), store, mode)


def every_kind(adapter: ModelAdapter) -> list[Any]:
    return [
        adapter.complete("one"),
        adapter.complete("two"),
        adapter.complete("one", repeat=1),
        adapter.complete_with_tools("tool please", TOOLS),
        adapter.judge("task", "an output", "a rubric"),
    ]


def cache_rows(path: Path) -> int:
    with sqlite3.connect(path) as connection:
        return connection.execute("SELECT count(*) FROM model_cache").fetchone()[0]


def test_a_second_run_makes_zero_requests(server: FakeAnthropic, db: Path) -> None:
    with Store.open(db) as store:
        first = session(server, store)
        answers = every_kind(first)
        assert first.flush() == 5
    assert len(server.requests) == 5
    assert first.stats == CacheStats(hits=0, misses=5, saved_usd=0.0)

    with Store.open(db) as store:
        second = session(server, store)
        again = every_kind(second)
    assert len(server.requests) == 5  # nothing new on the wire
    assert [a.cached for a in again] == [True] * 5
    assert [type(a).to_dict(a) | {"cached": False} for a in again] == [a.to_dict() for a in answers]
    assert second.hits == 5 and second.misses == 0
    assert second.saved_usd == pytest.approx(sum(a.cost_usd for a in answers))


_FROM_THE_CACHE = """\
import sys
from verdryx_core.llm import CachedAdapter, make_adapter
from verdryx_core.store import Store

with Store.open(sys.argv[1]) as store:
    adapter = CachedAdapter(make_adapter(sys.argv[2], env={}, sdk_now=False), store, "on")
    answers = [adapter.complete("one"), adapter.judge("task", "an output", "a rubric")]
print(all(answer.cached for answer in answers), "anthropic" in sys.modules)
make_adapter(sys.argv[2], env={})
print("anthropic" in sys.modules)
"""


def test_answers_from_the_cache_need_no_sdk_import(server: FakeAnthropic, db: Path) -> None:
    # The SDK takes a second or more to import: an adapter built with sdk_now=False (an xdist
    # worker grading from the controller's answers) imports it only for a call it makes. By
    # default it is imported when the adapter is built, outside the first calls' latencies.
    with Store.open(db) as store:
        recorder = session(server, store)
        recorder.complete("one")
        recorder.judge("task", "an output", "a rubric")
        recorder.flush()
    done = subprocess.run(
        [sys.executable, "-c", _FROM_THE_CACHE, str(db), MODEL],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["True", "False", "True"]


def test_replay_with_an_empty_cache_makes_zero_requests_and_errors(
    server: FakeAnthropic, db: Path
) -> None:
    with Store.open(db) as store:
        replay = session(server, store, "replay")
        calls = [
            lambda: replay.complete("one"),
            lambda: replay.complete_with_tools("tool please", TOOLS),
            lambda: replay.judge("task", "an output", "a rubric"),
        ]
        for call in calls:
            with pytest.raises(
                ModelCallError,
                match=r"not in the cache \(cache mode replay\); record it first with --cache=on",
            ):
                call()
    assert server.requests == []
    assert replay.misses == 3 and replay.hits == 0


def test_replay_needs_no_key_and_serves_what_was_recorded(server: FakeAnthropic, db: Path) -> None:
    with Store.open(db) as store:
        recorder = session(server, store)
        recorded = every_kind(recorder)
        recorder.flush()
    keyless = make_adapter(MODEL, env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"})
    with Store.open(db) as store:
        replay = CachedAdapter(keyless, store, "replay")
        replayed = every_kind(replay)
    assert [r.to_dict() | {"cached": True} for r in recorded] == [r.to_dict() for r in replayed]
    assert len(server.requests) == 5


def test_repeats_are_separate_samples(server: FakeAnthropic, db: Path) -> None:
    with Store.open(db) as store:
        adapter = session(server, store)
        for repeat in range(3):
            adapter.judge("task", "output", "rubric", repeat=repeat)
        adapter.flush()
        assert len(server.requests) == 3
        keys = {
            adapter.cache_key("judge", "task", output="output", rubric="rubric", repeat=r)
            for r in range(3)
        }
        assert len(keys) == 3
        assert len(store.cache_get_many(keys)) == 3


def test_off_always_calls_and_never_touches_the_store(server: FakeAnthropic, db: Path) -> None:
    with Store.open(db) as store:
        adapter = session(server, store, "off")
        adapter.complete("one")
        adapter.complete("one")
        assert adapter.flush() == 0
    assert len(server.requests) == 2
    assert adapter.stats == CacheStats(misses=2)
    assert cache_rows(db) == 0


def test_answers_are_written_only_at_flush_in_one_transaction(
    server: FakeAnthropic, db: Path
) -> None:
    store = CountingStore.open(db)
    try:
        adapter = session(server, store)
        for index in range(20):
            adapter.complete(f"prompt {index}")
        assert cache_rows(db) == 0  # nothing written while calls run
        assert store.puts == 0
        assert adapter.flush() == 20
        assert store.puts == 1
        assert cache_rows(db) == 20
        assert adapter.flush() == 0  # nothing left to write
        assert store.puts == 1
    finally:
        store.close()


def test_identical_concurrent_calls_share_one_request(server: FakeAnthropic) -> None:
    server.latency = 0.1
    adapter = session(server, None)
    barrier = threading.Barrier(8)
    results: list[str] = []

    def call() -> None:
        barrier.wait()
        results.append(adapter.complete("same prompt").text)

    threads = [threading.Thread(target=call) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == ["echo: same prompt"] * 8
    assert len(server.requests) == 1
    assert adapter.stats.hits == 7 and adapter.stats.misses == 1


def test_failures_are_not_cached(server: FakeAnthropic, db: Path) -> None:
    server.script(error_reply(400, "invalid_request_error", "bad"))
    with Store.open(db) as store:
        adapter = session(server, store)
        with pytest.raises(ModelCallError):
            adapter.complete("p")
        assert adapter.complete("p").text == "echo: p"
        adapter.flush()
    assert len(server.requests) == 2
    assert cache_rows(db) == 1


def test_an_unreadable_verdict_is_a_paid_answer_and_is_cached(
    server: FakeAnthropic, db: Path
) -> None:
    server.script(message_reply(text="no tool call"))
    with Store.open(db) as store:
        first = session(server, store)
        judgement = first.judge("t", "o", "r")
        first.flush()
        second = session(server, store).judge("t", "o", "r")
    assert judgement.score is None and second.score is None
    assert second.unmeasured == judgement.unmeasured
    assert len(server.requests) == 1


def test_without_a_store_the_cache_lasts_the_session(server: FakeAnthropic) -> None:
    adapter = session(server, None)
    adapter.complete("p")
    assert adapter.complete("p").cached
    assert adapter.flush() == 1
    assert len(server.requests) == 1


def test_preload_reads_many_keys_at_once(server: FakeAnthropic, db: Path) -> None:
    with Store.open(db) as store:
        recorder = session(server, store)
        recorder.complete("a")
        recorder.complete("b")
        recorder.flush()
        adapter = session(server, store, "replay")
        keys = [adapter.cache_key("complete", prompt) for prompt in ("a", "b", "c")]
        assert adapter.preload(keys) == 2
        assert adapter.complete("a").cached
        with pytest.raises(ModelCallError):
            adapter.complete("c")
    assert len(server.requests) == 2


def test_the_key_changes_with_everything_that_changes_the_answer() -> None:
    stub = CachedAdapter(StubAdapter(), None, "on")
    base = stub.cache_key("complete", "p")
    variants = {
        stub.cache_key("complete", "p", repeat=1),
        stub.cache_key("complete", "p2"),
        stub.cache_key("tools", "p", tools=TOOLS),
        stub.cache_key("tools", "p", tools=[{"name": "other", "input_schema": {}}]),
        stub.cache_key("judge", "p", output="o", rubric="r"),
        stub.cache_key("judge", "p", output="o2", rubric="r"),
        stub.cache_key("judge", "p", output="o", rubric="r2"),
        CachedAdapter(StubAdapter(model="other"), None, "on").cache_key("complete", "p"),
        CachedAdapter(StubAdapter(completion="x"), None, "on").cache_key("complete", "p"),
    }
    assert base not in variants and len(variants) == 9
    assert stub.cache_key("complete", "p") == base  # deterministic
    hot = make_adapter(MODEL, env={}, temperature=0.5)
    cold = make_adapter(MODEL, env={})
    assert CachedAdapter(hot, None).cache_key("complete", "p") != CachedAdapter(
        cold, None
    ).cache_key("complete", "p")


def test_the_key_ignores_the_endpoint_and_the_credential() -> None:
    one = make_adapter(MODEL, env={"ANTHROPIC_API_KEY": "a", "ANTHROPIC_BASE_URL": "http://x"})
    two = make_adapter(MODEL, env={"ANTHROPIC_API_KEY": "b"})
    assert CachedAdapter(one, None).cache_key("complete", "p") == CachedAdapter(
        two, None
    ).cache_key("complete", "p")


def test_the_key_is_never_stored(server: FakeAnthropic, db: Path) -> None:
    with Store.open(db) as store:
        adapter = session(server, store)
        every_kind(adapter)
        adapter.flush()
    for path in db.parent.iterdir():
        assert DEFAULT_KEY.encode() not in path.read_bytes()


def test_an_unknown_mode_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"cache mode 'maybe'.*off, on, replay"):
        CachedAdapter(StubAdapter(), None, "maybe")


def test_stats_travel_as_plain_dicts_and_add_up() -> None:
    stats = CacheStats(hits=2, misses=1, saved_usd=0.5)
    assert CacheStats.from_dict(stats.to_dict()) == stats
    assert stats + CacheStats(hits=1, saved_usd=0.25) == CacheStats(
        hits=3, misses=1, saved_usd=0.75
    )


def test_refresh_calls_again_every_time_and_its_answer_replaces_the_stored_one(
    server: FakeAnthropic, db: Path
) -> None:
    # A rerun of an item asks again whatever the cache holds (docs/targets.md).
    with Store.open(db) as store:
        first = session(server, store)
        first.complete("one")
        first.flush()
    server.script(message_reply(text="a newer answer"), message_reply(text="the newest answer"))
    with Store.open(db) as store:
        fresh = session(server, store, REFRESH)
        assert fresh.preload([fresh.cache_key("complete", "one")]) == 0
        assert fresh.complete("one").text == "a newer answer"
        assert fresh.complete("one").text == "the newest answer"  # not what it just got
        assert fresh.stats == CacheStats(hits=0, misses=2, saved_usd=0.0)
        assert fresh.flush() == 2
    assert len(server.requests) == 3
    with Store.open(db) as store:
        later = session(server, store)
        answer = later.complete("one")
    assert (answer.text, answer.cached) == ("the newest answer", True)
    assert len(server.requests) == 3


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param({"input_tokens": "12"}, id="tokens-a-string"),
        pytest.param({"output_tokens": 10**15}, id="tokens-past-the-bound"),
        pytest.param({"input_tokens": True}, id="tokens-a-bool"),
        pytest.param({"text": None, "score": "high"}, id="a-judges-score-not-a-number"),
        pytest.param({"text": 7}, id="text-not-a-string"),
        pytest.param({"tool_calls": "lookup"}, id="tool-calls-not-a-list"),
        pytest.param({"score": 2.5, "text": None}, id="a-score-past-one"),
    ],
)
def test_a_damaged_cache_row_is_a_miss_called_again_and_replaced(
    server: FakeAnthropic, db: Path, damage: dict[str, Any]
) -> None:
    """A row another tool or a bad merge left unreadable is not replayed (a wrong count would
    record a wrong cost, a missing text a traceback): the call is made again and its fresh
    answer replaces the row."""
    with Store.open(db) as store:
        first = session(server, store)
        answers = [first.complete("one"), first.judge("task", "an output", "a rubric")]
        first.flush()
    with sqlite3.connect(db) as connection:
        for key, response in connection.execute("SELECT key, response FROM model_cache").fetchall():
            broken = json.loads(response) | damage
            if "score" in damage and "score" not in json.loads(response):
                continue  # a judge's damage on the judge's row only
            if "score" not in damage and "score" in json.loads(response):
                continue
            connection.execute(
                "UPDATE model_cache SET response = ? WHERE key = ?", (json.dumps(broken), key)
            )
    calls_before = len(server.requests)
    with Store.open(db) as store:
        second = session(server, store)
        again = [second.complete("one"), second.judge("task", "an output", "a rubric")]
        second.flush()
    assert len(server.requests) == calls_before + 1  # the damaged row only
    assert [answer.text for answer in again[:1]] == [answers[0].text]
    assert again[1].score == answers[1].score
    with Store.open(db) as store:
        third = session(server, store)
        third.complete("one")
        third.judge("task", "an output", "a rubric")
    assert len(server.requests) == calls_before + 1  # replaced: both served from the cache
