"""TokenFuse Parquet segments: listed, streamed by file and row group, and reduced per run."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final

from verdryx_core.addons.errors import TraceError
from verdryx_core.addons.traces._arrow import require_pyarrow, system_memory_pool
from verdryx_core.addons.traces._readahead import read_ahead
from verdryx_core.addons.traces.reduction import (
    COST_COLUMNS,
    DETAIL_COLUMNS,
    ReducedRuns,
    RunReducer,
)
from verdryx_core.addons.traces.runs import reduced_records
from verdryx_core.addons.traces.totals import KeySpaceExceeded, RunTotals

__all__ = [
    "BATCH_ROWS",
    "iter_trace_batches",
    "read_parquet",
    "read_parquet_runs",
    "reduce_traces",
    "trace_files",
]

#: Rows per record batch handed to the reduction: large enough that numpy's per-call
#: overhead vanishes, small enough that a batch is a few megabytes.
BATCH_ROWS: Final = 1 << 17

#: Read as dictionaries: per row group each distinct run id / tag is decoded once and the
#: rows arrive as integer codes, which is what the reduction groups by anyway.
_STRING_COLUMNS: Final = ("run_id", "outcome", "decision", "agent_id", "key_id")

#: Row groups up to this size are decoded in one call; larger ones batch by batch.
_WHOLE_GROUP_ROWS: Final = 1 << 20

#: Rows per batch when the cost-only reduction streams a row group: its memory is the
#: batches in flight (measured 40 MB less peak memory than whole 128Ki-row row groups on a
#: 5M-row trace, at the same speed).
_STREAM_ROWS: Final = 1 << 15


def trace_files(path: str | Path) -> list[Path]:
    """The segments of a trace: every `*.parquet` directly inside a directory, sorted by
    name (other files ignored), or the one `.parquet` file given."""
    path = Path(path)
    if path.is_dir():
        return sorted(
            (child for child in path.iterdir() if child.suffix.lower() == ".parquet"),
            key=lambda child: child.name,
        )
    if not path.exists():
        raise TraceError(
            f"{str(path)!r} does not exist; expected a .parquet file or a directory of them"
        )
    return [path]


def iter_trace_batches(
    files: Sequence[Path],
    columns: Sequence[str],
    *,
    batch_rows: int = BATCH_ROWS,
    run_dictionary: Callable[[], bool] | None = None,
    stream: bool = False,
) -> Iterator[tuple[str, Any]]:
    """`(where, batch)` over files in order and row groups in order: only one row group's
    columns are in memory at a time (with `stream`, only one batch's: decoded a batch at a
    time, a little slower). A file that lacks a column yields batches without it.
    String columns arrive dictionary-encoded; `run_id` too unless `run_dictionary()`, asked
    before each row group, says no (see `RunReducer.wants_run_dictionary`)."""
    _, _, pq = require_pyarrow("reading Parquet traces")
    import pyarrow

    for file in files:
        try:
            metadata = pq.read_metadata(file)
            schema = metadata.schema.to_arrow_schema()
            names = schema.names
            segment = _Segment(pq, file, metadata, names, _flat_strings(pyarrow, schema))
            segment.handle(run_dictionary is None or run_dictionary())
        except (pyarrow.ArrowException, OSError) as exc:
            raise TraceError(
                f"{file}: not a readable Parquet file ({exc}); expected a TokenFuse "
                "calls-*.parquet segment (remove or repair the file)"
            ) from exc
        wanted = [name for name in columns if name in names]
        try:
            for group in range(metadata.num_row_groups):
                handle = segment.handle(run_dictionary is None or run_dictionary())
                yield from _row_group(
                    handle, group, wanted, f"{file} (row group {group})", batch_rows, stream
                )
        finally:
            segment.close()


class _Segment:
    """One segment file, with a handle per way of reading run_id (opened when needed)."""

    def __init__(
        self, pq: Any, file: Path, metadata: Any, names: list[str], strings: set[str]
    ) -> None:
        self._pq, self._file, self._metadata = pq, file, metadata
        # Only flat string columns are read as dictionaries: the reader cannot dictionary-
        # encode a list or struct column (it raises KeyError on its name), and such a column
        # is refused by the reduction with one line naming it and its type.
        self._strings = [name for name in _STRING_COLUMNS if name in names and name in strings]
        self._handles: dict[bool, Any] = {}

    def handle(self, run_dictionary: bool) -> Any:
        if run_dictionary not in self._handles:
            wanted = [n for n in self._strings if run_dictionary or n != "run_id"]
            self._handles[run_dictionary] = self._pq.ParquetFile(
                self._file, metadata=self._metadata, read_dictionary=wanted
            )
        return self._handles[run_dictionary]

    def close(self) -> None:
        for handle in self._handles.values():
            handle.close()


def _flat_strings(pyarrow: Any, schema: Any) -> set[str]:
    """The names of the schema's top-level string columns."""
    return {
        item.name
        for item in schema
        if pyarrow.types.is_string(item.type) or pyarrow.types.is_large_string(item.type)
    }


