"""`verdryx drift --baseline ID_OR_LABEL`: judge the newest run against a baseline; exit 1
on `regressed`, 2 when the comparison is refused (docs/cli.md)."""

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
    exit_code,
    gate_document,
    outcome_lines,
    policy_from,
)
from verdryx_core.errors import UsageError
from verdryx_core.gating.baselines import find_baseline
from verdryx_core.gating.compare import compare
from verdryx_core.runs import Baseline, EvalRun
from verdryx_core.store import Store

NAME = "drift"
HELP = "compare the newest run (or --run) with a baseline; exits 1 on a regressed verdict"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_gate_arguments(parser, window=True)
    parser.add_argument("--run", help="the run to judge (default: the newest complete run)")
    add_db_argument(parser)
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    with open_store(args, read_only=True) as store:
        baseline = find_baseline(args.baseline, store=store, root=Path(args.root))
        current = _current_run(store, args, baseline)
        outcome = compare(current, baseline, gate=policy_from(args), history=store)
    if outcome.refused is not None:
        if args.json:
            print_json({"verdict": "refused", "refused": outcome.refused, "run_id": current.id})
        print(f"error: {outcome.refused}", file=sys.stderr)
        return exit_code(outcome)
    if args.json:
        print_json(gate_document(outcome) | {"run_id": current.id})
    else:
        print()
        print(f"  Drift of run {current.id} vs baseline {outcome.baseline}")
        for line in outcome_lines(outcome):
            print(f"  {line}")
        print()
    return exit_code(outcome)


def _current_run(store: Store, args: argparse.Namespace, baseline: Baseline) -> EvalRun:
    if args.run:
        found = store.find_run(args.run)
        if found is None:
            raise UsageError(f"no such eval run: {args.run!r} (see `verdryx runs`)")
        return found
    # The newest complete run of the baseline's eval sets, whatever its model: judging the
    # newest run *of the baseline's model* would say ON-TRACK about an old run while the run
    # the user just made, on another model, scored 0. A model change is then refused by
    # `compare`, naming both models, unless --allow-model-change. (The newest run of another
    # suite in the same store would match nothing, so the sets must overlap.)
    sets = {case.eval_set_id for case in baseline.cases}
    newest = [
        summary
        for summary in store.list_runs(complete_only=True)
        if sets & set(summary.eval_set_ids)
    ]
    if not newest:
        raise UsageError(
            f"no complete eval run over eval set(s) {', '.join(sorted(sets))} in {store.path} "
            "to compare against the baseline; run them first, or name one with --run"
        )
    found = store.load_run(newest[0].id)
    assert found is not None
    return found
