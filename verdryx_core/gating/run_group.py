"""A run group's shard runs assembled into the one run they measured together.

The N shards of a CI pipeline each store a run with `run_group` G and `shard` "k/N". Once all
have arrived, their scores are concatenated into one complete run (no shard, same group) that
is gated like an unsharded run. Anything that would make that run a lie is refused with one
line: a shard missing, a shard's run incomplete, two shards measuring the same case, shards of
different models or shard counts (docs/sharding.md).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Final

from verdryx_core.errors import GroupError, UsageError
from verdryx_core.evaluation.sharding import ShardSpec, parse_shard
from verdryx_core.gating.set_targets import merged_set_targets
from verdryx_core.runs import EvalRun, joined_targets
from verdryx_core.store import RunSummary, Store

__all__ = ["AssembledGroup", "assemble_group"]

_ID_NAMESPACE: Final = uuid.UUID("5d0f4f4e-6a43-4c55-9a49-76a2d2b0c0de")
_LISTED: Final = 10


@dataclass(frozen=True, slots=True, kw_only=True)
class AssembledGroup:
    run: EvalRun
    total: int
    #: The shard runs used, in shard order.
    shard_runs: tuple[EvalRun, ...]
    #: Older runs of a shard that was stored again (a re-run job): the newest one counts.
    superseded: tuple[str, ...] = ()


def _spec(summary: RunSummary, group: str) -> ShardSpec:
    assert summary.shard is not None
    try:
        return parse_shard(summary.shard, flag=f"run {summary.id} of group {group}: shard")
    except UsageError as exc:
        raise GroupError(str(exc)) from None


def _listed(items: list[str]) -> str:
    shown = ", ".join(items[:_LISTED])
    return shown + (f" and {len(items) - _LISTED} more" if len(items) > _LISTED else "")


def assemble_group(store: Store, group: str, *, shards: int | None = None) -> AssembledGroup:
    """The group's shard runs as one complete run; `GroupError` when they do not make one.

    `shards` is the expected shard count (`--shards`); without it, the count the runs carry.
    A shard stored more than once counts by its newest run."""
    if shards is not None and shards < 1:
        raise GroupError(f"--shards {shards} is not a positive number of shards")
    summaries = [summary for summary in store.list_group_runs(group) if summary.shard]
    if not summaries:
        expected = f" (expected {shards} shards)" if shards else ""
        raise GroupError(
            f"run group {group!r} has no shard runs in {store.path}{expected}; did the shard "
            "sessions store their runs under this run group, and were their stores merged "
            "(verdryx merge) into this one?"
        )
    specs = {summary.id: _spec(summary, group) for summary in summaries}
    totals = sorted({spec.total for spec in specs.values()})
    if len(totals) > 1:
        raise GroupError(
            f"run group {group!r} mixes shard counts {', '.join(map(str, totals))}: its runs "
            "were split differently and cannot be assembled; re-run the group with one count"
        )
    total = totals[0]
    if shards is not None and shards != total:
        raise GroupError(
            f"run group {group!r} was split into {total} shards, not {shards} (--shards)"
        )
    newest: dict[int, RunSummary] = {}
    superseded: list[str] = []
    # Oldest first: a later run of the same shard (a re-run job) replaces an earlier one,
    # unless it is incomplete and the earlier one is complete: the newest *complete* counts.
    for summary in summaries:
        index = specs[summary.id].index
        kept = newest.get(index)
        if kept is not None and kept.complete and not summary.complete:
            superseded.append(summary.id)
            continue
        if kept is not None:
            superseded.append(kept.id)
        newest[index] = summary
    missing = [f"{k}/{total}" for k in range(1, total + 1) if k not in newest]
    if missing:
        arrived = ", ".join(f"{k}/{total}" for k in sorted(newest))
        raise GroupError(
            f"run group {group!r} is missing shard{'s' if len(missing) > 1 else ''} "
            f"{_listed(missing)} of {total} (arrived: {arrived}); a partial group is never "
            "gated as complete: wait for those jobs, or re-run them"
        )
    incomplete = [
        f"{newest[k].shard} (run {newest[k].id})" for k in sorted(newest) if not newest[k].complete
    ]
    if incomplete:
        raise GroupError(
            f"run group {group!r}: the run of shard {_listed(incomplete)} is incomplete (its "
            "session stopped early); re-run that shard"
        )
    runs: list[EvalRun] = []
    for k in sorted(newest):
        run = store.load_run(newest[k].id)
        if run is None:  # listed a moment ago: deleted in between
            raise GroupError(f"run {newest[k].id} of group {group!r} vanished from {store.path}")
        runs.append(run)
    _check_same(runs, group)
    set_targets = merged_set_targets(runs, group)
    narrowed = [
        f"{run.shard} (run {run.id}: {len(run.scores)} of its {run.shard_share} cases)"
        for run in runs
        if run.shard_share is not None and len(run.scores) < run.shard_share
    ]
    if narrowed:
        raise GroupError(
            f"run group {group!r}: shard {_listed(narrowed)} measured fewer cases than its "
            "share of the eval sets (narrowed with -k, -m, --lf or node ids); a narrowed "
            "shard is never assembled as whole: re-run it without them"
        )
    owner: dict[str, str] = {}
    duplicates: list[str] = []
    for run in runs:
        for score in run.scores:
            if score.key in owner:
                duplicates.append(f"{score.key} (shards {owner[score.key]} and {run.shard})")
            else:
                owner[score.key] = str(run.shard)
    if duplicates:
        raise GroupError(
            f"run group {group!r}: {len(duplicates)} case(s) measured by two shards: "
            f"{_listed(duplicates)}; every case belongs to exactly one shard, so these shards "
            "ran different eval sets or options"
        )
    return AssembledGroup(
        run=_combined(runs, group, set_targets),
        total=total,
        shard_runs=tuple(runs),
        superseded=tuple(superseded),
    )


def _check_same(runs: list[EvalRun], group: str) -> None:
    # Targets are the eval sets' own (`merged_set_targets` checks them set by set); only
    # shards recorded before they were kept per eval set are held to one run-level target.
    legacy = any(run.set_targets is None for run in runs)
    names = ("model", *(("target",) if legacy else ()), "target_version", "judge_model")
    for name in (*names, "agent_id", "commit"):
        values = {getattr(run, name) for run in runs} - {None}
        if len(values) > 1:
            shown = "; ".join(f"shard {run.shard}: {getattr(run, name)!r}" for run in runs)
            raise GroupError(
                f"run group {group!r}: its shards measured different {name.replace('_', ' ')}s "
                f"({shown}); one group is one measurement of one {name.replace('_', ' ')}"
            )


def _combined(
    runs: list[EvalRun], group: str, set_targets: dict[str, str | None] | None
) -> EvalRun:
    first = runs[0]
    finished = [run.finished_at for run in runs if run.finished_at is not None]
    # The same shard runs always assemble to the same id: gating a group twice replaces the
    # assembled run instead of storing a second copy.
    run_id = str(uuid.uuid5(_ID_NAMESPACE, "\n".join([group, *(run.id for run in runs)])))
    return EvalRun(
        id=run_id,
        model=first.model,
        judge_model=next((run.judge_model for run in runs if run.judge_model), None),
        agent_id=first.agent_id,
        started_at=min(run.started_at for run in runs),
        finished_at=max(finished) if finished else None,
        eval_set_ids=tuple(sorted({sid for run in runs for sid in run.eval_set_ids})),
        scores=tuple(score for run in runs for score in run.scores),
        complete=True,
        plugin_version=first.plugin_version,
        label=first.label,
        commit=next((run.commit for run in runs if run.commit), None),
        branch=next((run.branch for run in runs if run.branch), None),
        ci_url=next((run.ci_url for run in runs if run.ci_url), None),
        run_group=group,
        shard=None,
        partial=False,
        target=first.target if set_targets is None else joined_targets(set_targets),
        target_version=next((run.target_version for run in runs if run.target_version), None),
        set_targets=set_targets,
    )
