"""`verdryx eval SET... --model M [--baseline LABEL]`: grade eval sets outside pytest, store
the run, conclude it as a pytest session is concluded (gated against the baseline when one
is named), print it, and exit as pytest would (docs/cli.md, "Exit codes").

Argument parsing and printing only: the evaluation itself is `verdryx_core.evaluation` and
its conclusion `verdryx_core.conclusion`, the same the pytest plugin drives.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from verdryx_core.cli.commands._addons import (
    add_addon_arguments,
    addon_grader_options,
    addon_session,
)
from verdryx_core.cli.commands._common import (
    add_db_argument,
    add_json_argument,
    float_argument,
    open_store,
    print_json,
)
from verdryx_core.cli.commands._gating import (
    add_gate_arguments,
    conclusion_lines,
    exit_code,
    gate_document,
    outcome_lines,
    run_policy_from,
)
from verdryx_core.conclusion import Conclusion, Selection, conclude
from verdryx_core.errors import CLI_FLAGS, AfterSaveError, VerdryxError
from verdryx_core.evalsets.load import EvalSet, check_unique_ids, load_evalset
from verdryx_core.evaluation import (
    DEFAULT_MIN_SCORE,
    EvalSettings,
    EvaluationInterrupted,
    evaluate,
    judge_in_effect,
)
from verdryx_core.evaluation.exec_notes import run_notes
from verdryx_core.hooks import configure as configure_addons
from verdryx_core.hooks import run_concluded
from verdryx_core.reporting.summary import (
    kept_workspace_lines,
    output_failure_lines,
    repeat_note,
    run_lines,
    unmeasured_lines,
)
from verdryx_core.runs import Baseline, EvalRun
from verdryx_core.store import Store
from verdryx_core.timeouts import DEFAULT_TIMEOUT_S, check_timeout
from verdryx_core.untrusted.text import unwrapped

NAME = "eval"
HELP = "grade eval sets against a model, store the run, print the scores"


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is below the minimum 1")
    return value


def _disk_mib(text: str) -> int:
    value = _positive(text)
    if value > 1 << 20:
        raise argparse.ArgumentTypeError(f"{text} MiB is above the maximum {1 << 20} (1 TiB)")
    return value


def _seconds(text: str) -> float:
    try:
        return check_timeout(float(text), what="--timeout")
    except (ValueError, VerdryxError) as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds") from exc


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("evalsets", nargs="+", metavar="SET", help="*.evalset.json files")
    parser.add_argument(
        "--model",
        default="stub",
        help="'stub' (default: offline, deterministic) or a real model id",
    )
    parser.add_argument(
        "--judge",
        metavar="MODEL",
        help="judge model for llm_judge cases ('stub': the offline stub judge); without it "
        "those cases are unmeasured",
    )
    parser.add_argument("--agent-id", help="the agent this run measures (for SLO joins)")
    parser.add_argument(
        "--concurrency", type=_positive, default=8, help="model calls in flight (default 8)"
    )
    parser.add_argument(
        "--cache", choices=("on", "off", "replay"), default="on", help="model cache (default on)"
    )
    parser.add_argument(
        "--min-score",
        type=float_argument(minimum=0.0, maximum=1.0),
        default=None,
        help="pass bar for cases without one (default: the grader's own bar, 1.0 for "
        f"tool_trace, else {DEFAULT_MIN_SCORE})",
    )
    parser.add_argument(
        "--repeat",
        type=_positive,
        default=1,
        metavar="N",
        help="sample every model case N times; its score is the mean (default 1)",
    )
    parser.add_argument(
        "--prices",
        metavar="FILE",
        help="JSON price file overriding the built-in price book (model -> $ per million tokens)",
    )
    parser.add_argument(
        "--batch",
        action="store_true",
        help="send the model and judge calls as Anthropic Message Batches: half price, "
        "answers within the hour rather than seconds (docs/sharding.md)",
    )
    parser.add_argument(
        "--unsafe-exec",
        action="store_true",
        help="run exec cases without kernel isolation where the machine offers none "
        "(unset: they are refused there; docs/workspaces-and-execution.md)",
    )
    parser.add_argument(
        "--exec-disk",
        type=_disk_mib,
        metavar="MIB",
        default=256,
        help="the work folder's total size of an exec case, MiB (default 256); a case "
        "that fills it fails with that reason",
    )
    parser.add_argument(
        "--target",
        metavar="MODULE:CALLABLE",
        help="the agent under test, called once per case and repeat (an eval set's own "
        "target wins; imported from the current folder first)",
    )
    parser.add_argument(
        "--target-version",
        metavar="VERSION",
        help="cache the target's results under this version (unset: never cached)",
    )
    parser.add_argument(
        "--user-model",
        default="stub",
        metavar="MODEL",
        help="who plays a case's simulated user with a persona: stub (offline, "
        "deterministic; default) or a model id (docs/scenarios.md)",
    )
    parser.add_argument(
        "--otel",
        choices=("auto", "off"),
        default="auto",
        help="auto: a target call's OpenTelemetry GenAI spans give its result the tool calls, "
        "usage and model it does not return (when opentelemetry-sdk is installed); off: "
        "never read (docs/targets.md)",
    )
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"seconds any one call may take: target, model, judge (default {DEFAULT_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--keep-workspaces",
        action="store_true",
        help="leave each case's workspace folder in place after grading and print the "
        "folders of failed cases (default: removed once graded)",
    )
    add_gate_arguments(parser, window=True, required=False)
    add_db_argument(parser)
    add_json_argument(parser)
    # The add-ons' options (the typed grader's --typed-url...): verdryx_core.hooks.
    add_addon_arguments(parser)


def settings_from(args: argparse.Namespace) -> EvalSettings:
    return EvalSettings(
        flags=CLI_FLAGS,
        model=args.model,
        judge=args.judge or None,
        cache=args.cache,
        concurrency=args.concurrency,
        repeat=args.repeat,
        prices=Path(args.prices) if args.prices else None,
        grader_options=addon_grader_options(args),
        min_score=args.min_score,
        agent_id=args.agent_id or None,
        batch=args.batch,
        unsafe_exec=args.unsafe_exec,
        exec_disk_mib=args.exec_disk,
        call_timeout=args.timeout,
        target=args.target or None,
        target_version=args.target_version or None,
        user_model=args.user_model or "stub",
        otel=args.otel,
        target_root=Path.cwd(),
        keep_workspaces=args.keep_workspaces,
    )


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    sets, problems = _load_sets(args.evalsets)
    check_unique_ids(sets)  # before the store is opened (and created)
    # The add-ons check their settings before anything is paid for (verdryx_core.hooks).
    addon_run = addon_session(args, settings.agent_id)
    configure_addons(addon_run)
    with open_store(args) as store:
        # An unknown label or another model is refused now, before anything is paid for.
        baseline = _baseline(args, store, settings)
        try:
            # A case whose call failed, a file that did not load, or a Ctrl-C leaves the run
            # incomplete: stored (with every answer already paid for, so a re-run pays only
            # for the rest), never gated on or saved as a baseline.
            # The progress line is verdryx's own counts, written raw: on a terminal its
            # carriage return rewrites the line, which the printable stream would escape.
            run = evaluate(
                sets,
                settings,
                store=store,
                progress=unwrapped(sys.stderr),
                incomplete_because=problems,
            )
        except EvaluationInterrupted as stop:
            print(
                f"error: interrupted; {len(stop.run.scores)} of {stop.total} cases scored, "
                f"stored as incomplete run {stop.run.id} in {store.path}",
                file=sys.stderr,
            )
            return EXIT_INTERRUPTED
        except AfterSaveError as failed:
            # The run is stored; what a plugged-in grader keeps of it is not.
            run, addons = cast(EvalRun, failed.run), list(failed.lines)
        else:
            addons = []
        failures = list(run.errors)
        conclusion = conclude(
            run,
            baseline=baseline,
            policy=run_policy_from(args),
            selection=Selection(incomplete="; ".join([*problems, *failures]) or None),
            store=store,
            keep="stored",
            flags=CLI_FLAGS,
        )
    # What the add-ons do with the concluded run: their lines follow the run's own.
    told = run_concluded(conclusion, addon_run)
    errors = [*problems, *failures, *addons]
    for line in errors:
        print(f"error: {line}", file=sys.stderr)
    if args.json:
        print_json(
            eval_document(run)
            | {"complete": run.complete, "errors": errors}
            | conclusion_document(conclusion)
        )
        for line in told:  # the document on stdout stays whole
            print(line, file=sys.stderr)
    else:
        live = sum(1 for evalset in sets for case in evalset.cases if case.needs_model)
        note = repeat_note(settings.repeat, live)
        for line in run_notes(
            (case for evalset in sets for case in evalset.cases),
            repeat=settings.repeat,
            unsafe_exec=settings.unsafe_exec,
            flags=CLI_FLAGS,
        ):
            print(line)
        _print_text(run, store.path, problems=problems, failures=failures, note=note)
        _print_conclusion(conclusion)
        for line in told:
            print(line)
    if conclusion.exit == "refused" and conclusion.exit_reason:
        print(f"error: {conclusion.exit_reason}", file=sys.stderr)
    if problems:
        return EXIT_UNREADABLE
    # A plugged-in grader that lost what it keeps of a stored run fails it (exit 1).
    return exit_code(conclusion) or (1 if addons else 0)


def _baseline(args: argparse.Namespace, store: Store, settings: EvalSettings) -> Baseline | None:
    """The baseline `--baseline` names (None without one), checked against the model and
    judge this run will use, as the pytest plugin checks it at its start."""
    if not args.baseline:
        return None
    from verdryx_core.gating.baselines import find_baseline
    from verdryx_core.gating.comparison import check_models

    baseline = find_baseline(args.baseline, store=store, root=Path(args.root), flags=CLI_FLAGS)
    probe = EvalRun(
        id="-",
        model=settings.model,
        judge_model=judge_in_effect(settings.judge),
        started_at=datetime.now(UTC),
    )
    warning = check_models(probe, baseline, allow=args.allow_model_change)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    return baseline


def conclusion_document(conclusion: Conclusion) -> dict[str, Any]:
    """docs/cli.md, `eval`: how the run was concluded (and gated, with `--baseline`)."""
    gate = conclusion.gate
    gated: dict[str, Any] | None = None
    if gate is not None:
        gated = (
            {"verdict": "refused", "refused": gate.refused}
            if gate.refused is not None or gate.result is None
            else gate_document(gate)
        )
    return {
        "exit": conclusion.exit,
        "exit_reason": conclusion.exit_reason,
        "failed": list(conclusion.failed),
        "new": list(conclusion.new),
        "drift": gated,
    }


def _print_conclusion(conclusion: Conclusion) -> None:
    gate = conclusion.gate
    lines: list[str] = []
    if gate is not None:
        if gate.refused is not None:
            lines.append(f"gate refused: {gate.refused}")
        elif gate.result is not None:
            lines.append(f"Drift vs baseline {gate.baseline}:")
            lines.extend(outcome_lines(gate))
    lines.extend(conclusion_lines(conclusion))
    for line in lines:
        print(f"  {line}")
    if lines:
        print()


#: docs/cli.md, exit codes: an unreadable eval set is exit 2 (the others are still graded);
#: a case whose call failed fails the run (exit 1: it is stored as incomplete).
EXIT_UNREADABLE = 2
#: A Ctrl-C, as for every command (the run is stored as incomplete).
EXIT_INTERRUPTED = 130


def _load_sets(paths: list[str]) -> tuple[list[EvalSet], list[str]]:
    """The eval sets that load, and one line for each that does not; none loading at all is
    the first file's error."""
    sets: list[EvalSet] = []
    problems: list[VerdryxError] = []
    for path in paths:
        try:
            sets.append(load_evalset(Path(path)))
        except VerdryxError as exc:
            problems.append(exc)
    if not sets:
        raise problems[0]
    return sets, [f"{exc} (not graded)" for exc in problems]


