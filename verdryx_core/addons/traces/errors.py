"""The errors of trace loading: a bad file is named with its line, row or row group."""

from __future__ import annotations

from verdryx_core.errors import VerdryxError

__all__ = ["TraceError", "TracesExtraMissing"]


class TraceError(VerdryxError):
    """A trace or record file cannot be read as asked; the message names the file and where."""


class TracesExtraMissing(VerdryxError):
    """Parquet traces need pyarrow, which is the optional `traces` extra."""
