"""The end of a session, in order: assemble the run, store it, gate it against the baseline
(the drift verdict), save a baseline, send the exports. One function, `end_session`, returns
a `SessionEnd` that the terminal summary only prints; pytest runs it in
`pytest_sessionfinish`, which it reaches even on exits that skip the summary.
"""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest

from pytest_verdryx import exports
from pytest_verdryx.baseline import BaselineView
from pytest_verdryx.options import Settings, worded
from pytest_verdryx.state import SessionState
from pytest_verdryx.storehandle import StoreHandle
from verdryx_core.addons.events.otlp import SpanExporter
from verdryx_core.errors import StoreError, VerdryxError
from verdryx_core.evaluation import EvalSettings, assemble_run, save_run
from verdryx_core.gating.baselines import check_label, write_baseline_file
from verdryx_core.gating.comparison import GateResult, compare_to_baseline, select_window
from verdryx_core.runs import Baseline, EvalRun
from verdryx_core.store import StoreTarget

__all__ = ["SessionEnd", "end_session", "incomplete_reason"]


@dataclass(slots=True, kw_only=True)
class SessionEnd:
    """What the end of the session decided and did; the summary prints it, nothing more."""

    run: EvalRun
    settings: Settings
    baseline: BaselineView
    state: SessionState
    #: Why the run is not a whole measurement (None: it is).
    incomplete: str | None = None
    result: GateResult | None = None
    gate_error: str | None = None
    #: The ini's baseline label that names no baseline (the gate refused for it).
    missing_baseline: str | None = None
    saved_baseline: str | None = None
    #: Summary lines: warnings, errors and what the exports did.
    messages: list[str] = field(default_factory=list)
    #: The exit status pytest ends with (the gate may turn OK into TESTS_FAILED).
    exit_status: int | pytest.ExitCode = pytest.ExitCode.OK
    #: Wall time spent waiting for calls made ahead.
    call_seconds: float = 0.0
    store_path: StoreTarget | None = None
    #: Whether the run really is in the store (a failed write leaves it False).
    stored: bool = False


def incomplete_reason(
    state: SessionState, *, stopped: str | None, exit_status: int | pytest.ExitCode
) -> str | None:
    """Why this run is not a whole measurement, in words; None when it is."""
    if stopped:
        return f"the session stopped early ({stopped})"
    if state.stopped_early:
        return "an xdist worker stopped early (-x or --maxfail)"
    if exit_status == pytest.ExitCode.INTERRUPTED:
        return "the session was interrupted (Ctrl-C, or errors during collection)"
    if state.worker_failures:
        return f"an xdist worker went down ({state.worker_failures[0]})"
    if state.collection_errors:
        # --continue-on-collection-errors (or xdist) ran the other files: the run lacks
        # every case of the broken ones, so it is not a whole measurement.
        first = sorted(state.collection_errors)[0]
        return (
            f"{len(state.collection_errors)} file(s) could not be collected ({first}); "
            "their cases are missing"
        )
    missing = state.missing()
    if missing > 0:
        return f"{missing} of {state.expected_count} selected cases have no score (errors)"
    return None


