"""Saving a run: its model answers, the run, then what each plugged-in grader keeps of it in
its own tables (verdryx_core.graders.plugins, `after_save`), through the store's public
methods."""

from __future__ import annotations

from collections.abc import Iterable

from verdryx_core.graders.plugins import after_save
from verdryx_core.runs import EvalRun
from verdryx_core.store import CacheEntry, Store

__all__ = ["save_run"]


def save_run(store: Store, run: EvalRun, *, cache_entries: Iterable[CacheEntry]) -> None:
    """Raises StoreError; the answers go first, so a run that is stored never misses them.

    The answers are a transaction of their own: they were paid for, and a run that cannot
    be stored (its totals past the maxima, docs/store.md) should not cost them again. The run
    and what plugged-in graders keep of it (the contracts' verdict rows) are one
    transaction: stored together or not at all."""
    entries = list(cache_entries)
    if entries:
        store.cache_put_many(entries)
    with store.batch():
        store.save_run(run)
        after_save(store, run)
