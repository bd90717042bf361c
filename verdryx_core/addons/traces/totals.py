"""The cost-only run reduction: one streaming hash aggregation keyed by run id.

Cost per outcome needs, per run, only its cost and its last tag (the tag of its last tagged
call by step, ties to the later row); not the order runs first appear in, nor subjects or
timestamps. That is a plain hash aggregation keyed by the run id string, which Arrow's
Acero engine runs in C++ as batches stream through it: every row is hashed at most once,
whatever the layout (a scattered trace, every run spread over all row groups, costs about
what an ordered one does), and memory holds one entry per run plus the batches in flight,
never the trace.

The last tag needs no comparison in Python: a tagged call carries one int64 key, its step,
its global row index and its tag code side by side in that order of bits, so the largest
key per run (Acero's `hash_max`) is the call with the largest (step, row), and its low
bits are the tag; an untagged call carries -1. The fields must fit their bits (row: the
trace's row count; tag: 8 bits; step: the rest, all of uint32 up to 8 million rows): a
trace where one does not raises `KeySpaceExceeded`, and the caller reduces it with
`RunReducer` instead (same answer, slower).

While a row group's run ids arrive dictionary-encoded and repeat (runs written together),
it is first reduced to one row per run with numpy, so the aggregation sees runs, not calls;
once a row group shows runs scattered (distinct ids over half its rows) ids are read as
plain strings and rows go to the aggregation as they are.

Batches are read and checked by the same column rules as `RunReducer` (`BatchColumns`), so
both reductions accept and refuse the same traces with the same messages.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Iterator
from typing import Any, Final

import numpy as np

from verdryx_core.addons.traces.columns import BatchColumns
from verdryx_core.addons.traces.reduced import ReducedRuns, RunColumns

__all__ = ["KeySpaceExceeded", "RunTotals"]

#: Bits of a key holding the tag code: 255 distinct tags (traces use a handful).
_TAG_BITS: Final = 8

#: A row group whose distinct run ids exceed this share of its rows barely shrinks when
#: reduced per run first: from then on run ids are read as plain strings.
_SCATTERED_SHARE: Final = 0.5

#: Batches handed to the aggregation and not yet consumed, at most (see `_rows_of`).
_IN_FLIGHT: Final = 2
_HOLD_SECONDS: Final = 5.0
#: How often a waiting thread looks up (for Ctrl-C, or a stopped aggregation).
_POLL_SECONDS: Final = 0.05

#: Sums of int64 costs below this are exact in float64, so numpy's bincount can add them.
_FLOAT_EXACT: Final = float(2**53)


class KeySpaceExceeded(Exception):
    """A call's step, row or tag does not fit its bits of the aggregation key."""


class _Stopped(Exception):
    """Raised in the aggregation's source when the caller was interrupted."""


class _Batch:
    """A batch prepared on its own (`RunTotals.prepare`): the rows for the aggregation (run
    id, cost, key) and the run-less tagged calls' tags and costs (records of their own)."""

    __slots__ = ("cost", "loose", "rows")

    def __init__(self, rows: Any | None, cost: Any, loose: dict[str, np.ndarray]) -> None:
        self.rows = rows
        self.cost = cost  # the numpy array under the rows' cost column (see `_rows_of`)
        self.loose = loose


