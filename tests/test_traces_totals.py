"""The cost-only reduction (one streaming hash aggregation, docs/cost-per-outcome.md) agrees
exactly with the plain loop over rows and with the general reduction, and hands a trace it
cannot key back to the general one."""

from __future__ import annotations

import threading
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_traces_reduction import as_batch, segmented, slow_reduce, slow_totals
from verdryx_core.addons.traces import cost_report, cost_report_for, reduce_traces
from verdryx_core.addons.traces import totals as totals_module
from verdryx_core.addons.traces.totals import KeySpaceExceeded, RunTotals


def totals_of(reduced: Any) -> dict[str, tuple[int, int]]:
    counts, micro = reduced.outcome_totals()
    tags = [*reduced.outcomes, "(untagged)"]
    return {tags[i]: (int(counts[i]), int(micro[i])) for i in range(len(tags)) if counts[i]}


@settings(max_examples=60, deadline=None)
@given(segmented(), st.lists(st.booleans(), min_size=1), st.booleans())
def test_batches_agree_with_the_row_loop(
    files: list[list[list[dict[str, Any]]]], dictionary: list[bool], keep_loose: bool
) -> None:
    """Runs split across batches, some with run ids dictionary-encoded (reduced per run
    first) and some plain (rows as they are); ties in step, null steps, run-less calls."""
    groups = [group for groups in files for group in groups]
    rows = sum(len(group) for group in groups)
    batches = [
        ("<batch>", as_batch(group, dictionary=dictionary[number % len(dictionary)]))
        for number, group in enumerate(groups)
    ]
    reduced = RunTotals(rows=rows, keep_loose=keep_loose).reduce_batches(batches)
    expected = slow_reduce([row for group in groups for row in group])
    assert totals_of(reduced) == slow_totals(expected)
    assert reduced.rows_read == rows


def write(folder: Path, table: pa.Table, row_group_size: int) -> Path:
    folder.mkdir()
    pq.write_table(table, folder / "calls-0.parquet", row_group_size=row_group_size)
    return folder


@pytest.mark.parametrize(
    ("step", "tags"),
    [
        (2**60, 3),  # a step past the key's step bits
        (-1, 3),  # a negative step (an int64 column)
        (1, 300),  # more distinct tags than the key's 8 bits hold
    ],
)
def test_a_trace_that_does_not_fit_the_key_takes_the_general_reduction(
    tmp_path: Path, step: int, tags: int
) -> None:
    count = 600
    rng = np.random.default_rng(3)
    table = pa.table(
        {
            "run_id": pa.array([f"r{i % 40}" for i in range(count)]),
            "step": pa.array(np.where(np.arange(count) == count - 1, step, 0), pa.int64()),
            "outcome": pa.array([f"tag-{i % tags}" for i in range(count)]),
            "cost_microusd": pa.array(rng.integers(0, 9_000, count)),
        }
    )
    folder = write(tmp_path / "trace", table, 100)
    with pytest.raises(KeySpaceExceeded):
        RunTotals(rows=count).reduce_batches(
            ("<batch>", batch) for batch in table.to_batches(max_chunksize=100)
        )
    assert cost_report_for(folder) == cost_report(reduce_traces(folder))


def test_scattered_row_groups_switch_to_plain_strings(tmp_path: Path) -> None:
    """Reading starts with run ids dictionary-encoded; a row group whose runs barely repeat
    switches the rest to plain strings, and the answer is the general reduction's."""
    rng = np.random.default_rng(11)
    count = 4_000
    table = pa.table(
        {
            "run_id": pa.array([f"run-{value}" for value in rng.integers(0, 3_000, count)]),
            "step": pa.array(rng.integers(0, 5, count), pa.uint32()),
            "outcome": pa.array(rng.choice(["", "case_resolved", "abandoned"], count)),
            "cost_microusd": pa.array(rng.integers(0, 9_000, count)),
        }
    )
    folder = write(tmp_path / "trace", table, 500)
    totals = RunTotals(rows=count)
    handle = pq.ParquetFile(folder / "calls-0.parquet", read_dictionary=["run_id"])
    assert totals.wants_run_dictionary
    totals.prepare(handle.read_row_group(0).to_batches()[0], source="row group 0")
    assert not totals.wants_run_dictionary
    assert cost_report_for(folder) == cost_report(reduce_traces(folder))


def test_the_aggregation_holds_few_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """The aggregation's source would queue every batch it is handed; a new batch goes in
    only once all but `_IN_FLIGHT` of the earlier ones have been consumed and freed."""
    finalizers: list[weakref.finalize[Any, Any]] = []
    most = [0]
    finalize = weakref.finalize

    def recording(obj: Any, callback: Any) -> weakref.finalize[Any, Any]:
        finalizer = finalize(obj, callback)
        if isinstance(getattr(callback, "__self__", None), threading.Semaphore):
            finalizers.append(finalizer)  # a batch's slot (not the source's own finalizer)
        return finalizer

    monkeypatch.setattr(totals_module.weakref, "finalize", recording)
    rows = [
        {"run_id": f"r{i % 7}", "outcome": "case_resolved", "cost_microusd": i} for i in range(400)
    ]
    totals = RunTotals(rows=len(rows))

    def prepared() -> Any:
        for start in range(0, len(rows), 10):
            most[0] = max(most[0], sum(finalizer.alive for finalizer in finalizers))
            yield totals.prepare(as_batch(rows[start : start + 10]))

    reduced = totals.reduce(prepared())
    assert len(finalizers) == 40
    assert most[0] <= totals_module._IN_FLIGHT
    assert totals_of(reduced) == {"case_resolved": (7, sum(range(400)))}
