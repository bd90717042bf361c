"""Saving a run: its model answers, the run, then what each plugged-in grader keeps of it in
its own tables (verdryx_core.graders.plugins, `after_save`), through the store's public
methods."""

from __future__ import annotations

from collections.abc import Iterable

from verdryx_core.errors import AfterSaveError
from verdryx_core.graders.plugins import AfterSaveFailed, after_save
from verdryx_core.runs import EvalRun
from verdryx_core.store import CacheEntry, Store

__all__ = ["save_run"]


def save_run(store: Store, run: EvalRun, *, cache_entries: Iterable[CacheEntry]) -> None:
    """Raises StoreError; the answers go first, so a run that is stored never misses them.

    The answers are a transaction of their own: they were paid for, and a run that cannot
    be stored (its totals past the maxima, docs/store.md) should not cost them again. The run
    and what plugged-in graders keep of it (the contracts' verdict rows) are one
    transaction: stored together or not at all.

    A grader whose `after_save` raises its own exception (a bug in an add-on) does not cost
    the run: the transaction is rolled back and made again without that grader, and once the
    run is stored `AfterSaveError` names each grader that failed."""
    entries = list(cache_entries)
    if entries:
        store.cache_put_many(entries)
    failed: dict[str, str] = {}
    while True:
        try:
            with store.batch():
                store.save_run(run)
                after_save(store, run, skip=failed)
        except AfterSaveFailed as failure:
            failed[failure.name] = failure.line  # at most once per grader: this ends
            continue
        break
    if failed:
        raise AfterSaveError(list(failed.values()), run=run)