def end_session(
    *,
    config: pytest.Config,
    settings: Settings,
    eval_settings: EvalSettings,
    state: SessionState,
    baseline: BaselineView,
    store: StoreHandle,
    run_id: str,
    missing_baseline: tuple[str, str] | None = None,
    started_at: datetime,
    stopped: str | None,
    exit_status: int | pytest.ExitCode,
    messages: list[str],
    exporter: SpanExporter | None,
    otlp_endpoint: str | None,
    call_seconds: float,
) -> SessionEnd:
    incomplete = incomplete_reason(state, stopped=stopped, exit_status=exit_status)
    run = assemble_run(
        run_id=run_id,
        settings=eval_settings,
        started_at=started_at,
        scores=state.ordered_scores(),
        complete=incomplete is None,
    )
    run = _with_provenance(run, config, settings, state, stopped=stopped)
    if settings.run_group:
        run = dataclasses.replace(run, run_group=settings.run_group)
    if settings.shard is not None:
        # One shard of a group: stored for `verdryx gate`, a subset on purpose.
        run = dataclasses.replace(run, shard=str(settings.shard), partial=True)
    end = SessionEnd(
        run=run,
        settings=settings,
        baseline=baseline,
        state=state,
        incomplete=incomplete,
        messages=list(messages),
        exit_status=exit_status,
        call_seconds=call_seconds,
        store_path=store.path if settings.store else None,
    )
    if settings.store:
        try:
            save_run(
                store.open(),
                run,
                cache_entries=state.calls.take_entries(),
                promises=state.contract_ids,
            )
            end.stored = True
        except StoreError as exc:
            end.messages.append(f"ERROR: the run was not stored: {worded(exc)}")
            _fail(end)
        except ValueError as exc:  # a value the store cannot encode: a line, not INTERNALERROR
            end.messages.append(f"ERROR: the run was not stored: {type(exc).__name__}: {exc}")
            _fail(end)
    if baseline.baseline is not None and settings.shard is None:
        # A shard is gated with its group (`verdryx gate`), never on its own.
        _gate(end, baseline.baseline, store)
    if missing_baseline is not None and settings.shard is None:
        _missing_baseline(end, *missing_baseline)
    if settings.save_baseline:
        _save_baseline(end, store, config.rootpath)
    exports.add_junit_properties(config, run, end.result, baseline.name)
    _ci_outputs(config, end)
    _send_exports(end, store, exporter, otlp_endpoint)
    return end


def _ci_outputs(config: pytest.Config, end: SessionEnd) -> None:
    """The gate as a test, and the job summary (docs/ci.md): before junitxml writes its file."""
    from pytest_verdryx.ci import CiOutputs
    from verdryx_core.reporting.ci import GateOutcome

    ci = config.pluginmanager.get_plugin("verdryx-ci")
    if not isinstance(ci, CiOutputs):
        return
    gate = None
    refused = end.gate_error.removeprefix("gate refused: ") if end.gate_error else None
    # A shard has no gate of its own: `verdryx gate --junitxml` reports the group's.
    if end.baseline.baseline is not None and end.settings.shard is None:
        gate = GateOutcome(baseline=end.baseline.name, result=end.result, refused=refused)
    elif end.missing_baseline is not None and refused is not None:
        gate = GateOutcome(baseline=end.missing_baseline, refused=refused)
    ci.finish(end.run, gate, gated=end.run.complete)


def _with_provenance(
    run: EvalRun,
    config: pytest.Config,
    settings: Settings,
    state: SessionState,
    *,
    stopped: str | None,
) -> EvalRun:
    """Where the run came from (docs/ci.md), and whether it measured only part of the cases
    collected: a subset is stored as partial, kept out of windows, history and baselines."""
    from verdryx_core.reporting.ci import ci_provenance, default_run_group

    found = ci_provenance(cwd=config.rootpath)
    return dataclasses.replace(
        run,
        label=settings.label,
        commit=found.commit,
        branch=found.branch,
        ci_url=found.ci_url,
        run_group=default_run_group(),
        partial=is_subset(config, state, stopped=stopped),
    )


def is_subset(config: pytest.Config, state: SessionState, *, stopped: str | None) -> bool:
    """A run of fewer cases than were collected (-k, -m, --deselect, node ids select; a
    stop after -x), or of only the cases that failed last time (--lf)."""
    if stopped or state.stopped_early:
        return True
    if state.expected_count < len(state.known_keys):
        return True
    # --lf may skip whole files that had no failure: they are never collected, so compare
    # with what the cache says failed instead.
    lastfailed = getattr(config.pluginmanager.get_plugin("lfplugin"), "lastfailed", None)
    return bool(config.getoption("lf", False) and lastfailed)


def _fail(end: SessionEnd) -> None:
    """Exit 1, unless the session already exits with something a CI must see (interrupted,
    internal or usage error): a failed store write must not hide an interruption."""
    if end.exit_status == pytest.ExitCode.OK:
        end.exit_status = pytest.ExitCode.TESTS_FAILED


