"""One record batch's columns as the run reductions read them: typed, checked, coded.

Shared by `RunReducer` and `RunTotals`, so both accept and refuse the same traces with the
same one-line messages, and both fold run-less calls (their own records) the same way.
"""

from __future__ import annotations

from itertools import count, repeat
from typing import Any, Final

import numpy as np

from verdryx_core.addons.errors import TraceError
from verdryx_core.addons.traces._arrow import require_pyarrow
from verdryx_core.addons.traces.decisions import BLOCKED_DECISIONS, REFUSED_DECISIONS
from verdryx_core.addons.traces.reduced import RunColumns
from verdryx_core.limits import (
    MAX_COST_USD,
    MAX_TOTAL_COST_MICROUSD,
    MAX_TOTAL_COST_USD,
    MICROUSD_PER_USD,
)

__all__ = ["BatchColumns"]

#: One call's cost, in the reduction's unit.
_MAX_CALL_MICROUSD: Final = MAX_COST_USD * MICROUSD_PER_USD


class _Vocabulary:
    """Distinct strings of a small column (tags, agent ids, key ids) and their codes, in the
    order first seen."""

    __slots__ = ("_codes",)

    def __init__(self) -> None:
        self._codes: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._codes)

    def lookup(self, values: Any) -> np.ndarray:
        """Code per dictionary entry, -1 for empty or null, plus a trailing -1 slot so a
        null row (index -1) maps to it. The loop runs over distinct values, not rows."""
        strings = values.to_pylist()
        codes = self._codes
        out = np.fromiter(map(codes.get, strings, repeat(-1)), dtype=np.int64, count=len(strings))
        fresh = np.flatnonzero(out < 0)
        if fresh.size:
            unseen = [strings[i] for i in fresh.tolist()]
            start = len(codes)
            codes.update(zip(dict.fromkeys(value for value in unseen if value), count(start)))
            out[fresh] = np.fromiter(map(codes.get, unseen, repeat(-1)), dtype=np.int64)
        return np.append(out, -1)

    def strings(self) -> list[str]:
        return list(self._codes)