def eval_document(run: EvalRun) -> dict[str, Any]:
    """docs/cli.md, `eval`."""
    return {
        "run_id": run.id,
        "eval_set_id": ",".join(run.eval_set_ids),
        "eval_set_ids": list(run.eval_set_ids),
        "model": run.model,
        "target": run.target,
        "target_version": run.target_version,
        "mean_score": run.mean_score,
        "cases": len(run.measured),
        "scores": [
            {
                "case_id": s.case_id,
                "eval_set_id": s.eval_set_id,
                "value": s.value,
                "grader": s.grader,
                "tokens": s.tokens,
                "cost_usd": s.cost_usd + s.judge_cost_usd,
                "passed": s.passed,
            }
            for s in run.measured
        ],
        "unmeasured": [
            {"case_id": s.case_id, "eval_set_id": s.eval_set_id, "reason": s.unmeasured}
            for s in run.unmeasured
        ],
        # Scored 0 because the output could not be graded: failures, listed apart.
        "failed_by_output": [
            {"case_id": s.case_id, "eval_set_id": s.eval_set_id, "reason": s.failed_by_output}
            for s in run.scores
            if s.failed_by_output is not None
        ],
        "total_tokens": run.total_tokens,
        "total_cost_usd": run.total_cost_usd,
        "model_cost_usd": run.model_cost_usd,
        "judge_cost_usd": run.judge_cost_usd,
    }


