"""The end of a session, in order: the run assembled by the evaluation, concluded by the
core's `conclude` (stored, gated, a baseline saved, the exit decided), the exports sent.
`finish_session` returns a `SessionEnd` that the terminal summary only prints; pytest runs it
in `pytest_sessionfinish`, which it reaches even on exits that skip the summary.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_verdryx import exports
from pytest_verdryx.context import SessionContext
from pytest_verdryx.options import FLAGS, Settings, settings_fields
from pytest_verdryx.state import SessionState
from verdryx_core.conclusion import Conclusion, RunPolicy, Selection, conclude
from verdryx_core.errors import VerdryxError
from verdryx_core.hooks import run_concluded
from verdryx_core.runs import EvalRun
from verdryx_core.store import StoreTarget

if TYPE_CHECKING:
    from verdryx_core.gating.compare import GateOutcome
    from verdryx_core.gating.planning import Plan
    from verdryx_core.gating.policy import GatePolicy
    from verdryx_core.gating.sequential import SequentialVerdict
    from verdryx_core.judge.calibration.judge_check import JudgeCheck
    from verdryx_core.judge.calibration.labels import Label
    from verdryx_core.judge.pairwise import PairwiseResult

__all__ = ["SessionEnd", "finish_session", "incomplete_reason", "run_policy"]


@dataclass(slots=True, kw_only=True)
class SessionEnd:
    """What the end of the session decided and did; the summary prints it, nothing more."""

    context: SessionContext
    #: The core's conclusion of the run: stored, gated, baseline saved, exit.
    conclusion: Conclusion
    #: Summary lines: warnings, errors and what the exports did.
    messages: list[str] = field(default_factory=list)
    #: The exit status pytest ends with (the conclusion may turn OK into TESTS_FAILED).
    exit_status: int | pytest.ExitCode = pytest.ExitCode.OK
    #: Wall time spent waiting for prefetched calls.
    call_seconds: float = 0.0
    #: What those calls were, each kind once (`target calls`, `sandbox runs`).
    call_kinds: tuple[str, ...] = ()
    store_path: StoreTarget | None = None
    #: What it takes to see `--verdryx-detect`, when an on-track verdict could not see it.
    plan: Plan | None = None
    #: The pairwise judge's verdicts of the champion and the challenger (docs/targets.md).
    pairwise: PairwiseResult | None = None

    @property
    def settings(self) -> Settings:
        return self.context.settings

    @property
    def state(self) -> SessionState:
        return self.context.state

    @property
    def run(self) -> EvalRun:
        return self.conclusion.run

    @property
    def incomplete(self) -> str | None:
        return self.conclusion.incomplete

    @property
    def gate(self) -> GateOutcome | None:
        return self.conclusion.gate

    @property
    def stored(self) -> bool:
        """Whether the run really is in the store (a failed write leaves it False)."""
        return self.conclusion.stored

    @property
    def judge(self) -> JudgeCheck | None:
        """The judge checked against `--verdryx-labels` (docs/calibrating-the-judge.md)."""
        return self.conclusion.judge

    @property
    def saved_baseline(self) -> str | None:
        saved = self.conclusion.baseline_saved
        return saved.words() if saved is not None else None


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
    context: SessionContext,
    session: pytest.Session,
    *,
    call_seconds: float,
    call_kinds: Sequence[str] = (),
    pairwise: PairwiseResult | None = None,
) -> SessionEnd:
    settings, state = context.settings, context.state
    stopped_by = session.shouldfail or session.shouldstop
    stopped = str(stopped_by) if stopped_by else None
    incomplete = incomplete_reason(state, stopped=stopped, exit_status=session.exitstatus)
    run = context.evaluation.run(
        state.ordered_scores(), complete=incomplete is None, targets=state.targets
    )
    run = _labelled(run, context)
    challenger = _challenger_run(context, run)
    if settings.repeat_auto and context.allocation is None:
        _allocation_of_workers(context, run)
    sequential = _sequential(context)
    store = context.store
    # Earlier runs and judge figures live in the store; with none yet (--no-verdryx-store on
    # a fresh runner) there are none, and opening it would create the file.
    readable = settings.store or store.exists()
    conclusion = conclude(
        run,
        baseline=context.baseline or context.missing_baseline,
        policy=run_policy(settings, context.config.rootpath, sequential=sequential),
        selection=Selection(
            known_keys=state.known_keys,
            narrowed=narrowed(context, stopped=stopped, sequential=sequential),
            incomplete=incomplete,
        ),
        store=store.open if readable else None,
        keep="save" if settings.store else "read",
        root=context.config.rootpath,
        cache_entries=state.calls.take_entries() if settings.store else (),
        case_labels=_case_labels(context),
        flags=FLAGS,
        challenger=challenger,
    )
    end = SessionEnd(
        context=context,
        conclusion=conclusion,
        messages=[*context.messages, *context.state.notes, *conclusion.messages],
        exit_status=exit_status(session.exitstatus, conclusion),
        call_seconds=call_seconds,
        call_kinds=tuple(call_kinds),
        store_path=store.path if settings.store else None,
        pairwise=pairwise,
    )
    if end.gate is not None:
        end.plan = _plan(end)
    result = end.gate.result if end.gate is not None else None
    exports.add_junit_properties(
        context.config, end.run, result, context.baseline_name, _sequential_junit(end)
    )
    exports.add_case_regressed(
        context.config,
        {score.key: nodeid for nodeid, (_, score) in context.state.scores.items()},
        result,
    )
    _ci_outputs(end)
    _send_exports(end)
    return end


def _challenger_run(context: SessionContext, run: EvalRun) -> EvalRun | None:
    """The challenger's run of the cases it answered (docs/targets.md, "A challenger"): its
    own id, the session's start and label, its errors its own; None without a challenger."""
    settings, state = context.settings, context.state
    if settings.challenger is None:
        return None
    evaluation = context.evaluation
    scores = state.ordered_challenger_scores()
    # The challenger stands in for the target of every eval set that has one.
    targets = {set_id: settings.challenger for set_id, spec in state.targets.items() if spec}
    challenger = evaluation.run(
        scores,
        complete=run.complete,
        errors=[f"case {error}" for error in state.challenger_errors],
        targets=targets,
    )
    return dataclasses.replace(
        challenger,
        id=str(uuid.uuid4()),
        target_version=settings.challenger_version,
        label=run.label,
        run_group=run.run_group,
        partial=run.partial,
    )


