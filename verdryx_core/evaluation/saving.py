"""Saving a run: its model answers, the run, and its contract verdict rows, through the
store's public methods."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from verdryx_core.addons.contracts.history import promise_of, save_verdicts, verdict_rows
from verdryx_core.cases import EvalCase, case_key
from verdryx_core.runs import EvalRun
from verdryx_core.store import CacheEntry, Store

__all__ = ["Promises", "promises_of", "save_run"]

#: Contract cases' own task and agent ids, by case key.
Promises = Mapping[str, Mapping[str, str | None]]


def promises_of(cases: Iterable[tuple[str, EvalCase]]) -> dict[str, dict[str, str | None]]:
    """(eval set id, case) pairs -> the contract cases' promises by case key."""
    return {
        case_key(eval_set_id, case.id): promise_of(case)
        for eval_set_id, case in cases
        if case.grader == "contract"
    }


def save_run(
    store: Store, run: EvalRun, *, cache_entries: Iterable[CacheEntry], promises: Promises
) -> None:
    """Raises StoreError; the answers go first, so a run that is stored never misses them.

    The answers are a transaction of their own: they were paid for, and a run that cannot
    be stored (its totals past the maxima, docs/store.md) should not cost them again. The run
    and its contract verdict rows are one transaction: stored together or not at all, never
    a run without the verdicts it produced."""
    entries = list(cache_entries)
    if entries:
        store.cache_put_many(entries)
    rows = verdict_rows(run, promises)
    with store.batch():
        store.save_run(run)
        if rows:
            save_verdicts(store, rows)