def _gate(end: SessionEnd, baseline: Baseline, store: StoreHandle) -> None:
    run, settings = end.run, end.settings
    if not run.complete:
        return  # the INCOMPLETE line of the summary says why
    try:
        window = [run]
        # Earlier runs live in the store; with no store yet (--no-verdryx-store on a fresh
        # runner) there are none, and opening it would create the file.
        has_store = settings.store or store.exists()
        if settings.window > 1 and has_store:
            window = select_window(store.open(), run, settings.window)
        end.result = compare_to_baseline(
            window,
            baseline,
            known_keys=end.state.known_keys or None,
            gate=settings.gate,
            threshold=settings.threshold,
            min_effect=settings.min_effect,
            allow_model_change=settings.allow_model_change,
        )
    except VerdryxError as exc:
        end.gate_error = f"gate refused: {worded(exc)}"
        end.exit_status = pytest.ExitCode.USAGE_ERROR
        return
    if end.result.regressed and end.exit_status == pytest.ExitCode.OK:
        end.exit_status = pytest.ExitCode.TESTS_FAILED


def _missing_baseline(end: SessionEnd, label: str, why: str) -> None:
    """The ini's `verdryx_baseline` names no baseline: fine while this run saves it (a
    first baseline), otherwise the gate is refused (docs/options.md)."""
    if end.settings.save_baseline == label:
        end.messages.append(
            f"WARNING: baseline {label!r} (verdryx_baseline in the ini) was not found, "
            "so nothing was gated"
        )
        return
    if not end.run.complete:
        return  # not gated anyway: the INCOMPLETE line of the summary says why
    end.missing_baseline = label
    end.gate_error = f"gate refused: {why} (verdryx_baseline in the ini)"
    end.exit_status = pytest.ExitCode.USAGE_ERROR


def _save_baseline(end: SessionEnd, store: StoreHandle, root: Path) -> None:
    run, settings = end.run, end.settings
    label = settings.save_baseline or ""
    if run.partial and run.complete and not settings.allow_partial_baseline:
        end.messages.append(
            f"ERROR: baseline {label!r} NOT saved: this run measured a subset of the cases "
            "(-k, -m, --lf, --deselect or node ids), and a baseline of a subset would gate "
            "every later full run on it; run all the cases, or pass "
            "--verdryx-allow-partial-baseline to save it anyway"
        )
        _fail(end)
        return
    if not run.complete:
        end.messages.append(
            f"baseline {label!r} NOT saved: the run is incomplete ({end.incomplete})"
        )
        return
    if settings.store and not end.stored:
        end.messages.append(f"baseline {label!r} NOT saved: the run was not stored")
        return
    try:
        baseline = Baseline.from_run(run, id=str(uuid.uuid4()), label=check_label(label))
        if settings.store:
            store.open().save_baseline(baseline)
        path = write_baseline_file(root, baseline)
    except (ValueError, VerdryxError, OSError) as exc:
        why = worded(exc) if isinstance(exc, VerdryxError) else str(exc)
        end.messages.append(f"ERROR: baseline {label!r} not saved: {why}")
        _fail(end)
        return
    end.saved_baseline = f"{label} (mean {baseline.mean:.3f}) -> {path}"


def _send_exports(
    end: SessionEnd, store: StoreHandle, exporter: SpanExporter | None, otlp_endpoint: str | None
) -> None:
    """The opt-in exports (events, OTLP, the HTML report): never failing the eval."""
    run, settings = end.run, end.settings
    drift = end.result.report if end.result else None
    if settings.events:
        end.messages.extend(exports.emit_events(settings.events, run, drift))
    if exporter is not None and otlp_endpoint:
        end.messages.append(exports.export_spans(exporter, otlp_endpoint, run, drift))
    if settings.report:
        end.messages.append(
            exports.write_html_report(
                store.open(), settings.report, run, end.baseline.baseline, end.result
            )
        )
