"""Merging stores: the runs, scores, baselines and cache entries of several stores copied into
one, with the rows of add-on tables the caller names (the contracts' verdicts; docs/store.md,
"Merging stores").

Everything is read and compared first; a row whose id is already taken by different content
is a conflict, and any conflict refuses the whole merge before anything is written. Then
everything new is written in one transaction, as upserts of identical rows: rows already
present are skipped, so merging twice changes nothing, and two merges of the same stores
into one PostgreSQL store at once both succeed (`_write`).

Cache entries are answers, not records: two CI jobs asking a model the same thing may get
different answers under the same key. The target's entry (or the first source's) is kept,
and the count of such entries is reported, not refused.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from verdryx_core.errors import UsageError
from verdryx_core.runs import Baseline, EvalRun
from verdryx_core.store.base import CacheEntry, Store

__all__ = ["AddonRows", "MergeResult", "merge_stores"]

#: Conflicts named in the refusal before "and N more".
_SHOWN: Final = 5
#: The advisory lock merges write under (docs/store.md, "Merging stores"); other constants
#: than the store's ("verd"), the service's ("vrsv") and the verdict table's ("vrct").
_MERGE_LOCK: Final = 0x76726D67  # "vrmg"


class AddonRows(Protocol):
    """The rows an add-on keeps in a table of its own, as a merge copies them (the contracts'
    verdicts: verdryx_core.addons.contracts.history)."""

    #: The word for them in the counts (`{name}_added`, `{name}_present`).
    name: str

    def rows(self, store: Store) -> list[dict[str, Any]]: ...

    def identity(self, row: Mapping[str, Any]) -> Hashable: ...

    def describe(self, identity: Hashable) -> str: ...

    def save(self, store: Store, rows: Iterable[Mapping[str, Any]]) -> None: ...


@dataclass(slots=True)
class MergeResult:
    """What a merge added and what it found already there."""

    runs_added: int = 0
    runs_present: int = 0
    baselines_added: int = 0
    baselines_present: int = 0
    cache_added: int = 0
    cache_present: int = 0
    cache_kept: int = 0  # same key, another answer: the first one kept
    #: Add-on rows added and found present, by the add-on's word for them.
    added: dict[str, int] = field(default_factory=dict)
    present: dict[str, int] = field(default_factory=dict)
    conflicts: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, int]:
        extra = {f"{name}_added": count for name, count in self.added.items()} | {
            f"{name}_present": count for name, count in self.present.items()
        }
        return extra | {
            "runs_added": self.runs_added,
            "runs_present": self.runs_present,
            "baselines_added": self.baselines_added,
            "baselines_present": self.baselines_present,
            "cache_added": self.cache_added,
            "cache_present": self.cache_present,
            "cache_kept": self.cache_kept,
        }


@dataclass(slots=True)
class _Plan:
    runs: dict[str, tuple[EvalRun, str]] = field(default_factory=dict)
    baselines: dict[str, tuple[Baseline, str]] = field(default_factory=dict)
    cache: dict[str, tuple[CacheEntry, str]] = field(default_factory=dict)
    #: Add-on name -> row identity -> (row, the store it came from).
    addons: dict[str, dict[Hashable, tuple[dict[str, Any], str]]] = field(default_factory=dict)


def merge_stores(
    sources: Sequence[tuple[str, Store]],
    target: Store,
    *,
    addons: Sequence[AddonRows] = (),
    progress: Callable[[str], None] | None = None,
) -> MergeResult:
    """Merge `sources` (name, open store) into `target`, with the rows of `addons`; raises
    UsageError naming the conflicting rows (and writes nothing) when two stores disagree
    about one."""
    result = MergeResult()
    plan = _Plan(addons={addon.name: {} for addon in addons})
    target_name = target.path
    existing_cache = {entry.key: entry for entry in target.cache_entries()}
    existing = {
        addon.name: {addon.identity(row): row for row in addon.rows(target)} for addon in addons
    }
    for addon in addons:
        result.added[addon.name] = result.present[addon.name] = 0
    for name, source in sources:
        run_ids = source.run_ids()
        if progress is not None:
            progress(f"reading {name}: {len(run_ids)} runs")
        for run_id in run_ids:
            run = source.load_run(run_id)
            if run is None:  # deleted while we read: nothing to copy
                continue
            if run_id in plan.runs:
                other, where = plan.runs[run_id]
                if other != run:
                    result.conflicts.append(f"run {run_id} ({name} vs {where})")
                continue
            present = target.load_run(run_id)
            if present is None:
                plan.runs[run_id] = (run, name)
            elif present == run:
                result.runs_present += 1
            else:
                result.conflicts.append(f"run {run_id} ({name} vs {target_name})")
        # Oldest first, so the target lists them in the source's order.
        for baseline_id, _label, _mean, _created in reversed(source.list_baselines()):
            baseline = source.get_baseline(baseline_id)
            if baseline is None:
                continue
            if baseline_id in plan.baselines:
                other_baseline, where = plan.baselines[baseline_id]
                if other_baseline != baseline:
                    result.conflicts.append(f"baseline {baseline_id} ({name} vs {where})")
                continue
            found = target.get_baseline(baseline_id)
            present_baseline = found if found is not None and found.id == baseline_id else None
            if present_baseline is None:
                plan.baselines[baseline_id] = (baseline, name)
            elif present_baseline == baseline:
                result.baselines_present += 1
            else:
                result.conflicts.append(f"baseline {baseline_id} ({name} vs {target_name})")
        for entry in source.cache_entries():
            key = entry.key
            known = existing_cache.get(key) or (plan.cache[key][0] if key in plan.cache else None)
            if known is None:
                plan.cache[key] = (entry, name)
            elif (known.model, known.response, known.cost_usd) == (
                entry.model,
                entry.response,
                entry.cost_usd,
            ):
                result.cache_present += 1
            else:
                result.cache_kept += 1
        for addon in addons:
            _plan_addon_rows(addon, name, source, plan, existing[addon.name], target_name, result)
    _refuse(result, target_name)
    with target.batch():
        _write(plan, target, result, addons)
        # A row another writer stored since the plan was read, with other content: the whole
        # merge is rolled back, as for a conflict found while planning.
        _refuse(result, target_name)
    return result


def _plan_addon_rows(
    addon: AddonRows,
    name: str,
    source: Store,
    plan: _Plan,
    existing: Mapping[Hashable, Mapping[str, Any]],
    target_name: str,
    result: MergeResult,
) -> None:
    """The source's rows of one add-on table: new ones planned, identical ones counted,
    different ones under the same identity a conflict."""
    planned = plan.addons[addon.name]
    # Oldest first, so the target lists them in the source's order.
    for row in reversed(addon.rows(source)):
        identity = addon.identity(row)
        if identity in planned:
            other, where = planned[identity]
            if other != row:
                result.conflicts.append(f"{addon.describe(identity)} ({name} vs {where})")
            continue
        present = existing.get(identity)
        if present is None:
            planned[identity] = (row, name)
        elif present == row:
            result.present[addon.name] += 1
        else:
            result.conflicts.append(f"{addon.describe(identity)} ({name} vs {target_name})")


def _refuse(result: MergeResult, target_name: str) -> None:
    if not result.conflicts:
        return
    shown = "; ".join(result.conflicts[:_SHOWN])
    more = len(result.conflicts) - _SHOWN
    raise UsageError(
        f"merge refused, nothing written to {target_name}: {len(result.conflicts)} "
        f"row(s) exist with the same id and different content: {shown}"
        + (f"; and {more} more" if more > 0 else "")
    )


def _write(plan: _Plan, target: Store, result: MergeResult, addons: Sequence[AddonRows]) -> None:
    """Write the plan as idempotent upserts, inside the caller's transaction.

    Another merge (or a session) may write the same rows between the plan and this write:
    two `verdryx merge --into` of the same shards at once. So every row is inserted "unless
    its id is there", which waits for a concurrent writer of that id instead of failing on
    a duplicate key, and a row found there is compared: identical is "already there", other
    content a conflict. Add-on rows may have no unique key, so merges take an advisory lock
    for their writes (one merge writes at a time; SQLite's write transaction is one already)
    and read those rows again under it."""
    target.db.advisory_lock(_MERGE_LOCK)
    name = target.path
    for run, _ in plan.runs.values():
        if target.insert_run(run):
            result.runs_added += 1
        elif target.load_run(run.id) == run:
            result.runs_present += 1
        else:
            result.conflicts.append(f"run {run.id} (written to {name} during the merge)")
    for baseline, _ in plan.baselines.values():
        if target.insert_baseline(baseline):
            result.baselines_added += 1
            continue
        found = target.get_baseline(baseline.id)
        if found is not None and found.id == baseline.id and found == baseline:
            result.baselines_present += 1
        else:
            result.conflicts.append(f"baseline {baseline.id} (written to {name} during the merge)")
    stored = {entry.key for entry in target.cache_entries()}
    fresh = [entry for entry, _ in plan.cache.values() if entry.key not in stored]
    result.cache_present += len(plan.cache) - len(fresh)
    result.cache_added += len(fresh)
    target.cache_import(fresh)
    for addon in addons:
        existing = {addon.identity(row): row for row in addon.rows(target)}
        new_rows = []
        for identity, (row, _) in plan.addons[addon.name].items():
            present = existing.get(identity)
            if present is None:
                new_rows.append(row)
            elif present == row:
                result.present[addon.name] += 1
            else:
                result.conflicts.append(
                    f"{addon.describe(identity)} (written to {name} during the merge)"
                )
        result.added[addon.name] += len(new_rows)
        addon.save(target, new_rows)
