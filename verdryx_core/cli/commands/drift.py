"""`verdryx drift --baseline ID_OR_LABEL`: conclude the newest run (or `--run`) against a
baseline, as the pytest plugin concludes a session: exit 1 when it fails (a regressed
verdict, a case that fails under `--fail-on`), 2 when the comparison is refused
(docs/cli.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

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
from verdryx_core.cli.commands._settings import add_setting_arguments
from verdryx_core.conclusion import conclude
from verdryx_core.errors import CLI_FLAGS, UsageError
from verdryx_core.gating.baselines import find_baseline
from verdryx_core.runs import Baseline, EvalRun
from verdryx_core.store import Store

NAME = "drift"
HELP = (
    "compare the newest run (or --run) with a baseline; exits 1 on a regressed verdict or a "
    "failing case"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_gate_arguments(parser)
    add_setting_arguments(parser, NAME)
    parser.add_argument("--run", help="the run to judge (default: the newest complete run)")
    add_db_argument(parser)
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    with open_store(args, read_only=True) as store:
        baseline = find_baseline(args.baseline, store=store, root=Path(args.root), flags=CLI_FLAGS)
        current = _current_run(store, args, baseline)
        conclusion = conclude(
            current,
            baseline=baseline,
            policy=run_policy_from(args, NAME),
            store=store,
            keep="stored",
            flags=CLI_FLAGS,
        )
    outcome = conclusion.gate
    assert outcome is not None  # a complete run with a baseline is always gated
    if outcome.refused is not None:
        if args.json:
            print_json(
                {
                    "verdict": "refused",
                    "refused": outcome.refused,
                    "run_id": current.id,
                    "partial": current.partial,
                }
            )
        print(f"error: {outcome.refused}", file=sys.stderr)
        return exit_code(conclusion)
    if args.json:
        print_json(
            gate_document(outcome)
            | {
                "run_id": current.id,
                "partial": current.partial,
                "exit": conclusion.exit,
                "exit_reason": conclusion.exit_reason,
                "failed": list(conclusion.failed),
                "new": list(conclusion.new),
            }
        )
    else:
        print()
        print(f"  Drift of run {current.id} vs baseline {outcome.baseline}")
        for line in [*outcome_lines(outcome), *conclusion_lines(conclusion)]:
            print(f"  {line}")
        print()
    if conclusion.exit == "refused" and conclusion.exit_reason:
        print(f"error: {conclusion.exit_reason}", file=sys.stderr)
    return exit_code(conclusion)


def _newest(store: Store, sets: set[str]) -> EvalRun | None:
    # The newest complete run of the baseline's eval sets, whatever its model: judging the
    # newest run *of the baseline's model* would say ON-TRACK about an old run while the run
    # the user just made, on another model, scored 0. A model change is then refused by
    # `compare`, naming both models, unless --allow-model-change. (The newest run of another
    # suite in the same store would match nothing, so the sets must overlap.)
    for summary in store.list_runs(complete_only=True):
        if sets & set(summary.eval_set_ids):
            found = store.load_run(summary.id)
            assert found is not None  # listed a moment ago, in the same read
            return found
    return None


def _current_run(store: Store, args: argparse.Namespace, baseline: Baseline) -> EvalRun:
    if args.run:
        found = store.find_run(args.run)
        if found is None:
            raise UsageError(f"no such eval run: {args.run!r} (see `verdryx runs`)")
        if not found.complete:
            raise UsageError(
                f"eval run {found.id!r} is incomplete (interrupted, or a case errored): an "
                "incomplete run is never gated; re-run it whole"
            )
        return found
    sets = {case.eval_set_id for case in baseline.cases}
    found = _newest(store, sets)
    if found is None:
        raise UsageError(
            f"no complete eval run over eval set(s) {', '.join(sorted(sets))} in {store.path} "
            "to compare against the baseline; run them first, or name one with --run"
        )
    return found
