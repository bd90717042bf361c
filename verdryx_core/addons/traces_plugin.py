"""The traces add-on's hooks (verdryx_core.hooks): `verdryx cost-per-correct`, and the cost
per outcome the HTML report shows for `verdryx report --traces DIR`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verdryx_core.hooks import AddonCommand, hookimpl

__all__ = ["verdryx_cli_commands", "verdryx_trace_costs"]


@hookimpl
def verdryx_cli_commands() -> Sequence[AddonCommand]:
    return (
        AddonCommand("cost-per-correct", "verdryx_core.addons.traces.cost_per_correct_command"),
    )


@hookimpl
def verdryx_trace_costs(traces: Path) -> tuple[Any, str | None]:
    """The traces add-on's cost per outcome for the report, or None and why not."""
    try:
        from verdryx_core.addons.traces import TracesExtraMissing, cost_report_for
    except ImportError as exc:
        return None, f"cost per outcome skipped: the traces reader is not available ({exc})"
    try:
        return cost_report_for(traces), None
    except TracesExtraMissing as exc:
        return None, f"cost per outcome skipped: {exc}"
