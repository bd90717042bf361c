"""The end of a session, in order: the run assembled by the evaluation, stored, gated by the
core's `compare` (verdict and exit decision), a baseline saved, the exports sent.
`finish_session` returns a `SessionEnd` that the terminal summary only prints; pytest runs it
in `pytest_sessionfinish`, which it reaches even on exits that skip the summary.
"""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_verdryx import exports
from pytest_verdryx.context import SessionContext
from pytest_verdryx.options import FLAGS, Settings, worded
from pytest_verdryx.state import SessionState
from verdryx_core.errors import AfterSaveError, RunNotStoredError, StoreError, VerdryxError
from verdryx_core.gating.baselines import check_label, write_baseline_file
from verdryx_core.runs import Baseline, EvalRun
from verdryx_core.store import StoreTarget

if TYPE_CHECKING:
    from verdryx_core.gating.calibration.judge_check import JudgeCheck
    from verdryx_core.gating.calibration.labels import Label
    from verdryx_core.gating.compare import GateOutcome
    from verdryx_core.gating.planning import Plan

__all__ = ["SessionEnd", "finish_session", "incomplete_reason"]


@dataclass(slots=True, kw_only=True)
class SessionEnd:
    """What the end of the session decided and did; the summary prints it, nothing more."""

    context: SessionContext
    run: EvalRun
    #: Why the run is not a whole measurement (None: it is).
    incomplete: str | None = None
    #: The gate's outcome; None when no baseline was named (or this is one shard of a group,
    #: gated with its group by `verdryx gate`).
    gate: GateOutcome | None = None
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
    #: What it takes to see `--verdryx-detect`, when an on-track verdict could not see it.
    plan: Plan | None = None
    #: The judge checked against `--verdryx-labels` (docs/calibrating-the-judge.md).
    judge: JudgeCheck | None = None

    @property
    def settings(self) -> Settings:
        return self.context.settings

    @property
    def state(self) -> SessionState:
        return self.context.state


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


def finish_session(
    context: SessionContext, session: pytest.Session, *, call_seconds: float
) -> SessionEnd:
    settings, state = context.settings, context.state
    stopped_by = session.shouldfail or session.shouldstop
    stopped = str(stopped_by) if stopped_by else None
    incomplete = incomplete_reason(state, stopped=stopped, exit_status=session.exitstatus)
    run = context.evaluation.run(
        state.ordered_scores(), complete=incomplete is None, targets=state.targets
    )
    run = _with_provenance(run, context, stopped=stopped)
    if settings.repeat_auto and context.allocation is None:
        _allocation_of_workers(context, run)
    end = SessionEnd(
        context=context,
        run=run,
        incomplete=incomplete,
        messages=[*context.messages, *context.state.notes],
        exit_status=session.exitstatus,
        call_seconds=call_seconds,
        store_path=context.store.path if settings.store else None,
    )
    if settings.store:
        _store(end)
    case_labels = _case_labels(context)
    if (
        settings.labels
        or case_labels
        or settings.judge_correction
        or settings.require_calibrated_judge
    ):
        _check_judge(end, case_labels)
    if settings.shard is None:  # a shard is gated with its group (`verdryx gate`)
        end.gate = _gate(end)
        if end.gate is None and end.exit_status != pytest.ExitCode.USAGE_ERROR:
            _judge_without_gate(end)
    if end.gate is not None:
        end.plan = _plan(end)
        if end.gate.exit == "refused":
            end.exit_status = pytest.ExitCode.USAGE_ERROR
        elif end.gate.exit == "regressed":
            _fail(end)
    if settings.save_baseline:
        _save_baseline(end)
    result = end.gate.result if end.gate is not None else None
    exports.add_junit_properties(context.config, run, result, context.baseline_name)
    exports.add_case_regressed(
        context.config,
        {score.key: nodeid for nodeid, (_, score) in context.state.scores.items()},
        result,
    )
    _ci_outputs(end)
    _send_exports(end)
    return end


def _allocation_of_workers(context: SessionContext, run: EvalRun) -> None:
    """Under xdist the workers allocated `--verdryx-repeat=auto` (the controller collects no
    items): the summary's allocation is recomputed here from the same cases and baseline."""
    from verdryx_core.gating.allocation import allocate

    keys = [score.key for score in run.scores]
    budget = context.settings.max_samples or 3 * len(keys)
    baseline = context.baseline.case_map() if context.baseline is not None else {}
    context.allocation = allocate(keys, baseline, budget)


