"""The events add-on's hooks (verdryx_core.hooks): `--verdryx-events`, the agent id's form,
and the two wires a concluded run is sent down, the agent-event log and OTLP spans
(docs/events-and-otlp.md), and `verdryx events verify`. Neither wire can fail the eval: a
problem at the end becomes a line in the summary. Only the pytest plugin sends them (the
CLI does not yet)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from verdryx_core.hooks import AddonCommand, AddonOption, AddonSession, hookimpl

if TYPE_CHECKING:
    from verdryx_core.conclusion import Conclusion
    from verdryx_core.gating.drift import DriftStats
    from verdryx_core.runs import EvalRun

__all__ = [
    "verdryx_addoption",
    "verdryx_cli_commands",
    "verdryx_configure",
    "verdryx_run_concluded",
]

#: Where `verdryx_configure` keeps the OTLP exporter and its endpoint for the run's end.
_OTLP = "events.otlp"


@hookimpl
def verdryx_addoption() -> Sequence[AddonOption]:
    return (
        AddonOption(
            "events",
            "append agent-event NDJSON to PATH (default $VERDRYX_EVENTS_PATH; unset: off)",
            metavar="PATH",
            env="VERDRYX_EVENTS_PATH",
            faces=("pytest",),
        ),
    )


@hookimpl
def verdryx_cli_commands() -> Sequence[AddonCommand]:
    return (AddonCommand("events", "verdryx_core.addons.events.events_command"),)


@hookimpl
def verdryx_configure(session: AddonSession) -> None:
    """Checked before the run, so a typo is a usage error, not a silent drop at the end of a
    long run; the OTLP exporter is made where the run is sent from."""
    if session.face != "pytest":
        return  # the CLI sends neither wire yet (docs/events-and-otlp.md)
    agent_id = session.agent_id
    if agent_id:
        from verdryx_core.addons.events.log import is_canonical_agent_id
        from verdryx_core.errors import UsageError

        if not is_canonical_agent_id(agent_id):
            raise UsageError(
                f"--verdryx-agent-id {agent_id!r} is not an agent id of the form "
                "agent://host/path (lowercase letters, digits, '.', '_', '/', '-')"
            )
    events = session.options.get("events")
    if events:
        from verdryx_core.addons.events.log import check_events_path

        check_events_path(events)
    # Read once, when verdryx turns on (docs/events-and-otlp.md).
    endpoint = session.environ.get("VERDRYX_OTLP_ENDPOINT") or None
    if endpoint and session.exporting:
        from verdryx_core.addons.events.otlp import SpanExporter

        session.state[_OTLP] = (SpanExporter(endpoint), endpoint)


@hookimpl
def verdryx_run_concluded(conclusion: Conclusion, session: AddonSession) -> Sequence[str]:
    if session.face != "pytest":
        return []
    run = conclusion.run
    drift = conclusion.gate.drift if conclusion.gate is not None else None
    lines: list[str] = []
    events = session.options.get("events")
    if events:
        lines.extend(emit_events(events, run, drift))
    otlp = session.state.get(_OTLP)
    if otlp is not None:
        exporter, endpoint = otlp
        lines.append(export_spans(exporter, endpoint, run, drift))
    return lines


def emit_events(path: str, run: EvalRun, drift: DriftStats | None) -> list[str]:
    """Append the run's events (and a drift event when regressed); returns summary lines."""
    from verdryx_core.addons.events.log import EventLog, drift_events, run_events

    lines: list[str] = []
    try:
        log = EventLog(path)
        if log.torn_tail:
            lines.append(f"WARNING: events: {log.torn_tail}")
        events = run_events(run)
        if drift is not None:
            events += drift_events(drift.to_dict(), run.id)
        for kind, data, run_id in events:
            log.emit(kind, run.agent_id, data, run_id=run_id)
    except Exception as exc:  # the event log never fails the eval
        return [*lines, f"events: not written ({exc})"]
    line = f"events: {log.written} written to {path}"
    if log.skipped_no_agent:
        line += f", {log.skipped_no_agent} skipped (no --verdryx-agent-id)"
    if log.rejected:
        line += f", {log.rejected} rejected"
    if log.write_failures:
        line += f", {log.write_failures} failed to write"
    return [*lines, line]


def export_spans(exporter: object, endpoint: str, run: EvalRun, drift: DriftStats | None) -> str:
    """One span for the run and one for its drift check, in the run's trace; waits at most
    the exporter's timeout. Returns the summary line."""
    from verdryx_core.addons.events.otlp import SpanExporter, run_span_attributes
    from verdryx_core.untrusted.redact import redact_text, redact_url

    assert isinstance(exporter, SpanExporter)
    try:
        exporter.export("eval_run", run.id, run_span_attributes(run), agent_id=run.agent_id)
        if drift is not None:
            # The current run's id, so the drift check joins the run's trace.
            exporter.export("quality_drift", run.id, drift.to_dict(), agent_id=run.agent_id)
        delivered = exporter.wait()
    except Exception as exc:  # the OTLP export never fails the eval
        return redact_text(f"otlp: not exported ({exc})")
    state = "delivered" if delivered else "NOT delivered (collector did not answer)"
    # The endpoint may carry user:password (sent as basic auth): never printed.
    return f"otlp: spans {state} to {redact_url(endpoint)}"
