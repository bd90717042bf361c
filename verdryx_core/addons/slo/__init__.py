"""Error budgets for agents from traces and eval scores: measured, never enforced."""

from __future__ import annotations

from verdryx_core.addons.errors import SloInputError
from verdryx_core.addons.slo.bus import (
    ALERTING_TRIGGERS,
    burn_events,
    split_payload,
    subject_is_emittable,
)
from verdryx_core.addons.slo.compute import (
    IDENTITY_FIELDS,
    SLIS,
    SloMeasurement,
    SloReport,
    compute_slo,
    cost_reference,
)
from verdryx_core.addons.slo.render import render_report
from verdryx_core.addons.slo.stats import (
    FAST_BURN,
    SLOW_BURN,
    budget_remaining,
    burn_rate,
    trigger_for,
    wilson_interval,
)
from verdryx_core.addons.slo.table import RunTable, ScoreTable, run_table_for

__all__ = [
    "ALERTING_TRIGGERS",
    "FAST_BURN",
    "IDENTITY_FIELDS",
    "SLIS",
    "SLOW_BURN",
    "RunTable",
    "ScoreTable",
    "SloInputError",
    "SloMeasurement",
    "SloReport",
    "budget_remaining",
    "burn_events",
    "burn_rate",
    "compute_slo",
    "cost_reference",
    "render_report",
    "run_table_for",
    "split_payload",
    "subject_is_emittable",
    "trigger_for",
    "wilson_interval",
]
