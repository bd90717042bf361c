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
from verdryx_core.cli.commands._settings import add_setting_arguments, setting_fields
from verdryx_core.conclusion import Conclusion, Selection, conclude
from verdryx_core.errors import CLI_FLAGS, AfterSaveError, VerdryxError
from verdryx_core.evalsets.load import EvalSet, check_unique_ids, evalset_files, load_evalset
from verdryx_core.evaluation import (
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
from verdryx_core.untrusted.text import unwrapped

NAME = "eval"
HELP = "grade eval sets against a model, store the run, print the scores"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "evalsets",
        nargs="+",
        metavar="SET",
        help="eval set files, or folders to search for *.evalset.json, .jsonl and .csv files",
    )
    # --model, --judge, --concurrency, --repeat, --timeout, the gate's settings...: the table.
    add_setting_arguments(parser, NAME)
    parser.add_argument(
        "--prices",
        metavar="FILE",
        help="JSON price file overriding the built-in price book (model -> $ per million tokens)",
    )
    add_gate_arguments(parser, required=False)
    add_db_argument(parser)
    add_json_argument(parser)
    # The add-ons' options (the typed grader's --typed-url...): verdryx_core.hooks.
    add_addon_arguments(parser)


def settings_from(args: argparse.Namespace) -> EvalSettings:
    return EvalSettings(
        # The table's evaluation settings `eval` takes, by their fields.
        **setting_fields("evaluation", args, NAME),
        flags=CLI_FLAGS,
        prices=Path(args.prices) if args.prices else None,
        grader_options=addon_grader_options(args),
        target_root=Path.cwd(),
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
            policy=run_policy_from(args, NAME),
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
    the first file's error. A folder stands for the eval set files below it, as under pytest."""
    sets: list[EvalSet] = []
    problems: list[VerdryxError] = []
    for path in evalset_files(paths):
        try:
            sets.append(load_evalset(path))
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
