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
from verdryx_core.gating.compare import GateOutcome, compare
from verdryx_core.gating.stored import compare_stored
from verdryx_core.runs import Baseline, EvalRun
from verdryx_core.store import RunSummary, Store, StoreRowError

NAME = "drift"
HELP = "compare the newest run (or --run) with a baseline; exits 1 on a regressed verdict"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_gate_arguments(parser, window=True)
    parser.add_argument("--run", help="the run to judge (default: the newest complete run)")
    add_db_argument(parser)
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    with open_store(args, read_only=True) as store:
        judged = _from_arrays(store, args)
        if judged is None:
            # Committed baseline files and their schema: read only when the store has none.
            from verdryx_core.gating.baselines import find_baseline

            baseline = find_baseline(args.baseline, store=store, root=Path(args.root))
            current = _current_run(store, args, baseline)
            judged = current.id, compare(current, baseline, gate=policy_from(args), history=store)
    run_id, outcome = judged
    if outcome.refused is not None:
        if args.json:
            print_json({"verdict": "refused", "refused": outcome.refused, "run_id": run_id})
        print(f"error: {outcome.refused}", file=sys.stderr)
        return exit_code(outcome)
    if args.json:
        print_json(gate_document(outcome) | {"run_id": run_id})
    else:
        print()
        print(f"  Drift of run {run_id} vs baseline {outcome.baseline}")
        for line in outcome_lines(outcome):
            print(f"  {line}")
        print()
    return exit_code(outcome)


def _from_arrays(store: Store, args: argparse.Namespace) -> tuple[str, GateOutcome] | None:
    """The gate from the store's arrays, without reading either side's rows as objects
    (`compare_stored`); None when only the objects can answer it or say what is wrong (a
    committed baseline file, an unknown or unreadable run, a row that is not plain)."""
    baseline = store.get_baseline(args.baseline, cases=False)
    sets = None if baseline is None else store.baseline_eval_sets(baseline.id)
    if baseline is None or sets is None:
        return None
    if args.run:
        run_id = store.run_id_for(args.run)
        unreadable: list[StoreRowError] = []  # named by the objects' path, if it is this one
        runs = [summary for summary in store.list_runs(broken=unreadable) if summary.id == run_id]
    else:
        runs = _newest(store, sets)
    if not runs:
        return None
    outcome = compare_stored(store, runs[0], baseline, gate=policy_from(args), deltas=not args.json)
    return None if outcome is None else (runs[0].id, outcome)


def _newest(store: Store, sets: set[str]) -> list[RunSummary]:
    # The newest complete run of the baseline's eval sets, whatever its model: judging the
    # newest run *of the baseline's model* would say ON-TRACK about an old run while the run
    # the user just made, on another model, scored 0. A model change is then refused by
    # `compare`, naming both models, unless --allow-model-change. (The newest run of another
    # suite in the same store would match nothing, so the sets must overlap.)
    return [
        summary
        for summary in store.list_runs(complete_only=True)
        if sets & set(summary.eval_set_ids)
    ]


def _current_run(store: Store, args: argparse.Namespace, baseline: Baseline) -> EvalRun:
    if args.run:
        found = store.find_run(args.run)
        if found is None:
            raise UsageError(f"no such eval run: {args.run!r} (see `verdryx runs`)")
        return found
    sets = {case.eval_set_id for case in baseline.cases}
    newest = _newest(store, sets)
    if not newest:
        raise UsageError(
            f"no complete eval run over eval set(s) {', '.join(sorted(sets))} in {store.path} "
            "to compare against the baseline; run them first, or name one with --run"
        )
    found = store.load_run(newest[0].id)
    assert found is not None
    return found