class RunTotals(BatchColumns):
    """What `RunReducer(detail=False, ordered=False)` gives, by streaming hash aggregation:
    the same totals, runs in an unspecified order, no run ids or call counts kept. `rows`
    is at least the number of rows that will be read (it sizes the key's row field).

    Prepare batches in read order (`prepare`, which may run on a reader thread), then hand
    them, in the same order, to `reduce`; `reduce_batches` does both in one thread."""

    def __init__(self, *, rows: int, keep_loose: bool = True) -> None:
        super().__init__(detail=False, keep_loose=keep_loose)
        pa = self._pa
        self._row_shift = _TAG_BITS
        self._step_shift = _TAG_BITS + max(int(rows), 1).bit_length()
        if self._step_shift > 62:
            raise KeySpaceExceeded(f"{rows:,} rows do not fit a key")
        self._step_limit = 1 << (63 - self._step_shift)
        self._row_limit = 1 << (self._step_shift - _TAG_BITS)
        self._schema = pa.schema(
            [("run_id", pa.string()), ("cost", pa.int64()), ("last", pa.int64())]
        )
        self._run_dictionary = True
        self._stop = threading.Event()
        self._source_done = threading.Event()
        self._source_freed = threading.Event()

    @staticmethod
    def available() -> bool:
        """Does this pyarrow stream a Python source into Acero? Its Python face gained the
        node in 2026 (apache/arrow#50802); with an older one, use `RunReducer`."""
        try:
            from pyarrow import acero
        except ImportError:
            return False
        return hasattr(acero, "RecordBatchReaderSourceNodeOptions")

    @property
    def wants_run_dictionary(self) -> bool:
        """Should a reader hand run ids dictionary-encoded? True until a row group shows
        runs scattered over the trace (then decoding the dictionary is work thrown away)."""
        return self._run_dictionary

    def prepare(self, batch: Any, *, source: str = "<batch>") -> _Batch | None:
        """One batch's columns, checked, as the aggregation's rows."""
        n = batch.num_rows
        if n == 0:
            return None
        pa, pc = self._pa, self._pc
        base = self._rows
        self._rows += n
        if self._rows > self._row_limit:
            raise KeySpaceExceeded(f"{source}: more rows than the {self._row_limit:,} announced")
        ids, codes = self._run_ids(batch, source)
        if ids is None:
            run_ok = np.zeros(n, dtype=bool)
        else:
            named = pc.fill_null(pc.binary_length(ids), 0).to_numpy(zero_copy_only=False) > 0
            run_ok = named if codes is None else np.append(named, False)[codes]
        tag = self._codes(batch, "outcome", self._outcomes, source)
        cost_col = self._integers(batch, "cost_microusd", source)
        cost = np.zeros(n, dtype=np.int64) if cost_col is None else cost_col[0]
        if cost_col is not None:
            self._check_costs(cost, source, base)
        decision = self._strings(batch, "decision", source)
        if decision is not None:
            cost = np.where(self._member(decision[1], self._blocked)[decision[0]], 0, cost)
        loose = np.flatnonzero(~run_ok & (tag >= 0))
        rows = held = None
        if ids is not None and run_ok.any():
            key = self._tag_keys(batch, tag, base, source)
            if codes is None:
                # Run-less rows stay in: they group under a null or empty id, dropped at
                # the end (cheaper than copying every other row's string to filter them).
                held = np.array(cost, dtype=np.int64)
            else:
                ids, held, key = self._per_run(ids, codes, run_ok, cost, key)
                if len(held) > _SCATTERED_SHARE * n:
                    self._run_dictionary = False
            rows = pa.record_batch([ids, pa.array(held), pa.array(key)], schema=self._schema)
        return _Batch(rows, held, {"tag": tag[loose], "cost": cost[loose]})

    def _run_ids(self, batch: Any, source: str) -> tuple[Any | None, np.ndarray | None]:
        """(run ids, None) for plain strings, (dictionary, row codes with -1 for null) for
        a dictionary-encoded column, or (None, None) without one."""
        pa = self._pa
        index = batch.schema.get_field_index("run_id")
        if index < 0 or pa.types.is_null(batch.column(index).type):
            return None, None
        if pa.types.is_dictionary(batch.column(index).type):
            encoded = self._strings(batch, "run_id", source)  # refuses non-string values
            assert encoded is not None
            codes, values = encoded
            return _plain(pa, values), codes
        column = self._plain_runs(batch, source)  # refuses a column of non-strings
        return _plain(pa, column), None

    def _tag_keys(self, batch: Any, tag: np.ndarray, base: int, source: str) -> np.ndarray:
        """Each call's key: (step, row, tag) in one int64 for a tagged call, -1 otherwise."""
        at = np.flatnonzero(tag >= 0)
        key = np.full(len(tag), -1, dtype=np.int64)
        if at.size == 0:
            return key
        row = at + base
        step_col = self._integers(batch, "step", source)
        step = row if step_col is None else np.where(step_col[1][at], step_col[0][at], row)
        low, high = int(step.min()), int(step.max())
        if low < 0 or high >= self._step_limit or int(tag[at].max()) >= 1 << _TAG_BITS:
            raise KeySpaceExceeded(f"{source}: a step or tag does not fit the key")
        key[at] = (step << self._step_shift) | (row << self._row_shift) | tag[at]
        return key

    def _per_run(
        self, values: Any, codes: np.ndarray, run_ok: np.ndarray, cost: np.ndarray, key: np.ndarray
    ) -> tuple[Any, np.ndarray, np.ndarray]:
        """One row per run id of the batch, grouped by its dictionary codes (a dense
        numbering Parquet already stores); rows without a run go to a dropped extra group."""
        pa = self._pa
        size = len(values)
        groups = np.where(run_ok, codes, size)
        used = np.flatnonzero(np.bincount(groups, minlength=size + 1)[:size])
        if float(cost.sum(dtype=np.float64)) < _FLOAT_EXACT:
            # Every partial sum is an integer below 2**53: float64 adds it exactly.
            totals = np.bincount(groups, weights=cost, minlength=size + 1).astype(np.int64)
        else:
            totals = np.zeros(size + 1, dtype=np.int64)
            np.add.at(totals, groups, cost)
        best = np.full(size + 1, -1, dtype=np.int64)
        tagged = np.flatnonzero(key >= 0)
        np.maximum.at(best, groups[tagged], key[tagged])
        return values.take(pa.array(used, type=pa.int64())), totals[used], best[used]

    def reduce(self, prepared: Iterable[_Batch | None]) -> ReducedRuns:
        """Aggregate prepared batches (in read order) into the reduced runs.

        The plan runs on a worker while this thread waits in short, interruptible steps:
        blocked inside the plan, it would take Ctrl-C only when Python code next ran on it,
        and lose it there (in a buffer's finalizer, say). On an interruption the plan's
        source stops at its next batch and the worker ends before this raises."""
        outcome: dict[str, Any] = {}
        worker = threading.Thread(
            target=self._run_plan,
            args=(prepared, outcome),
            name="verdryx-trace-aggregation",
            daemon=True,
        )
        worker.start()
        try:
            while worker.is_alive():
                worker.join(_POLL_SECONDS)
        except BaseException:
            self._halt(worker)
            raise
        if "error" in outcome:
            self._halt(worker)
            raise outcome["error"]
        return self._result(outcome["runs"])

    def _halt(self, worker: threading.Thread) -> None:
        """Stop the plan and wait until its source has left the batches' generator: the
        plan can end while its reader thread is still inside it, and the caller closes
        that generator next (and may exit the interpreter, which must find no thread of
        Arrow's running Python code, nor a reader of Arrow's still to free)."""
        self._stop.set()
        worker.join()
        self._source_done.wait(_HOLD_SECONDS)
        self._source_freed.wait(_HOLD_SECONDS)

    def _run_plan(self, prepared: Iterable[_Batch | None], outcome: dict[str, Any]) -> None:
        from pyarrow import acero

        source = self._rows_of(prepared)
        weakref.finalize(source, self._source_freed.set)
        reader = self._pa.RecordBatchReader.from_batches(self._schema, source)
        del source  # the reader holds it; freed with the reader, on whichever thread
        plan = acero.Declaration.from_sequence(
            [
                acero.Declaration(
                    "record_batch_reader_source", acero.RecordBatchReaderSourceNodeOptions(reader)
                ),
                acero.Declaration(
                    "aggregate",
                    acero.AggregateNodeOptions(
                        [("cost", "hash_sum", None, "cost"), ("last", "hash_max", None, "last")],
                        keys=["run_id"],
                    ),
                ),
            ]
        )
        try:
            # One thread: reading and preparing run on their own thread beside it, and a
            # parallel aggregation spends more CPU merging per-thread tables than it saves.
            outcome["runs"] = plan.to_table(use_threads=False)
        except BaseException as exc:  # raised by `reduce`, on the caller's thread
            outcome["error"] = exc
        finally:
            # Released here, on this thread: kept alive by the error's traceback, the
            # reader (which wraps a Python generator) could be freed while the interpreter
            # shuts down, which pyarrow does not survive.
            del plan, reader

    def reduce_batches(self, batches: Iterable[tuple[str, Any]]) -> ReducedRuns:
        """Prepare and aggregate `(source, record batch)` pairs, in read order."""
        return self.reduce(self.prepare(batch, source=where) for where, batch in batches)

    def _rows_of(self, prepared: Iterable[_Batch | None]) -> Iterator[Any]:
        """The aggregation's input. Acero's source pulls batches as fast as they come and
        queues them for the aggregation (it applies no backpressure, apache/arrow#51047),
        which would let a fast reader fill memory: a batch
        is handed over only once fewer than `_IN_FLIGHT` are still held (a batch's cost
        array is freed when the aggregation is done with it)."""
        slots = threading.Semaphore(_IN_FLIGHT)
        try:
            for item in prepared:
                if self._stop.is_set():
                    raise _Stopped
                if item is None:
                    continue
                loose = item.loose
                if loose["tag"].size:
                    self._add_loose(np.arange(loose["tag"].size), loose)
                if item.rows is not None:
                    if self._acquire(slots):
                        weakref.finalize(item.cost, slots.release)
                    yield item.rows
        finally:
            self._source_done.set()

    def _acquire(self, slots: threading.Semaphore) -> bool:
        """A slot for one more batch; False after `_HOLD_SECONDS` (should a batch outlive
        its aggregation, reading goes on rather than waiting forever)."""
        for _ in range(round(_HOLD_SECONDS / _POLL_SECONDS)):
            if slots.acquire(timeout=_POLL_SECONDS):
                return True
            if self._stop.is_set():
                raise _Stopped
        return False

    def _result(self, runs: Any) -> ReducedRuns:
        pc = self._pc
        named = pc.fill_null(pc.binary_length(runs.column("run_id")), 0)
        keep = named.to_numpy(zero_copy_only=False) > 0
        cost = runs.column("cost").to_numpy().astype(np.int64, copy=False)[keep]
        last = runs.column("last").to_numpy().astype(np.int64, copy=False)[keep]
        tag = np.where(last >= 0, last & ((1 << _TAG_BITS) - 1), -1)
        return ReducedRuns(
            outcomes=tuple(self._outcomes.strings()),
            agents=(),
            keys=(),
            runs=RunColumns(run_id=None, outcome=tag, cost_microusd=cost, calls=None),
            loose=self._loose_columns() if self._keep_loose else None,
            loose_counts=self._loose_counts,
            loose_cost_microusd=self._loose_cost,
            rows_read=self._rows,
        )


def _plain(pa: Any, ids: Any) -> Any:
    """One key type for the aggregation, whatever each segment was written with."""
    return ids if pa.types.is_string(ids.type) else ids.cast(pa.string())
