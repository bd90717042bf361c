"""What reaches the event bus: `slo_burn` payloads for established breaches only.

An `exhausted` or `fast_burn` trigger is sent only when even the Wilson upper bound is below
the target (`breach_is_established`); a slow burn is reported, never sent; an unmeasured
indicator never emits. The envelope's only subject field is an agent id, so a subject that
is not an Agent Passport id (a key_id, an empty id) is reported and never emitted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from verdryx_core.addons.slo.compute import SloReport

__all__ = ["ALERTING_TRIGGERS", "burn_events", "split_payload", "subject_is_emittable"]

ALERTING_TRIGGERS: Final = frozenset({"exhausted", "fast_burn"})


def _finite(value: float) -> float | None:
    # RFC 8785 has no infinity: a target of 1.0 makes budget and rate infinite.
    return value if math.isfinite(value) else None


def burn_events(report: SloReport) -> list[dict[str, Any]]:
    """One payload per established breach; `_subject` is the subject (the CLI pops it and
    uses it as the event's agent id)."""
    payloads = []
    for subject, rows in report.subjects.items():
        for m in rows:
            if m.trigger not in ALERTING_TRIGGERS or not m.breach_is_established:
                continue
            payloads.append(
                {
                    "sli": m.sli,
                    "target": m.target,
                    "observed": m.observed,
                    "ci_low": m.ci_low,
                    "ci_high": m.ci_high,
                    "events": m.events,
                    "window": report.window,
                    "budget_remaining": _finite(m.remaining),
                    "burn_rate": _finite(m.burn_rate),
                    "trigger": m.trigger,
                    "identity_field": report.identity_field,
                    "_subject": subject,
                }
            )
    return payloads


def subject_is_emittable(subject: str) -> bool:
    """Whether the subject can be an event's agent id (the Agent Passport grammar)."""
    from verdryx_core.addons.events.log import is_canonical_agent_id

    return is_canonical_agent_id(subject)


def split_payload(payload: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """(subject, data) of a payload from `burn_events`."""
    data = dict(payload)
    return str(data.pop("_subject")), data
