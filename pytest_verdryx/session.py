"""The session's work once verdryx is on: the configure-time checks, the target built at
session start, what collection tells the run, and the session's end (`finish_session`).

Imported only when verdryx turns on (the session's plugin object, `plugin.py`, imports
it inside its hooks), so it imports the core freely. Only the controller (or a run without
xdist) writes the store or a baseline file; workers send their state as a payload.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_verdryx.context import SessionContext
from pytest_verdryx.exports import check_report
from pytest_verdryx.finish import SessionEnd, finish_session
from pytest_verdryx.items import EvalCaseItem
from pytest_verdryx.options import FLAGS, Settings, evalset_patterns, worded
from pytest_verdryx.prefetch import PrefetchCalls, TerminalStream
from pytest_verdryx.quiet_phases import drop_unshown_phases
from verdryx_core.conclusion.policy import MissingBaseline
from verdryx_core.errors import UsageError, VerdryxError
from verdryx_core.evaluation.exec_notes import run_notes
from verdryx_core.gating.baselines import check_label, find_baseline
from verdryx_core.hooks import configure as configure_addons
from verdryx_core.leftover_threads import exit_past_leftover_threads
from verdryx_core.runs import EvalRun

if TYPE_CHECKING:
    from verdryx_core.judge.pairwise import PairwiseResult

__all__ = [
    "build_target",
    "check",
    "ci_in_play",
    "collection_finished",
    "finish",
]


def ci_in_play(settings: Settings) -> bool:
    """Whether a CI view is asked for (docs/ci.md): the gate testcase (a baseline named),
    GitHub annotations, or a job summary. Otherwise nothing listens to every report."""
    return bool(
        settings.baseline
        or settings.challenger
        or os.environ.get("GITHUB_ACTIONS") == "true"
        or os.environ.get("GITHUB_STEP_SUMMARY")
    )


def _usage_error(exc: VerdryxError) -> pytest.UsageError:
    return pytest.UsageError(f"verdryx: {worded(exc)}")


# -- configure time ---------------------------------------------------------------------------


def check(config: pytest.Config, context: SessionContext) -> None:
    """At configure time (turned on by an eval case: after collection, before anything
    runs): the exports, the typed client and the baseline, so a typo is exit 4 before
    anything is collected (or run) or paid for."""
    settings = context.settings
    if settings.shard is not None:
        from pytest_verdryx.shard import check_shard_settings  # a shard's session only

        check_shard_settings(settings)
    try:
        if settings.batch:
            from verdryx_core.llm.batch import check_batchable  # a batch session's only

            check_batchable(settings.model, cache=settings.cache)
        # The add-ons check their own settings (--verdryx-events...): verdryx_core.hooks.
        configure_addons(context.addons)
        check_report(settings)
        context.evaluation.check_graders()
        if settings.save_baseline:
            # A label that cannot name a file is refused now, before any call is paid
            # for, not after the whole run (docs/troubleshooting.md).
            check_label(settings.save_baseline)
        # A worker leaves the import to its first call: the controller has loaded the
        # target (exit 4 there), and when it calls every case the worker makes none.
        context.evaluation.check_target(load=not context.is_worker)
        if not context.is_worker and settings.pairwise_judge is not None:
            from pytest_verdryx.pairwise import check_pairwise

            check_pairwise(context)
        _load_baseline(config, context)
    except VerdryxError as exc:
        raise _usage_error(exc) from None


def _load_baseline(config: pytest.Config, context: SessionContext) -> None:
    label = context.settings.baseline
    if context.is_worker or not label:
        return
    root = Path(config.rootpath)
    # A store that does not exist yet holds no baseline: do not create it just to look.
    store = context.store.open() if context.store.exists() else None
    if config.getoption("verdryx_baseline") is None:
        # Named in the ini: a session with no eval cases (plain unit tests) must not
        # fail on it, and a first `--verdryx-save-baseline` must be able to create it.
        try:
            find_baseline(label, store=store, root=root, flags=FLAGS)
        except UsageError as exc:
            context.missing_baseline = MissingBaseline(
                label=label, why=worded(exc), named_in="verdryx_baseline in the ini"
            )
            return
    baseline = find_baseline(label, store=store, root=root, flags=FLAGS)
    # A model change is refused now (exit 4), before anything is paid for; allowed,
    # it is a warning.
    evaluation = context.evaluation
    probe = EvalRun(
        id="-",
        model=evaluation.settings.model,
        judge_model=evaluation.settings.judge_model,
        started_at=evaluation.started_at,
    )
    from verdryx_core.gating.comparison import check_models  # the gate's statistics

    warning = check_models(probe, baseline, allow=context.settings.allow_model_change)
    if warning:
        context.messages.append(f"WARNING: {warning}")
    context.gate_against(baseline)


# -- session start ----------------------------------------------------------------------------


def build_target(config: pytest.Config, context: SessionContext, hook: Callable[..., Any]) -> None:
    """A conftest.py may build the agent under test at session start (docs/targets.md)."""
    try:
        built = hook(config=config)
    except Exception as exc:  # the user's set-up code: one line, not a traceback
        text = " ".join(str(exc).split())
        raise pytest.UsageError(
            f"verdryx: the pytest_verdryx_target hook raised {type(exc).__name__}"
            + (f": {text}" if text else "")
        ) from None
    if built is None:
        return
    if not callable(built):
        raise pytest.UsageError(
            f"verdryx: the pytest_verdryx_target hook returned a {type(built).__name__}, "
            "not a callable; return the function (or async function, or bound method) "
            "verdryx calls with each case"
        )
    from verdryx_core.targets import Target

    target = Target.of(built)
    evaluation = context.evaluation
    evaluation.settings = dataclasses.replace(
        evaluation.settings, target=target.spec, built_target=target
    )


# -- collection -------------------------------------------------------------------------------


def collection_finished(context: SessionContext, session: pytest.Session) -> None:
    """What the selected items tell the run, before anything runs."""
    settings = context.settings
    # An xdist worker's error here would crash it: there each pass@K case short of
    # samples is unmeasured, with the reason, when it is scored.
    worker = context.is_worker
    items = [item for item in session.items if isinstance(item, EvalCaseItem)]
    cases = [] if worker else items
    try:
        # Before anything runs: a pass@K case needs K repeats (docs/options.md); under
        # --verdryx-repeat=auto the allocation gives each at least K.
        if not settings.repeat_auto:
            context.evaluation.check_aggregates((item.evalset, item.case) for item in cases)
        notes = run_notes(
            (item.case for item in items),
            repeat=settings.repeat,
            unsafe_exec=settings.unsafe_exec,
            flags=FLAGS,
        )
    except VerdryxError as exc:
        raise _usage_error(exc) from None
    state = context.state
    if worker:
        # The controller collects nothing: it says the workers' notes, once.
        state.notes = notes
    else:
        context.messages.extend(notes)
    state.order = {item.nodeid: index for index, item in enumerate(session.items)}
    state.expected = {
        item.nodeid
        for item in session.items
        if isinstance(item, EvalCaseItem) or item.get_closest_marker("verdryx") is not None
    }
    state.expected_count = len(state.expected)
    state.targets = context.evaluation.targets_of((item.evalset.id, item.case) for item in items)
    state.human_labels = _human_labels(items)
    if settings.repeat_auto:
        _allocate(context, items)


def _allocate(context: SessionContext, items: Sequence[EvalCaseItem]) -> None:
    """`--verdryx-repeat=auto`: each case's samples from the baseline's per-case variance
    (docs/statistics.md). Every process computes it from the same items and baseline."""
    from verdryx_core.evaluation.aggregate import aggregate_k
    from verdryx_core.evaluation.allocation import allocate

    keys = [f"{item.evalset.id}::{item.case.id}" for item in items]
    floors = {
        key: k
        for key, item in zip(keys, items, strict=True)
        if (k := aggregate_k(item.case.aggregate)) is not None
    }
    budget = context.settings.max_samples or 3 * len(keys)
    baseline = context.baseline.case_map() if context.baseline is not None else {}
    allocation = allocate(keys, baseline, budget, floors=floors)
    if context.baseline is None:
        allocation = dataclasses.replace(
            allocation,
            fallback=allocation.fallback
            and "no baseline to allocate by: " + allocation.fallback.split(": ", 1)[-1],
        )
    # Read by every scorer of the session (`scoring.scorer_for`): the evaluation is not
    # changed after its construction.
    context.allocation = allocation


def _human_labels(items: Sequence[EvalCaseItem]) -> dict[tuple[str, str, str], str | float]:
    """The `human_label` of each selected case with a recorded text output, keyed as the
    labels files are matched (docs/calibrating-the-judge.md)."""
    labelled = [
        item
        for item in items
        if item.case.human_label is not None and isinstance(item.case.output, str)
    ]
    if not labelled:
        return {}
    from verdryx_core.judge.calibration.labels import output_sha256

    labels: dict[tuple[str, str, str], str | float] = {}
    for item in labelled:
        label = item.case.human_label
        if label is not None:
            labels[(item.evalset.id, item.case.id, output_sha256(str(item.case.output)))] = label
    return labels


# -- the end ----------------------------------------------------------------------------------


def finish(
    context: SessionContext,
    session: pytest.Session,
    exitstatus: int,
    *,
    prefetch: PrefetchCalls,
    items: Sequence[pytest.Item],
    threads_at_start: Any,
    nested: bool,
) -> SessionEnd | None:
    """The controller's (or a lone process's) end of a session whose start's work is done:
    the run concluded, stored and gated (`finish_session`), or nothing when nothing was
    measured. A session run inside another one (pytester's in-process runs) leaves the
    leftover threads to it."""
    config = context.config
    # Here, before the terminal's summary: pytest writes it after every sessionfinish.
    drop_unshown_phases(config, evalset_patterns(config))
    try:
        if not context.state.active or config.option.collectonly:
            return None  # listing cases measures nothing: no run, not even an incomplete one
        pairwise = None
        if exitstatus != pytest.ExitCode.INTERRUPTED:
            pairwise = _pairwise(context, prefetch, items)
        end = finish_session(
            context,
            session,
            call_seconds=prefetch.seconds,
            call_kinds=prefetch.kinds,
            pairwise=pairwise,
        )
        session.exitstatus = end.exit_status
        return end
    finally:
        context.store.close()
        if not nested:
            exit_past_leftover_threads(threads_at_start, lambda: int(session.exitstatus))


def _pairwise(
    context: SessionContext, prefetch: PrefetchCalls, items: Sequence[pytest.Item]
) -> PairwiseResult | None:
    """The pairwise judge's verdicts (docs/targets.md, "A pairwise judge"), or None."""
    if context.settings.pairwise_judge is None:
        return None
    from pytest_verdryx.pairwise import judge_session_pairs

    config = context.config
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.ensure_newline()  # the progress line, not after the last `[100%]`
    cases = {item.nodeid: item.case for item in items if isinstance(item, EvalCaseItem)}
    return judge_session_pairs(
        context, prefetch.cases_of, items=cases, stream=TerminalStream(config)
    )
