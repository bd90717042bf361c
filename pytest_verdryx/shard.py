"""`--verdryx-shard K/N`: this session measures shard K of N (docs/sharding.md).

Eval cases (and verdryx-marked tests) outside the shard are deselected at collection, as `-k`
deselects, by a stable hash of (eval set id, case id); other tests are left alone. The run is
stored with its shard and run group, marked partial, and never gated on its own:
`verdryx gate` assembles the group's shards and gates them as one run.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from pytest_verdryx.fixture import custom_case_identity
from pytest_verdryx.items import EvalCaseItem
from pytest_verdryx.options import Settings
from verdryx_core.evaluation.sharding import ShardSpec

__all__ = ["check_shard_settings", "gate_hint", "split_items"]


def _identity(item: pytest.Item) -> tuple[str, str] | None:
    if isinstance(item, EvalCaseItem):
        return item.evalset.id, item.case.id
    if item.get_closest_marker("verdryx") is not None:
        return custom_case_identity(item)
    return None


def split_items(
    items: Sequence[pytest.Item], shard: ShardSpec
) -> tuple[list[pytest.Item], list[pytest.Item]]:
    """(kept, deselected): a verdryx case is kept when its shard is this one."""
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        identity = _identity(item)
        (kept if identity is None or shard.holds(*identity) else dropped).append(item)
    return kept, dropped


def check_shard_settings(settings: Settings) -> None:
    """At configure time: a shard's run must be stored under a group, and is no baseline."""
    shard = settings.shard
    if shard is None:
        return
    if not settings.run_group:
        raise pytest.UsageError(
            f"verdryx: --verdryx-shard {shard} needs a run group to store the shard's run "
            "under (outside CI there is no run id to default to); pass "
            "--verdryx-run-group=ID, the same for every shard"
        )
    if not settings.store:
        raise pytest.UsageError(
            f"verdryx: --verdryx-shard {shard} with --no-verdryx-store: the shard's run must "
            "be stored for verdryx gate to assemble the group"
        )
    if settings.save_baseline:
        raise pytest.UsageError(
            f"verdryx: --verdryx-shard {shard} with --verdryx-save-baseline: a shard holds "
            "only its share of the cases; save the baseline from an unsharded run, or "
            "`verdryx baseline RUN_ID` on the run verdryx gate assembled"
        )


def gate_hint(settings: Settings) -> str:
    """The line a shard session ends with: where its run went and how to gate the group."""
    group = settings.run_group
    label = settings.baseline or "LABEL"
    return (
        f"shard {settings.shard} stored in group {group}; gate with "
        f"verdryx gate --group {group} --baseline {label}"
    )
