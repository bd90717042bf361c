"""The `verdryx slo` printout: every figure beside its n, and what the report is blind to."""

from __future__ import annotations

from verdryx_core.addons.slo.bus import ALERTING_TRIGGERS
from verdryx_core.addons.slo.compute import SloMeasurement, SloReport
from verdryx_core.untrusted.text import printable

__all__ = ["IDENTITY_NOTES", "render_report"]

IDENTITY_NOTES = {
    "agent_id": (
        "agent_id is a client-supplied header: sound for attribution, unsound as the key of "
        "anything enforced"
    ),
    "key_id": (
        "key_id is resolved by the server from the credential, and empty unless client keys "
        "are configured"
    ),
}


def _share(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "0.0%"


def _measurement(m: SloMeasurement) -> list[str]:
    if not m.measured:
        return [f"     {m.sli:<16} not measured: {m.unmeasured_reason}"]
    line = (
        f"     {m.sli:<16} {m.observed:.4f} (target {m.target}, "
        f"ci [{m.ci_low:.4f},{m.ci_high:.4f}], n={m.events})"
    )
    budget = f"     {'':16} budget {m.remaining * 100:+.1f}% left, burn {m.burn_rate:.2f}x"
    if m.trigger:
        budget += f"  [{m.trigger}]"
        if m.trigger in ALERTING_TRIGGERS and not m.breach_is_established:
            budget += " (not on the bus: the interval still covers the target)"
    return [line, budget]


def render_report(report: SloReport, source: str, *, scores_path: str | None = None) -> list[str]:
    """Lines of the report, up to and including the blind spots (the caller adds the bus)."""
    field = report.identity_field
    lines = [
        "",
        f"Agent error budget -- {source}",
        f"  window={report.window}  subjects={len(report.subjects)}  "
        f"runs={report.total_runs}  identity={field}",
        f"  ({IDENTITY_NOTES[field]})",
    ]
    if report.cost_reference_usd is not None:
        lines.append(f"  fleet median run cost: ${report.cost_reference_usd:.6f}")
    if report.unattributed_runs:
        lines.append(
            f"  {report.unattributed_runs} run(s) "
            f"({_share(report.unattributed_runs, report.total_runs)}) carry no {field} and "
            "are in no subject's numbers"
        )
    if scores_path is not None:
        lines.append(f"  {report.total_scores} score(s) joined from {scores_path}")
        if report.unattributed_scores:
            lines.append(
                f"  {report.unattributed_scores} score(s) "
                f"({_share(report.unattributed_scores, report.total_scores)}) come from a run "
                "evaluated with no --agent-id and are in no subject's numbers"
            )
    for subject, rows in report.subjects.items():
        # A subject is a trace's agent id: printable and one line (untrusted/text.py).
        lines += ["", f"-- {printable(subject, keep_newlines=False)}"]
        for m in rows:
            lines += _measurement(m)
    if report.blind_spots:
        lines += ["", "  blind to:"]
        lines += [f"    {spot}" for spot in report.blind_spots]
    return lines
