"""Row order does not change the answer: a trace written run by run and the same calls
shuffled across segments and row groups reduce to the same runs (docs/cost-per-outcome.md),
whichever way the reader hands run ids (dictionary-encoded, or plain strings once runs
look scattered). Also the exact coding of run ids, collisions included."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verdryx_core.addons.traces import (
    BLOCKED_DECISIONS,
    cost_report,
    cost_report_for,
    read_parquet_runs,
    reduce_traces,
)
from verdryx_core.addons.traces.parquet import iter_trace_batches, trace_files
from verdryx_core.addons.traces.reduction import COST_COLUMNS, RunReducer
from verdryx_core.addons.traces.run_codes import HashIndex, RunCoder, split_words

SCHEMA = pa.schema(
    [
        ("ts_millis", pa.int64()),
        ("run_id", pa.string()),
        ("decision", pa.string()),
        ("cost_microusd", pa.int64()),
        ("step", pa.uint32()),
        ("outcome", pa.string()),
    ]
)

#: Run ids of every shape: short, long (past the fingerprinted 128 bytes), non-ASCII,
#: sharing prefixes and suffixes.
run_ids = st.one_of(
    st.sampled_from(["r1", "r2", "run-00000001", "run-00000010", "x" * 8, "x" * 9, "é"]),
    st.text(min_size=1, max_size=40),
    st.text(alphabet="ab", min_size=120, max_size=140),
)


@st.composite
def traces(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Calls of distinct runs, each (run, step) once: the order of rows then cannot matter
    (ties in step are broken by read order, which a shuffle changes on purpose)."""
    ids = draw(st.lists(run_ids, min_size=1, max_size=12, unique=True))
    rows = []
    for run in [*ids, ""]:
        steps = draw(st.lists(st.integers(0, 40), max_size=8, unique=True))
        for step in steps:
            rows.append(
                {
                    "ts_millis": draw(st.none() | st.integers(0, 99)),
                    "run_id": run if run or draw(st.booleans()) else None,
                    "decision": draw(st.sampled_from(["allowed", "", *sorted(BLOCKED_DECISIONS)])),
                    "cost_microusd": draw(st.none() | st.integers(0, 5_000_000)),
                    "step": step,
                    "outcome": draw(st.sampled_from(["", "case_resolved", "escalated"])),
                }
            )
    return rows