def _row_group(
    handle: Any, group: int, wanted: list[str], where: str, batch_rows: int, stream: bool
) -> Iterator[tuple[str, Any]]:
    import pyarrow

    rows = handle.metadata.row_group(group).num_rows
    if not wanted:
        # Still counted: a null step falls back to the global row index.
        yield where, pyarrow.RecordBatch.from_arrays([pyarrow.nulls(rows)], names=["_"])
        return
    try:
        if rows <= _WHOLE_GROUP_ROWS and not stream:
            # One call decodes the columns in parallel; a batch at a time is slower.
            batches = handle.read_row_group(group, columns=wanted).to_batches(batch_rows)
        else:
            # A very large row group is streamed so memory stays at a batch.
            batches = handle.iter_batches(batch_size=batch_rows, row_groups=[group], columns=wanted)
        for batch in batches:
            yield where, batch
    except (pyarrow.ArrowException, OSError) as exc:
        raise TraceError(
            f"{where}: cannot be decoded ({exc}); the segment is damaged, remove or repair it"
        ) from exc


def reduce_traces(
    path: str | Path, *, detail: bool = False, keep_loose: bool = True, ordered: bool = True
) -> ReducedRuns:
    """Stream a trace file or directory through the run reduction (see `RunReducer`;
    without detail or order, `RunTotals`: a run is then a cost and a tag, which one hash
    aggregation computes faster and in less memory, whatever the layout)."""
    files = trace_files(path)
    if not detail and not ordered and RunTotals.available():
        rows = _row_count(files)
        if rows is not None:
            try:
                return _totals(files, rows, keep_loose=keep_loose)
            except KeySpaceExceeded:
                pass  # a step, row count or tag too large for its key: the general reduction
    reducer = RunReducer(detail=detail, keep_loose=keep_loose, ordered=ordered)
    columns = DETAIL_COLUMNS if detail else COST_COLUMNS
    batches = iter_trace_batches(
        files, columns, run_dictionary=lambda: reducer.wants_run_dictionary
    )
    # Three stages, each on its own thread, in read order: decode a row group, reduce it
    # on its own (`prepare`), fold it into the state (`absorb`, here).
    decoded = read_ahead(batches)
    prepared = read_ahead(reducer.prepare(batch, source=where) for where, batch in decoded)
    try:
        for item in prepared:
            reducer.absorb(item)
    finally:
        prepared.close()  # first: its thread stops pulling from `decoded`
        decoded.close()
    return reducer.finish()


def _row_count(files: Sequence[Path]) -> int | None:
    """The trace's rows from the segments' footers, or None when one cannot be read (the
    reduction that reads it then names the file and what is wrong)."""
    _, _, pq = require_pyarrow("reading Parquet traces")
    import pyarrow

    try:
        return sum(pq.read_metadata(file).num_rows for file in files)
    except (pyarrow.ArrowException, OSError):
        return None


def _totals(files: Sequence[Path], rows: int, *, keep_loose: bool) -> ReducedRuns:
    pa, _, _ = require_pyarrow("reading Parquet traces")
    with system_memory_pool(pa):
        totals = RunTotals(rows=rows, keep_loose=keep_loose)
        batches = iter_trace_batches(
            files,
            COST_COLUMNS,
            batch_rows=_STREAM_ROWS,
            run_dictionary=lambda: totals.wants_run_dictionary,
            stream=True,
        )
        # Two stages: one thread decodes, checks and keys a batch (`prepare`) while this
        # one aggregates the previous (`reduce`, in C++ without the GIL). A third stage or
        # a deeper queue measured no faster, and each batch held costs memory.
        keyed = read_ahead(
            (totals.prepare(batch, source=where) for where, batch in batches), depth=1
        )
        try:
            return totals.reduce(keyed)
        finally:
            keyed.close()


def read_parquet(path: str | Path) -> list[dict[str, Any]]:
    """One `{"outcome", "cost_usd"}` record per run, then per run-less tagged call."""
    return reduced_records(reduce_traces(path), detail=False)


def read_parquet_runs(path: str | Path) -> list[dict[str, Any]]:
    """The full per-run record the SLO reads (docs/cost-per-outcome.md, "The per-run record")."""
    return reduced_records(reduce_traces(path, detail=True), detail=True)