def _store(end: SessionEnd) -> None:
    context = end.context
    try:
        context.evaluation.save(
            context.store.open(),
            end.run,
            cache_entries=context.state.calls.take_entries(),
        )
        end.stored = True
    except AfterSaveError as exc:  # stored; what a plugged-in grader keeps of it is not
        end.stored = True
        end.messages.extend(f"ERROR: {line}" for line in exc.lines)
        _fail(end)
    except RunNotStoredError as exc:  # already says "the run was not stored: ..."
        end.messages.append(f"ERROR: {worded(exc)}")
        _fail(end)
    except StoreError as exc:
        end.messages.append(f"ERROR: the run was not stored: {worded(exc)}")
        _fail(end)
    except ValueError as exc:  # a value the store cannot encode: a line, not INTERNALERROR
        end.messages.append(f"ERROR: the run was not stored: {type(exc).__name__}: {exc}")
        _fail(end)


def _plan(end: SessionEnd) -> Plan | None:
    """The summary's `plan:` line for an underpowered verdict (docs/statistics.md, "Planning a
    run"): the baseline's run, when the store holds it, says how it was sampled."""
    drift = end.gate.drift if end.gate is not None else None
    baseline = end.context.baseline
    if drift is None or baseline is None or not drift.underpowered:
        return None
    baseline_run = None
    if end.settings.store or end.context.store.exists():
        try:
            baseline_run = end.context.store.open().load_run(baseline.run_id)
        except VerdryxError:
            baseline_run = None  # the plan then takes the baseline as sampled like this run
    from verdryx_core.gating.planning import plan_for_gate

    return plan_for_gate(drift, end.run, baseline_run)


def _gate(end: SessionEnd) -> GateOutcome | None:
    """The gate against the session's baseline; a refusal for an ini label that names no
    baseline (docs/options.md), unless this run saves that label (a first baseline)."""
    context, settings, run = end.context, end.settings, end.run
    if context.missing_baseline is None and context.baseline is None:
        return None
    # Imported when a gate runs (numpy and the statistics with it): a run that names no
    # baseline never loads them.
    from verdryx_core.gating.compare import GatePolicy, compare, refused

    if context.baseline is not None:
        # Earlier runs live in the store; with no store yet (--no-verdryx-store on a fresh
        # runner) there are none, and opening it would create the file.
        has_store = settings.store or context.store.exists()
        try:
            history = context.store.open() if settings.window > 1 and has_store else None
        except VerdryxError as exc:
            return refused(context.baseline_name, worded(exc))
        return compare(
            run,
            context.baseline,
            gate=GatePolicy(
                rule=settings.gate,
                threshold=settings.threshold,
                min_effect=settings.min_effect,
                window=settings.window,
                allow_model_change=settings.allow_model_change,
                min_coverage=settings.min_coverage,
                detect=settings.detect,
                require_power=settings.require_power,
                metric=settings.gate_metric,
                fdr=settings.fdr,
                judge_correction=settings.judge_correction,
                require_calibrated_judge=settings.require_calibrated_judge,
            ),
            history=history,
            known_keys=context.state.known_keys,
            flags=FLAGS,
            calibration=end.judge.calibration if end.judge is not None else None,
        )
    if context.missing_baseline is None:
        return None
    label, why = context.missing_baseline
    if settings.save_baseline == label:
        end.messages.append(
            f"WARNING: baseline {label!r} (verdryx_baseline in the ini) was not found, "
            "so nothing was gated"
        )
        return None
    if not run.complete:
        return None  # not gated anyway: the INCOMPLETE line of the summary says why
    return refused(label, f"{why} (verdryx_baseline in the ini)")


def _labels_paths(end: SessionEnd) -> list[Path]:
    """`--verdryx-labels`: a file, or a folder of them (`read_labels` reads both); relative
    to the rootdir."""
    raw = end.settings.labels
    if not raw:
        return []
    path = Path(raw)
    return [path if path.is_absolute() else end.context.config.rootpath / path]


def _case_labels(context: SessionContext) -> list[Label]:
    """The `human_label` of the selected cases (docs/evalset-reference.md), as gathered where
    the items were collected (every worker, under xdist)."""
    if not context.state.human_labels:
        return []  # and the calibration package (numpy) is not imported
    from verdryx_core.gating.calibration.labels import Label

    return [
        Label(eval_set_id=set_id, case_id=case_id, output_sha256=sha, label=label)
        for (set_id, case_id, sha), label in context.state.human_labels.items()
    ]


def _check_judge(end: SessionEnd, case_labels: list[Label]) -> None:
    """The run's judge against the human labels (the labels files', then the cases'
    `human_label`): the summary's judge block, each judge's figure kept in the store, and
    the calibration the gate's correction rests on."""
    from verdryx_core.gating.calibration.figures import save_figures
    from verdryx_core.gating.calibration.judge_check import check_judge
    from verdryx_core.gating.calibration.labels import read_labels

    context = end.context
    try:
        labels = case_labels + read_labels(_labels_paths(end))
        store = context.store.open() if end.settings.store or context.store.exists() else None
        end.judge = check_judge(end.run, labels, store)
        if store is not None and end.stored and end.run.complete:
            save_figures(store, end.run.id, end.judge.agreement)
    except VerdryxError as exc:
        end.messages.append(f"ERROR: {worded(exc)}")
        end.exit_status = pytest.ExitCode.USAGE_ERROR