def write(folder: Path, rows: list[dict[str, Any]], files: int, group_rows: int) -> None:
    per = max(1, -(-len(rows) // files))
    for number, start in enumerate(range(0, max(len(rows), 1), per)):
        table = pa.Table.from_pylist(rows[start : start + per], schema=SCHEMA)
        pq.write_table(table, folder / f"calls-{number:04d}.parquet", row_group_size=group_rows)


def by_run(records: list[dict[str, Any]]) -> list[str]:
    """Records without their order (a shuffle changes which run appears first)."""
    return sorted(repr(sorted(record.items())) for record in records)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    traces(),
    st.randoms(use_true_random=False),
    st.integers(1, 4),
    st.integers(1, 16),
    st.integers(1, 4),
)
def test_shuffled_trace_reduces_like_the_ordered_one(
    rows: list[dict[str, Any]], random: Any, files: int, group_rows: int, shuffled_files: int
) -> None:
    ordered = sorted(rows, key=lambda row: (row["run_id"] or "", row["step"]))
    shuffled = list(rows)
    random.shuffle(shuffled)
    with tempfile.TemporaryDirectory() as tmp:
        first, second = Path(tmp, "ordered"), Path(tmp, "shuffled")
        first.mkdir()
        second.mkdir()
        write(first, ordered, files, group_rows)
        write(second, shuffled, shuffled_files, group_rows)
        # Exact: counts and integer microdollar totals, as the CLI reports them.
        assert cost_report_for(second) == cost_report_for(first)
        assert cost_report(reduce_traces(second)) == cost_report(reduce_traces(first))
        assert by_run(read_parquet_runs(second)) == by_run(read_parquet_runs(first))


def test_scattered_runs_switch_to_plain_strings_and_agree(tmp_path: Path) -> None:
    """Large enough that the reader really switches: in the shuffled copy a row group holds
    more distinct runs than half its rows, so later row groups arrive as plain strings; in
    the sorted copy runs repeat (ten calls each) and stay dictionary-encoded. Both agree."""
    rng = np.random.default_rng(7)
    count = 30_000
    run = rng.integers(0, 3_000, count)  # ten calls a run
    step = np.arange(count)
    table = pa.table(
        {
            "run_id": pa.array([f"run-{value}" for value in run.tolist()]),
            "step": pa.array(step, pa.uint32()),
            "outcome": pa.array(rng.choice(["", "case_resolved", "abandoned"], count)),
            "cost_microusd": pa.array(rng.integers(0, 9_000, count)),
            "decision": pa.array(rng.choice(["allowed", "killed"], count)),
        }
    )
    scattered, ordered = tmp_path / "scattered", tmp_path / "ordered"
    scattered.mkdir()
    ordered.mkdir()
    pq.write_table(table, scattered / "calls-0.parquet", row_group_size=2_000)
    by_key = pc.sort_indices(table, sort_keys=[("run_id", "ascending"), ("step", "ascending")])
    pq.write_table(table.take(by_key), ordered / "calls-0.parquet", row_group_size=2_000)
    assert cost_report_for(scattered) == cost_report_for(ordered)
    assert by_run(read_parquet_runs(scattered)) == by_run(read_parquet_runs(ordered))
    # The switch itself: the scattered trace's run ids arrive dictionary-encoded only
    # until the first row group shows them scattered; the ordered one's always do.
    for folder, switches in ((scattered, True), (ordered, False)):
        reducer = RunReducer(keep_loose=False, ordered=False)
        encoded = []
        for where, batch in iter_trace_batches(
            trace_files(folder),
            COST_COLUMNS,
            run_dictionary=lambda r=reducer: r.wants_run_dictionary,
        ):
            encoded.append(pa.types.is_dictionary(batch.schema.field("run_id").type))
            reducer.feed(batch, source=where)
        assert encoded[0] and len(encoded) == 15
        assert any(encoded[1:]) is not switches


# -- run id coding -------------------------------------------------------------------------


def first_seen_codes(batches: list[list[str]]) -> list[np.ndarray]:
    seen: dict[str, int] = {}
    return [np.array([seen.setdefault(value, len(seen)) for value in batch]) for batch in batches]


id_batches = st.lists(st.lists(run_ids, max_size=30), min_size=1, max_size=4)


@settings(max_examples=100, deadline=None)
@given(id_batches, st.booleans())
def test_coder_numbers_ids_in_first_seen_order(batches: list[list[str]], large: bool) -> None:
    coder = RunCoder(pa, pc)
    kind = pa.large_string() if large else pa.string()
    for batch, expected in zip(batches, first_seen_codes(batches), strict=True):
        # A slice: the Arrow offsets do not start at zero.
        ids = pa.array(["pad", *batch], type=kind).slice(1)
        assert coder.code(ids).tolist() == expected.tolist()
    assert coder.strings.to_pylist() == list(dict.fromkeys(v for b in batches for v in b))


@settings(max_examples=60, deadline=None)
@given(id_batches, st.integers(0, 3))
def test_fingerprint_collisions_are_caught(batches: list[list[str]], bits: int) -> None:
    """A fingerprint of only a few values collides all the time; codes stay exact."""
    mask = np.uint64((1 << bits) - 1)
    coder = RunCoder(pa, pc, fingerprint_fn=lambda lengths, words: lengths.astype(np.uint64) & mask)
    for batch, expected in zip(batches, first_seen_codes(batches), strict=True):
        assert coder.code(pa.array(batch, type=pa.string())).tolist() == expected.tolist()


@given(st.lists(st.text(max_size=30), max_size=20))
def test_words_are_the_bytes_of_each_id(values: list[str]) -> None:
    split = split_words(pa.array(["skip", *values]).slice(1))
    assert split is not None
    lengths, words = split
    for index, value in enumerate(values):
        raw = value.encode()
        assert lengths[index] == len(raw)
        for position, word in enumerate(words):
            chunk = raw[8 * position : 8 * position + 8]
            assert int(word[index]) == int.from_bytes(chunk, "little")


def test_ids_past_the_word_limit_are_coded_as_strings() -> None:
    coder = RunCoder(pa, pc)
    long = ["a" * 200, "b" * 200, "a" * 200]
    assert coder.code(pa.array(["r1", "r2"])).tolist() == [0, 1]
    assert coder.code(pa.array([*long, "r2"])).tolist() == [2, 3, 2, 1]
    assert coder.by_strings
    assert coder.code(pa.array(["r1", "c"])).tolist() == [0, 4]


@given(st.lists(run_ids, min_size=1, max_size=10), st.lists(run_ids, min_size=1, max_size=10))
def test_an_id_keeps_its_fingerprint_in_any_batch(first: list[str], second: list[str]) -> None:
    """Batches of different longest ids split into different numbers of words."""
    coder = RunCoder(pa, pc)
    one, two = coder.keys(pa.array(first)), coder.keys(pa.array(second))
    if one is None or two is None:
        return  # an id past the word limit: coded as strings, no fingerprint
    seen = dict(zip(first, one.hashes.tolist(), strict=True))
    for value, fingerprint in zip(second, two.hashes.tolist(), strict=True):
        assert seen.get(value, fingerprint) == fingerprint


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.lists(st.integers(0, 2**64 - 1) | st.integers(0, 40), max_size=300),
        min_size=1,
        max_size=5,
    )
)
def test_hash_index_finds_what_was_inserted(batches: list[list[int]]) -> None:
    """Small keys share their top bits, so they crowd one home slot: probing must still
    find each of them, across inserts that grow the table."""
    index = HashIndex(bits=1)
    reference: dict[int, int] = {}
    for batch in batches:
        keys = np.array(batch, dtype=np.uint64)
        expected = [reference.get(int(key), -1) for key in keys]
        assert index.lookup(keys).tolist() == expected
        fresh = list(dict.fromkeys(int(key) for key in keys if int(key) not in reference))
        values = np.arange(len(reference), len(reference) + len(fresh))
        index.insert(np.array(fresh, dtype=np.uint64), values)
        reference.update(zip(fresh, values.tolist(), strict=True))
        assert len(index) == len(reference)
        assert index.lookup(keys).tolist() == [reference[int(key)] for key in keys]