class BatchColumns:
    """Column access for a reduction fed batches in read order: counts the rows read and
    the money spent (for the maxima), codes small string columns through vocabularies, and
    keeps run-less tagged calls (one by one, or per outcome with `keep_loose=False`)."""

    def __init__(self, *, detail: bool, keep_loose: bool) -> None:
        self._pa, self._pc, _ = require_pyarrow("reducing TokenFuse traces")
        self._detail = detail
        self._keep_loose = keep_loose
        self._rows = 0
        self._spent = 0.0  # micro-dollars read so far (see _check_costs)
        self._outcomes = _Vocabulary()
        self._agents = _Vocabulary()
        self._keys = _Vocabulary()
        self._loose: list[dict[str, np.ndarray]] = []
        self._loose_counts = np.zeros(0, dtype=np.int64)
        self._loose_cost = np.zeros(0, dtype=np.int64)
        self._blocked = self._pa.array(sorted(BLOCKED_DECISIONS), type=self._pa.string())
        self._refused = self._pa.array(sorted(REFUSED_DECISIONS), type=self._pa.string())

    def _strings(self, batch: Any, name: str, source: str) -> tuple[np.ndarray, Any] | None:
        """(row codes with -1 for null, dictionary values) of a string column, or None."""
        pa, pc = self._pa, self._pc
        index = batch.schema.get_field_index(name)
        if index < 0:
            return None
        column = batch.column(index)
        if pa.types.is_null(column.type):
            return None
        if not pa.types.is_dictionary(column.type):
            if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
                # Checked before encoding: pyarrow cannot dictionary-encode a list, struct or
                # map column and would raise its own error instead of this line.
                raise TraceError(
                    f"{source}: column {name!r} has type {column.type}, expected a string "
                    "(TokenFuse writes Utf8); fix the writer or drop the column"
                )
            column = pc.dictionary_encode(column)
        values = column.dictionary
        if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
            raise TraceError(
                f"{source}: column {name!r} has type {values.type}, expected a string "
                "(TokenFuse writes Utf8); fix the writer or drop the column"
            )
        indices = column.indices
        if indices.null_count:
            indices = pc.fill_null(indices, -1)
        codes = indices.to_numpy(zero_copy_only=False)
        return codes.astype(np.int64, copy=False), values

    def _member(self, values: Any, value_set: Any) -> np.ndarray:
        hits = self._pc.fill_null(self._pc.is_in(values, value_set=value_set), False)
        return np.append(hits.to_numpy(zero_copy_only=False), False)

    def _integers(self, batch: Any, name: str, source: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(int64 values with 0 for null, validity) of an integer column, or None."""
        pa, pc = self._pa, self._pc
        index = batch.schema.get_field_index(name)
        if index < 0:
            return None
        column = batch.column(index)
        if pa.types.is_null(column.type):
            return None
        if not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)):
            raise TraceError(
                f"{source}: column {name!r} has type {column.type}, expected an integer "
                "(TokenFuse writes Int64/UInt32); fix the writer or drop the column"
            )
        try:
            as_int = pc.cast(column, pa.int64())
        except pa.ArrowInvalid as exc:
            raise TraceError(
                f"{source}: column {name!r} holds a value that is not a whole int64 ({exc}); "
                "expected integers such as microdollars or step numbers"
            ) from exc
        if as_int.null_count:
            valid = as_int.is_valid().to_numpy(zero_copy_only=False)
            as_int = pc.fill_null(as_int, 0)
        else:
            valid = np.ones(len(as_int), dtype=bool)
        values = as_int.to_numpy(zero_copy_only=False)
        return values.astype(np.int64, copy=False), valid

    def _codes(self, batch: Any, name: str, vocabulary: _Vocabulary, source: str) -> np.ndarray:
        column = self._strings(batch, name, source)
        if column is None:
            return np.full(batch.num_rows, -1, dtype=np.int64)
        return vocabulary.lookup(column[1])[column[0]]

    def _check_costs(self, cost: np.ndarray, source: str, base: int) -> None:
        """Every call's cost within [0, a call's maximum], and the trace's running total
        within the maximum of a sum (docs/store.md, "Maxima"), before anything is summed:
        numpy's int64 sums wrap silently (two calls of 2**62 would read as a negative
        total), and a negative cost would be shown as spend given back.

        All costs are then non-negative, so every per-run and per-outcome sum is at most the
        running total: bounding it bounds them all. The total is kept as a float, whose
        rounding (relative 1e-16 per batch) is far inside the margin between the maximum
        and int64's limit; the sums themselves stay exact int64."""
        if cost.size == 0:
            return
        low, high = int(cost.min()), int(cost.max())
        if low < 0 or high > _MAX_CALL_MICROUSD:
            bad = np.flatnonzero((cost < 0) | (cost > _MAX_CALL_MICROUSD))[0]
            value = int(cost[bad])
            raise TraceError(
                f"{source}: column 'cost_microusd' holds {value} (trace row {base + int(bad)}, "
                "counting from 0): "
                + (
                    "a cost is 0 or more"
                    if value < 0
                    else f"more than the maximum of {_MAX_CALL_MICROUSD:,} micro-dollars for "
                    "one call (docs/store.md)"
                )
                + "; fix the writer or drop the row"
            )
        self._spent += float(cost.sum(dtype=np.float64))
        if self._spent > MAX_TOTAL_COST_MICROUSD:
            raise TraceError(
                f"{source}: the trace's total cost passes the maximum of "
                f"{MAX_TOTAL_COST_MICROUSD:,} micro-dollars (${MAX_TOTAL_COST_USD:,}, "
                "docs/store.md) by this row group; check the cost_microusd values"
            )

    def _plain_runs(self, batch: Any, source: str) -> Any | None:
        """The run_id column when it holds plain strings (not dictionary-encoded)."""
        pa = self._pa
        index = batch.schema.get_field_index("run_id")
        if index < 0:
            return None
        column = batch.column(index)
        if pa.types.is_null(column.type) or pa.types.is_dictionary(column.type):
            return None
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            raise TraceError(
                f"{source}: column 'run_id' has type {column.type}, expected a string "
                "(TokenFuse writes Utf8); fix the writer or drop the column"
            )
        return column

    def _add_loose(self, loose: np.ndarray, row: dict[str, np.ndarray]) -> None:
        tag = row["tag"][loose]
        cost = row["cost"][loose]
        if not self._keep_loose:
            size = max(int(tag.max()) + 1, len(self._loose_counts))
            counts = np.zeros(size, dtype=np.int64)
            costs = np.zeros(size, dtype=np.int64)
            counts[: len(self._loose_counts)] = self._loose_counts
            costs[: len(self._loose_cost)] = self._loose_cost
            counts += np.bincount(tag, minlength=size)
            np.add.at(costs, tag, cost)
            self._loose_counts, self._loose_cost = counts, costs
            return
        kept = {"outcome": tag, "cost": cost}
        if self._detail:
            for name in ("refused", "agent", "key", "ts", "has_ts"):
                kept[name] = row[name][loose]
        self._loose.append(kept)

    def _loose_columns(self) -> RunColumns:
        def stack(name: str, dtype: Any = np.int64) -> np.ndarray:
            return np.concatenate([part[name] for part in self._loose] or [np.zeros(0, dtype)])

        detail: dict[str, Any] = {}
        if self._detail:
            ts = stack("ts")
            detail = {
                "refused_calls": stack("refused"),
                "agent_id": stack("agent"),
                "key_id": stack("key"),
                "first_ts_millis": ts,
                "last_ts_millis": ts,
                "has_ts": stack("has_ts", bool),
            }
        outcome = stack("outcome")
        return RunColumns(
            run_id=None,
            outcome=outcome,
            cost_microusd=stack("cost"),
            calls=np.ones(len(outcome), dtype=np.int64),
            **detail,
        )