def _print_text(
    run: EvalRun, db: str, *, problems: list[str], failures: list[str], note: str | None = None
) -> None:
    print()
    for line in run_lines(run):
        print(f"  {line}")
    if note:
        print(f"  {note}")
    if not run.complete:
        why = []
        if problems:
            why.append(f"{len(problems)} eval set file(s) not graded")
        if failures:
            why.append(f"{len(failures)} case(s) failed to score")
        print(f"  INCOMPLETE run: {', '.join(why)} (see the errors above); not a baseline")
    print(f"  stored in {db}{' as incomplete' if not run.complete else ''}")
    print()
    for score in run.scores:
        value = "  -- " if score.value is None else f"{score.value:.2f}"
        mark = "" if score.passed is None else (" pass" if score.passed else " FAIL")
        print(f"  [{value}]{mark:5} {score.key}")
    failed_by_output = output_failure_lines(run.scores)
    if failed_by_output:
        print()
        for line in failed_by_output:
            print(f"  {line}")
    if run.unmeasured:
        print()
        print("  unmeasured:")
        for line in unmeasured_lines(run.unmeasured):
            print(line)
    kept = kept_workspace_lines([score for score in run.scores if score.passed is False])
    if kept:
        print()
        for line in kept:
            print(f"  {line}")
    print()
