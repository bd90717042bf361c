"""The agent under test, compared per eval set (docs/targets.md, "One target per eval set").

A project whose eval sets name their own targets runs one file, a `-k` subset or one shard at
a time: each is compared on the sets it ran, never on the run's list of every target. The
model alone (a set without a target) and an agent are two different things measured, in
either direction. A run or baseline recorded before targets were kept per eval set has only
its run-level `target` (every target it ran, joined); against it the old rule holds: a
target it never ran is a change, and one without a target cannot tell.
"""

from __future__ import annotations

from typing import Final

from verdryx_core.errors import GroupError
from verdryx_core.runs import Baseline, EvalRun
from verdryx_core.store import RunSummary

__all__ = ["merged_set_targets", "same_targets", "target_differences", "version_change"]

_LISTED: Final = 5


def target_differences(run: EvalRun | RunSummary, baseline: Baseline) -> list[str]:
    """What the run measured other than the baseline, by agent under test, on the eval sets
    both hold: `target 'a:b' (baseline: the model alone, no target) for eval set 'orders'`."""
    now, then = run.set_targets, baseline.set_targets
    if now is not None and then is not None:
        changed: dict[str, list[str]] = {}
        for set_id in sorted(now.keys() & then.keys()):
            if now[set_id] != then[set_id]:
                changed.setdefault(_change(now[set_id], then[set_id]), []).append(set_id)
        return [f"{words} for {_sets(set_ids)}" for words, set_ids in changed.items()]
    if now is None and then is None:
        # Both recorded before targets were kept per eval set. A baseline saved before
        # targets were recorded at all names none: it cannot tell a change.
        if run.target and baseline.target and run.target != baseline.target:
            return [f"target {run.target!r} (baseline: {baseline.target!r})"]
        return []
    return _against_legacy(run, baseline)


def version_change(run: EvalRun | RunSummary, baseline: Baseline) -> str | None:
    """The same agent at another declared version, on an eval set both hold, in words
    (`target orders:answer a1 -> a2`): the comparison a gate is for, never refused."""
    if run.target_version == baseline.target_version:
        return None
    now, then = run.set_targets, baseline.set_targets
    if now is not None and then is not None:
        same = sorted(
            {
                target
                for set_id in now.keys() & then.keys()
                if (target := now[set_id]) is not None and target == then[set_id]
            }
        )
    else:
        same = [run.target] if run.target and run.target == baseline.target else []
    return (
        "; ".join(
            f"target {target} {baseline.target_version or '(no version)'} -> "
            f"{run.target_version or '(no version)'}"
            for target in same
        )
        or None
    )


def same_targets(earlier: RunSummary, current: EvalRun) -> bool:
    """Whether two runs of the same eval sets measured the same agents under test, set by
    set (by their run-level `target` when either was recorded before they were kept)."""
    if earlier.set_targets is not None and current.set_targets is not None:
        return dict(earlier.set_targets) == dict(current.set_targets)
    return earlier.target == current.target


def merged_set_targets(runs: list[EvalRun], group: str) -> dict[str, str | None] | None:
    """The shards' targets per eval set as one run's; a `GroupError` when two shards measured
    one eval set with different agents (the model alone included). None when a shard was
    recorded before targets were kept per eval set."""
    merged: dict[str, tuple[str | None, str | None]] = {}
    for run in runs:
        if run.set_targets is None:
            return None
        for set_id, target in run.set_targets.items():
            seen = merged.setdefault(set_id, (target, run.shard))
            if seen[0] != target:
                raise GroupError(
                    f"run group {group!r}: eval set {set_id!r} was measured with "
                    f"{_named(seen[0])} by shard {seen[1]} and with {_named(target)} by shard "
                    f"{run.shard}; one group measures each eval set with one agent"
                )
    return {set_id: target for set_id, (target, _) in sorted(merged.items())}


def _against_legacy(run: EvalRun | RunSummary, baseline: Baseline) -> list[str]:
    """One side kept its targets per eval set, the other only its run-level `target`: a
    target of the first that the second never ran is a change."""
    if run.set_targets is not None:
        recorded, legacy = run.set_targets, baseline.target
        sets = {case.eval_set_id for case in baseline.cases}
    else:
        assert baseline.set_targets is not None
        recorded, legacy = baseline.set_targets, run.target
        sets = set(run.eval_set_ids)
    possible = _specs(legacy)
    if not possible:
        return []
    changed: dict[str, list[str]] = {}
    for set_id, target in sorted(recorded.items()):
        if (sets and set_id not in sets) or target is None or _specs(target) <= possible:
            continue
        words = (
            f"target {target!r} (baseline: {legacy!r})"
            if run.set_targets is not None
            else f"target {legacy!r} (baseline: {target!r})"
        )
        changed.setdefault(words, []).append(set_id)
    return [f"{words} for {_sets(set_ids)}" for words, set_ids in changed.items()]


def _change(now: str | None, then: str | None) -> str:
    if now and then:
        return f"target {now!r} (baseline: {then!r})"
    if now:
        return f"target {now!r} (baseline: the model alone, no target)"
    return f"the model alone, no target (baseline: target {then!r})"


def _named(target: str | None) -> str:
    return f"target {target!r}" if target else "the model alone (no target)"


def _specs(target: str | None) -> set[str]:
    return {spec.strip() for spec in (target or "").split(",") if spec.strip()}


def _sets(set_ids: list[str]) -> str:
    shown = ", ".join(repr(set_id) for set_id in set_ids[:_LISTED])
    more = f" and {len(set_ids) - _LISTED} more" if len(set_ids) > _LISTED else ""
    return f"eval set{'s' if len(set_ids) > 1 else ''} {shown}{more}"