def exit_status(status: int | pytest.ExitCode, conclusion: Conclusion) -> int | pytest.ExitCode:
    """pytest's exit status once the run is concluded: a refused conclusion is a usage
    error (4), a failed one fails an OK session (1); an interrupted or internal error stays
    what it is, so a CI sees it."""
    if status in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR):
        return status
    if conclusion.exit == "refused":
        return pytest.ExitCode.USAGE_ERROR
    if conclusion.exit == "failed" and status == pytest.ExitCode.OK:
        return pytest.ExitCode.TESTS_FAILED
    return status


def run_policy(
    settings: Settings, rootdir: Path, *, sequential: SequentialVerdict | None = None
) -> RunPolicy:
    """The session's policy, from its settings, passed whole to the core (with where the
    sequential gate stood, under `--verdryx-sequential`)."""
    return RunPolicy(
        gate=gate_policy(settings, sequential=sequential),
        # fail_on, save_baseline, allow_partial_baseline, baseline_runs: the table's fields.
        **settings_fields("run", settings),
        labels=tuple(_labels_paths(settings, rootdir)),
    )


def gate_policy(settings: Settings, *, sequential: SequentialVerdict | None = None) -> GatePolicy:
    from verdryx_core.gating.policy import GatePolicy

    # The gate's settings (rule, threshold, window, fdr...): the table's fields.
    return GatePolicy(sequential=sequential, **settings_fields("gate", settings))


def _allocation_of_workers(context: SessionContext, run: EvalRun) -> None:
    """Under xdist the workers allocated `--verdryx-repeat=auto` (the controller collects no
    items): the summary's allocation is recomputed here from the same cases and baseline."""
    from verdryx_core.evaluation.allocation import allocate

    keys = [score.key for score in run.scores]
    budget = context.settings.max_samples or 3 * len(keys)
    baseline = context.baseline.case_map() if context.baseline is not None else {}
    context.allocation = allocate(keys, baseline, budget)


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


def _labels_paths(settings: Settings, rootdir: Path) -> list[Path]:
    """`--verdryx-labels`: a file, or a folder of them (`read_labels` reads both); relative
    to the rootdir."""
    raw = settings.labels
    if not raw:
        return []
    path = Path(raw)
    return [path if path.is_absolute() else rootdir / path]


def _case_labels(context: SessionContext) -> list[Label]:
    """The `human_label` of the selected cases (docs/evalset-reference.md), as gathered where
    the items were collected (every worker, under xdist)."""
    if not context.state.human_labels:
        return []  # and the calibration package (numpy) is not imported
    from verdryx_core.judge.calibration.labels import Label

    return [
        Label(eval_set_id=set_id, case_id=case_id, output_sha256=sha, label=label)
        for (set_id, case_id, sha), label in context.state.human_labels.items()
    ]


