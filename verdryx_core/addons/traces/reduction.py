"""The TokenFuse run reduction, streamed batch by batch with a compact state per run.

The rules (docs/cost-per-outcome.md, "The TokenFuse reduction"): calls are ordered by
(run_id, step), ties kept in read order; the last non-empty outcome wins; every call's cost
folds into its run unless its decision is one of the nine blocked reasons (then it counts as
a call and costs 0); a run that never carried a tag is `(untagged)`; a call without a run id
(null, or empty: the TokenFuse writer's "unset") is its own record when it carries an
outcome and is dropped otherwise. A null step falls back to the call's global row index
(0-based, counting every row read, kept or not).

How it stays exact and bounded: each batch (a slice of one Parquet row group) is first
reduced on its own, grouped by the row group's dictionary codes for run_id (a dense
numbering of its run ids that Parquet already stores): per run the call count, cost in
integer microdollars, first row, and for each "last (or first) by step" field the winning
row's step, global row index and value. These partials queue; once they outnumber the runs
seen so far they are folded into the state in bulk: their run ids get integer codes from one
pyarrow hash table, and numpy scatters fold every column into int64 arrays indexed by code.
Partials combine associatively, so a run split across batches, row groups and files ends up
exactly where a sort of the whole trace would put it, while memory grows with the number of
runs, never the number of rows. Nothing loops over rows in Python; the only Python loops run
over batches and over the distinct strings of small columns (tags, agent ids).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import numpy as np

from verdryx_core.addons.traces.columns import BatchColumns
from verdryx_core.addons.traces.reduced import ReducedRuns, RunColumns
from verdryx_core.addons.traces.run_codes import Keys, RunCoder, concat_keys

__all__ = [
    "COST_COLUMNS",
    "DETAIL_COLUMNS",
    "ReducedRuns",
    "RunColumns",
    "RunReducer",
    "reduce_batches",
]

#: Columns the cost reduction reads; every one is optional in a file.
COST_COLUMNS: Final = ("run_id", "step", "outcome", "cost_microusd", "decision")
#: The SLO adds the subjects and the settle timestamp.
DETAIL_COLUMNS: Final = (*COST_COLUMNS, "agent_id", "key_id", "ts_millis")

#: A (step, row) pair is folded into one int64 as step * bound + row while that fits; past
#: this the reduction sorts instead (same answer, slower).
_COMPOSITE_LIMIT: Final = 2**62

#: Queued per-batch partials are folded into the state once they outnumber the runs known
#: so far (amortising the bulk coding of their ids), and never below this many.
_FLUSH_FLOOR: Final = 1 << 20

#: A batch whose distinct run ids exceed this share of its rows barely shrinks when grouped
#: (its runs are scattered over the trace): from then on run ids are read as plain strings
#: and rows go to the fold one by one, skipping the per-row-group dictionary.
_SCATTERED_SHARE: Final = 0.5

_INT64_MIN: Final = np.iinfo(np.int64).min
_INT64_MAX: Final = np.iinfo(np.int64).max

#: Winner fields: name -> keep the largest (step, row)? "Last by step" does; the first
#: timestamp keeps the smallest.
_WINNERS: Final = {"outcome": True, "agent": True, "key": True, "ts_first": False, "ts_last": True}


def _group_pick(
    groups: np.ndarray,
    primary: np.ndarray,
    secondary: np.ndarray,
    bound: int,
    size: int,
    *,
    largest: bool,
) -> np.ndarray:
    """Per group, the position of the row with the largest (or smallest) (primary,
    secondary), or -1. `secondary` is unique within a group and lies in [0, bound)."""
    out = np.full(size, -1, dtype=np.int64)
    if groups.size == 0:
        return out
    bound = max(bound, 1)
    reach = max(abs(int(primary.min())), abs(int(primary.max())))
    if reach < _COMPOSITE_LIMIT // bound:
        key = primary * bound + secondary
        if largest:
            best = np.full(size, _INT64_MIN, dtype=np.int64)
            np.maximum.at(best, groups, key)
        else:
            best = np.full(size, _INT64_MAX, dtype=np.int64)
            np.minimum.at(best, groups, key)
        hit = np.flatnonzero(key == best[groups])
        out[groups[hit]] = hit
        return out
    order = np.lexsort((secondary, primary, groups))
    ordered = groups[order]
    edge = ordered[1:] != ordered[:-1]
    pick = np.flatnonzero(np.r_[edge, True] if largest else np.r_[True, edge])
    out[ordered[pick]] = order[pick]
    return out


class _Partial:
    """One batch reduced per run (or per row, see `RunReducer.feed`): its run ids (pyarrow
    strings), their coding keys (None once ids are coded as strings) and int64 columns."""

    __slots__ = ("cols", "ids", "keys")

    def __init__(self, ids: Any, keys: Keys | None, cols: dict[str, np.ndarray]) -> None:
        self.ids = ids
        self.keys = keys
        self.cols = cols


class _Prepared:
    """A batch reduced on its own (`RunReducer.prepare`), waiting to be absorbed."""

    __slots__ = ("loose", "partial", "row")

    def __init__(self, partial: _Partial | None, loose: np.ndarray, row: dict[str, np.ndarray]):
        self.partial = partial
        self.loose = loose  # rows without a run id that carry a tag
        self.row = row


class _State:
    """Growable int64 columns indexed by run code."""

    __slots__ = ("cols", "fills", "size")

    def __init__(self, fills: dict[str, int]) -> None:
        self.fills = fills
        self.size = 0
        self.cols = {name: np.full(0, fill, dtype=np.int64) for name, fill in fills.items()}

    def reserve(self, size: int) -> None:
        capacity = len(next(iter(self.cols.values())))
        if size > capacity:
            capacity = max(size, 2 * capacity, 1024)
            for name, column in self.cols.items():
                grown = np.full(capacity, self.fills[name], dtype=np.int64)
                grown[: len(column)] = column
                self.cols[name] = grown
        self.size = max(self.size, size)


class RunReducer(BatchColumns):
    """Feed record batches in read order, then `finish()`.

    `detail=True` also keeps what the SLO reads (refused calls, agent and key ids, first and
    last timestamps); `keep_loose=False` folds run-less calls into per-outcome totals.
    `ordered=False` skips tracking the row each run first appears at: runs then come out
    in an unspecified order, which totals do not depend on.
    `flush_rows` fixes how many queued partial rows trigger a fold (default: as many as
    there are runs so far, at least a million), e.g. 1 to fold after every batch.
    """

    def __init__(
        self,
        *,
        detail: bool = False,
        keep_loose: bool = True,
        ordered: bool = True,
        flush_rows: int | None = None,
    ) -> None:
        super().__init__(detail=detail, keep_loose=keep_loose)
        self._flush_rows = flush_rows
        self._ordered = ordered
        self._known = RunCoder(self._pa, self._pc)
        self._run_dictionary = True
        self._buffer: list[_Partial] = []
        self._buffered = 0
        fills = {"calls": 0, "cost": 0, "first": _INT64_MAX}
        winners = ("outcome", *_WINNERS) if detail else ("outcome",)
        if detail:
            fills["refused"] = 0
        for name in dict.fromkeys(winners):
            fills |= {f"{name}_step": 0, f"{name}_idx": -1, f"{name}_val": -1}
        self._winners = tuple(dict.fromkeys(winners))
        self._state = _State(fills)

    @property
    def columns(self) -> tuple[str, ...]:
        return DETAIL_COLUMNS if self._detail else COST_COLUMNS

    @property
    def wants_run_dictionary(self) -> bool:
        """Should a reader hand run ids dictionary-encoded? True until a batch shows runs
        scattered over the trace (then decoding the dictionary is work thrown away)."""
        return self._run_dictionary

    # -- feeding --------------------------------------------------------------------------

    def feed(self, batch: Any, *, source: str = "<batch>") -> None:
        """Reduce one record batch (rows in read order) into the running state."""
        self.absorb(self.prepare(batch, source=source))

    def prepare(self, batch: Any, *, source: str = "<batch>") -> _Prepared | None:
        """The first half of `feed`: reduce a batch on its own (columns, partial per run,
        run id keys). It may run on a reader thread while `absorb` folds earlier batches on
        another, so the two halves of the work share the cores; batches must be prepared
        in read order and absorbed in the same order."""
        n = batch.num_rows
        if n == 0:
            return None
        base = self._rows
        self._rows += n

        plain = self._plain_runs(batch, source)
        run_col = None if plain is not None else self._strings(batch, "run_id", source)
        if plain is not None:
            lengths = self._pc.fill_null(self._pc.binary_length(plain), 0)
            run_ok = lengths.to_numpy(zero_copy_only=False) > 0
        elif run_col is None:
            run_ok = np.zeros(n, dtype=bool)
        else:
            lengths = self._pc.fill_null(self._pc.binary_length(run_col[1]), 0)
            run_ok = np.append(lengths.to_numpy(zero_copy_only=False) > 0, False)[run_col[0]]
        tag = self._codes(batch, "outcome", self._outcomes, source)
        decision = self._strings(batch, "decision", source)
        cost_col = self._integers(batch, "cost_microusd", source)
        cost = np.zeros(n, dtype=np.int64) if cost_col is None else cost_col[0]
        if cost_col is not None:
            self._check_costs(cost, source, base)
        if decision is not None:
            cost = np.where(self._member(decision[1], self._blocked)[decision[0]], 0, cost)
        step_col = self._integers(batch, "step", source)

        def step_at(rows: np.ndarray) -> np.ndarray:
            # Only rows that can win a "by step" field need a step: computed for those.
            if step_col is None:
                return rows + base
            return np.where(step_col[1][rows], step_col[0][rows], rows + base)

        row: dict[str, np.ndarray] = {"tag": tag, "cost": cost}
        present = {"outcome": tag >= 0}
        values = {"outcome": tag}
        if self._detail:
            refused = (
                np.zeros(n, dtype=bool)
                if decision is None
                else self._member(decision[1], self._refused)[decision[0]]
            )
            row["refused"] = refused.astype(np.int64)
            row["agent"] = self._codes(batch, "agent_id", self._agents, source)
            row["key"] = self._codes(batch, "key_id", self._keys, source)
            ts_col = self._integers(batch, "ts_millis", source)
            if ts_col is None:
                row["ts"], row["has_ts"] = np.zeros(n, np.int64), np.zeros(n, dtype=bool)
            else:
                row["ts"], row["has_ts"] = ts_col
            present |= {
                "agent": row["agent"] >= 0,
                "key": row["key"] >= 0,
                "ts_first": row["has_ts"],
                "ts_last": row["has_ts"],
            }
            values |= {"agent": row["agent"], "key": row["key"], "ts_first": row["ts"]}
            values["ts_last"] = row["ts"]

        partial = None
        if run_ok.any():
            if plain is not None:
                partial = self._rows_partial(plain, run_ok, row, present, values, step_at, base)
            else:
                assert run_col is not None
                partial = self._partial(
                    run_col[0], run_col[1], run_ok, row, present, values, step_at, base
                )
                if len(partial.ids) > _SCATTERED_SHARE * n:
                    self._run_dictionary = False
        return _Prepared(partial, np.flatnonzero(~run_ok & (tag >= 0)), row)

    def absorb(self, prepared: _Prepared | None) -> None:
        """The second half of `feed`: fold a prepared batch into the running state."""
        if prepared is None:
            return
        partial = prepared.partial
        if partial is not None:
            self._buffer.append(partial)
            self._buffered += len(partial.ids)
            if self._buffered >= (self._flush_rows or max(len(self._known), _FLUSH_FLOOR)):
                self._flush()
        if prepared.loose.size:
            self._add_loose(prepared.loose, prepared.row)

    def _rows_partial(
        self,
        ids: Any,
        run_ok: np.ndarray,
        row: dict[str, np.ndarray],
        present: dict[str, np.ndarray],
        values: dict[str, np.ndarray],
        step_at: Any,
        base: int,
    ) -> _Partial:
        """One partial row per call: for batches whose runs do not repeat, grouping first
        would cost more than it saves. The fold groups them with everything else."""
        rows = np.arange(len(run_ok), dtype=np.int64)
        if not run_ok.all():
            rows = np.flatnonzero(run_ok)
            ids = ids.filter(self._pa.array(run_ok))
        cols: dict[str, np.ndarray] = {
            "calls": np.ones(rows.size, dtype=np.int64),
            "cost": row["cost"][rows],
        }
        if self._ordered:
            cols["first"] = rows + base
        if self._detail:
            cols["refused"] = row["refused"][rows]
        for name in self._winners:
            here = present[name][rows]
            cols[f"{name}_step"] = np.where(here, step_at(rows), 0)
            cols[f"{name}_idx"] = np.where(here, rows + base, -1)
            cols[f"{name}_val"] = np.where(here, values[name][rows], -1)
        ids = ids if self._pa.types.is_string(ids.type) else ids.cast(self._pa.string())
        return _Partial(ids, self._known.keys(ids), cols)

    def _partial(
        self,
        run_codes: np.ndarray,
        run_values: Any,
        run_ok: np.ndarray,
        row: dict[str, np.ndarray],
        present: dict[str, np.ndarray],
        values: dict[str, np.ndarray],
        step_at: Any,
        base: int,
    ) -> _Partial:
        """One row per run id of the batch, grouped by the batch's own dictionary codes (a
        dense numbering of its run ids that costs nothing: Parquet stores it). Rows without
        a run go to one extra group that is dropped."""
        size = len(run_values)
        n = len(run_ok)
        groups = np.where(run_ok, run_codes, size)
        calls = np.bincount(groups, minlength=size + 1)[:size]
        used = np.flatnonzero(calls)
        cols: dict[str, np.ndarray] = {"calls": calls[used].astype(np.int64)}
        totals = np.zeros(size + 1, dtype=np.int64)
        np.add.at(totals, groups, row["cost"])
        cols["cost"] = totals[used]
        if self._ordered:
            first = np.full(size + 1, n, dtype=np.int64)
            np.minimum.at(first, groups, np.arange(n, dtype=np.int64))
            cols["first"] = first[used] + base
        if self._detail:
            refused = np.zeros(size + 1, dtype=np.int64)
            np.add.at(refused, groups, row["refused"])
            cols["refused"] = refused[used]
        for name in self._winners:
            sub = np.flatnonzero(run_ok & present[name])
            step = step_at(sub)
            pick = _group_pick(run_codes[sub], step, sub, n, size, largest=_WINNERS[name])[used]
            found = pick >= 0
            winner = pick[found]
            for field, data, empty in (
                ("step", step[winner], 0),
                ("idx", sub[winner] + base, -1),
                ("val", values[name][sub[winner]], -1),
            ):
                column = np.full(used.size, empty, dtype=np.int64)
                column[found] = data
                cols[f"{name}_{field}"] = column
        ids = run_values.take(self._pa.array(used, type=self._pa.int64()))
        if not self._pa.types.is_string(ids.type):
            ids = ids.cast(self._pa.string())
        return _Partial(ids, self._known.keys(ids), cols)

    def _flush(self) -> None:
        """Fold the queued partials into the state: their run ids are coded in bulk (one
        hash table, built in pyarrow), then every column is folded with numpy scatters."""
        if not self._buffer:
            return
        pa = self._pa
        buffered, self._buffer, self._buffered = self._buffer, [], 0
        ids = pa.concat_arrays([part.ids for part in buffered])
        keys = [part.keys for part in buffered]
        codes = self._known.code(
            ids,
            None if any(key is None for key in keys) else concat_keys(keys),  # type: ignore[arg-type]
        )
        stacked = {
            name: np.concatenate([part.cols[name] for part in buffered])
            for name in buffered[0].cols
        }
        state = self._state
        state.reserve(len(self._known))
        cols = state.cols
        for name in ("calls", "cost", "refused"):
            if name in stacked:
                np.add.at(cols[name], codes, stacked[name])
        if self._ordered:
            np.minimum.at(cols["first"], codes, stacked["first"])
        for name in self._winners:
            largest = _WINNERS[name]
            idx = stacked[f"{name}_idx"]
            sub = np.flatnonzero(idx >= 0)
            if sub.size == 0:
                continue
            pick = _group_pick(
                codes[sub],
                stacked[f"{name}_step"][sub],
                idx[sub],
                self._rows,
                len(self._known),
                largest=largest,
            )
            touched = np.flatnonzero(pick >= 0)
            winner = sub[pick[touched]]
            new_step = stacked[f"{name}_step"][winner]
            old_idx = cols[f"{name}_idx"][touched]
            old_step = cols[f"{name}_step"][touched]
            # Every queued row comes after every row already folded, so on equal steps the
            # newer row is "later" (wins for last-by-step, loses for first-by-step).
            better = new_step >= old_step if largest else new_step < old_step
            take = (old_idx < 0) | better
            target, winner = touched[take], winner[take]
            for field in ("step", "idx", "val"):
                cols[f"{name}_{field}"][target] = stacked[f"{name}_{field}"][winner]

    # -- result ---------------------------------------------------------------------------

    def finish(self) -> ReducedRuns:
        """The reduced records: runs in order of first appearance, then run-less calls."""
        self._flush()
        state = self._state
        size = len(self._known)
        state.reserve(size)
        if self._ordered:
            order = np.argsort(state.cols["first"][:size], kind="stable")
        else:
            order = np.arange(size)

        def get(name: str) -> np.ndarray:
            return state.cols[name][:size][order]

        detail: dict[str, Any] = {}
        run_ids = None
        if self._detail:
            run_ids = self._known.strings.take(self._pa.array(order, type=self._pa.int64()))
            run_ids = run_ids.to_pylist()
            has_ts = get("ts_first_idx") >= 0
            detail = {
                "refused_calls": get("refused"),
                "agent_id": get("agent_val"),
                "key_id": get("key_val"),
                "first_ts_millis": np.where(has_ts, get("ts_first_val"), 0),
                "last_ts_millis": np.where(has_ts, get("ts_last_val"), 0),
                "has_ts": has_ts,
            }
        runs = RunColumns(
            run_id=run_ids,
            outcome=get("outcome_val"),
            cost_microusd=get("cost"),
            calls=get("calls"),
            **detail,
        )
        return ReducedRuns(
            outcomes=tuple(self._outcomes.strings()),
            agents=tuple(self._agents.strings()),
            keys=tuple(self._keys.strings()),
            runs=runs,
            loose=self._loose_columns() if self._keep_loose else None,
            loose_counts=self._loose_counts,
            loose_cost_microusd=self._loose_cost,
            rows_read=self._rows,
        )


def reduce_batches(
    batches: Iterable[tuple[str, Any]], *, detail: bool = False, keep_loose: bool = True
) -> ReducedRuns:
    """Reduce `(source, record batch)` pairs, in read order."""
    reducer = RunReducer(detail=detail, keep_loose=keep_loose)
    for source, batch in batches:
        reducer.feed(batch, source=source)
    return reducer.finish()