def _judge_without_gate(end: SessionEnd) -> None:
    """No baseline to gate: the judge's drift and the corrected pass rate still decide, as
    asked, on the run alone."""
    check, settings = end.judge, end.settings
    if check is None:
        return
    from verdryx_core.gating.calibration.correction import corrected_rate

    if settings.require_calibrated_judge and check.calibration.drift:
        end.messages.append(f"ERROR: judge not calibrated: {check.calibration.drift}")
        end.exit_status = pytest.ExitCode.USAGE_ERROR
        return
    if not settings.judge_correction:
        return
    shortfall = check.calibration.shortfall()
    if shortfall is not None:
        end.messages.append(f"ERROR: {shortfall} (labels: --verdryx-labels)")
        end.exit_status = pytest.ExitCode.USAGE_ERROR
        return
    passed = [
        bool(s.passed) for s in end.run.scores if s.grader == "llm_judge" and s.passed is not None
    ]
    if passed:
        rate = corrected_rate(passed, check.calibration)
        ci = f" [{rate.ci[0]:.3f}, {rate.ci[1]:.3f}]" if rate.ci else ""
        end.messages.append(
            f"judged pass rate corrected for the judge: {rate.corrected:.3f}{ci} "
            f"(observed {rate.observed:.3f} on {rate.n} judged cases)"
        )


def _ci_outputs(end: SessionEnd) -> None:
    """The gate as a test, and the job summary (docs/ci.md): before junitxml writes its file."""
    ci = end.context.config.pluginmanager.get_plugin("verdryx-ci")
    if ci is None:
        return  # no CI view asked for (and its module is not imported)
    from pytest_verdryx.ci import CiOutputs

    if isinstance(ci, CiOutputs):
        ci.finish(end.run, end.gate, gated=end.run.complete)


def _with_provenance(run: EvalRun, context: SessionContext, *, stopped: str | None) -> EvalRun:
    """Where the run came from (docs/ci.md), and whether it measured only part of the cases
    collected: a subset is stored as partial, kept out of windows, history and baselines."""
    from verdryx_core.reporting.ci import ci_provenance, default_run_group

    config, settings = context.config, context.settings
    found = ci_provenance(cwd=config.rootpath)
    run = dataclasses.replace(
        run,
        label=settings.label,
        commit=found.commit,
        branch=found.branch,
        ci_url=found.ci_url,
        run_group=settings.run_group or default_run_group(),
        partial=is_subset(context, stopped=stopped),
    )
    shard = settings.shard
    if shard is not None:
        # One shard of a group: stored for `verdryx gate`, a subset on purpose, with its share
        # of the cases collected, so a shard narrowed below it is never assembled as whole.
        share = sum(1 for key in context.state.known_keys if shard.holds(*key.split("::", 1)))
        run = dataclasses.replace(run, shard=str(shard), partial=True, shard_share=share)
    return run


def is_subset(context: SessionContext, *, stopped: str | None) -> bool:
    """A run of fewer cases than were collected (-k, -m, --deselect, node ids select; a
    stop after -x), or of only the cases that failed last time (--lf)."""
    state, config = context.state, context.config
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


def _save_baseline(end: SessionEnd) -> None:
    run, settings, context = end.run, end.settings, end.context
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
            context.store.open().save_baseline(baseline)
        path = write_baseline_file(context.config.rootpath, baseline)
    except (ValueError, VerdryxError, OSError) as exc:
        why = worded(exc) if isinstance(exc, VerdryxError) else str(exc)
        end.messages.append(f"ERROR: baseline {label!r} not saved: {why}")
        _fail(end)
        return
    end.saved_baseline = f"{label} (mean {baseline.mean:.3f}) -> {path}"


def _send_exports(end: SessionEnd) -> None:
    """The opt-in exports (events, OTLP, the HTML report): never failing the eval."""
    run, settings, context = end.run, end.settings, end.context
    drift = end.gate.drift if end.gate is not None else None
    if settings.events:
        end.messages.extend(exports.emit_events(settings.events, run, drift))
    if context.exporter is not None and context.otlp_endpoint:
        end.messages.append(
            exports.export_spans(context.exporter, context.otlp_endpoint, run, drift)
        )
    if settings.report:
        result = end.gate.result if end.gate is not None else None
        end.messages.append(
            exports.write_html_report(
                context.store.open(), settings.report, run, context.baseline, result
            )
        )