def _ci_outputs(end: SessionEnd) -> None:
    """The gate as a test, and the job summary (docs/ci.md): before junitxml writes its file."""
    ci = end.context.config.pluginmanager.get_plugin("verdryx-ci")
    if ci is None:
        return  # no CI view asked for (and its module is not imported)
    from pytest_verdryx.ci import CiOutputs

    if isinstance(ci, CiOutputs):
        conclusion = end.conclusion
        refused = conclusion.exit_reason if conclusion.exit == "refused" else None
        rival = conclusion.challenger_run, conclusion.challenger
        ci.finish(
            end.run,
            end.gate,
            gated=end.run.complete,
            refused=refused,
            challenger=(rival[0], rival[1]) if rival[0] is not None and rival[1] else None,
            pairwise=end.pairwise,
        )


def _labelled(run: EvalRun, context: SessionContext) -> EvalRun:
    """The run's label and run group as the session names them, and a shard's place: one
    shard of a group is stored for `verdryx gate`, a subset on purpose, with its share of
    the cases collected, so a shard narrowed below it is never assembled as whole (the
    commit, branch and CI job are read by the core's conclusion)."""
    settings = context.settings
    run = dataclasses.replace(run, label=settings.label, run_group=settings.run_group)
    shard = settings.shard
    if shard is not None:
        share = sum(1 for key in context.state.known_keys if shard.holds(*key.split("::", 1)))
        run = dataclasses.replace(run, shard=str(shard), partial=True, shard_share=share)
    return run


def _sequential(context: SessionContext) -> SequentialVerdict | None:
    """Where `--verdryx-sequential`'s gate stood at the end (None: not asked for)."""
    plugin = context.config.pluginmanager.get_plugin("verdryx-sequential")
    verdict = getattr(plugin, "verdict", None)
    return verdict() if callable(verdict) else None


def _sequential_junit(end: SessionEnd) -> dict[str, object]:
    """The sequential gate's suite properties, and the verdict it decided (docs/ci.md)."""
    plugin = end.context.config.pluginmanager.get_plugin("verdryx-sequential")
    properties = getattr(plugin, "junit_properties", None)
    extra: dict[str, object] = dict(properties()) if callable(properties) else {}
    gate = end.gate
    if extra and gate is not None and gate.sequential is not None:
        extra["verdryx.verdict"] = gate.verdict
    return extra


def narrowed(
    context: SessionContext,
    *,
    stopped: str | None,
    sequential: SequentialVerdict | None = None,
) -> str | None:
    """Why this session measured a selection of the cases, in words; None when it measured
    every case it could find (docs/statistics.md, "Coverage"): file or node id arguments, a
    deselection (-k, -m, --deselect), a stop after -x, or only the cases that failed last
    time (--lf). A folder argument, or none, collects every eval set under it: not narrowed."""
    state, config = context.state, context.config
    if stopped or state.stopped_early:
        return "the session stopped early"
    if sequential is not None and sequential.not_needed:
        # Stored as a subset on purpose: never a baseline, never pooled as whole; the gate
        # takes the confidence sequence's verdict (docs/statistics.md, "The sequential gate").
        return (
            f"--verdryx-sequential settled its verdict after {sequential.n} matched case(s): "
            f"{sequential.not_needed} not needed"
        )
    if state.expected_count < len(state.known_keys):
        return "-k, -m, --deselect or node ids"
    # --lf may skip whole files that had no failure: they are never collected, so compare
    # with what the cache says failed instead.
    lastfailed = getattr(config.pluginmanager.get_plugin("lfplugin"), "lastfailed", None)
    if config.getoption("lf", False) and lastfailed:
        return "--lf"
    files = _file_arguments(config)
    if files:
        return f"file arguments: {', '.join(files[:3])}{' ...' if len(files) > 3 else ''}"
    return None


def _file_arguments(config: pytest.Config) -> list[str]:
    """The files (and node ids) named on the command line: each collects its own eval sets
    only."""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return []  # testpaths, or the invocation folder: everything under them
    root = config.invocation_params.dir
    named = []
    for argument in config.args:
        path = Path(argument.split("::", 1)[0])
        if not path.is_absolute():
            path = root / path
        if "::" in argument or path.is_file():
            named.append(argument)
    return named


def _send_exports(end: SessionEnd) -> None:
    """What the add-ons do with a concluded run (the events add-on: the event log and
    OTLP spans), then the HTML report: never failing the eval."""
    run, settings, context = end.run, end.settings, end.context
    end.messages.extend(run_concluded(end.conclusion, context.addons))
    if settings.report:
        result = end.gate.result if end.gate is not None else None
        conclusion = end.conclusion
        rival = conclusion.challenger_run, conclusion.challenger
        end.messages.append(
            exports.write_html_report(
                context.store.open(),
                settings.report,
                run,
                context.baseline,
                result,
                challenger=(rival[0], rival[1], end.pairwise)
                if rival[0] is not None and rival[1] is not None
                else None,
            )
        )
