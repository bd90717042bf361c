"""`verdryx drift --baseline ID_OR_LABEL`: judge the newest run against a baseline; exit 1
on `regressed`."""

from __future__ import annotations

import argparse
from pathlib import Path

from verdryx_core.cli.commands._common import (
    add_db_argument,
    add_json_argument,
    open_store,
    print_json,
)
from verdryx_core.errors import UsageError
from verdryx_core.gating.baselines import find_baseline
from verdryx_core.gating.comparison import compare_to_baseline, select_window
from verdryx_core.gating.drift import DEFAULT_THRESHOLD, GATES
from verdryx_core.reporting.summary import gate_lines
from verdryx_core.runs import Baseline, EvalRun
from verdryx_core.store import Store

NAME = "drift"
HELP = "compare the newest run (or --run) with a baseline; exits 1 on a regressed verdict"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--baseline", required=True, help="baseline id or label")
    parser.add_argument("--run", help="the run to judge (default: the newest complete run)")
    parser.add_argument("--window", type=int, default=1, help="pool N runs (default 1)")
    parser.add_argument("--gate", choices=GATES, default="significant", help="verdict rule")
    parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD)
    parser.add_argument("--min-effect", type=float, default=0.0)
    parser.add_argument("--allow-model-change", action="store_true")
    parser.add_argument(
        "--root", default=".", help="where .verdryx/baselines/ lives (default: current dir)"
    )
    add_db_argument(parser)
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    with open_store(args, read_only=True) as store:
        baseline = find_baseline(args.baseline, store=store, root=Path(args.root))
        current = _current_run(store, args, baseline)
        window = select_window(store, current, args.window)
        result = compare_to_baseline(
            window,
            baseline,
            gate=args.gate,
            threshold=args.threshold,
            min_effect=args.min_effect,
            allow_model_change=args.allow_model_change,
        )
    if args.json:
        document = result.report.to_dict() if result.report else {"verdict": None}
        document |= {
            "run_id": current.id,
            "matched": result.matched,
            "added": list(result.added),
            "removed": list(result.removed),
            "changed": list(result.changed),
            "note": result.note,
        }
        print_json(document)
    else:
        print()
        print(f"  Drift of run {current.id} vs baseline {baseline.label or baseline.id}")
        for line in gate_lines(result):
            print(f"  {line}")
        print()
    return 1 if result.regressed else 0


def _current_run(store: Store, args: argparse.Namespace, baseline: Baseline) -> EvalRun:
    if args.run:
        found = store.find_run(args.run)
        if found is None:
            raise UsageError(f"no such eval run: {args.run!r} (see `verdryx runs`)")
        return found
    # The newest complete run of the baseline's eval sets, whatever its model: judging the
    # newest run *of the baseline's model* would say ON-TRACK about an old run while the run
    # the user just made, on another model, scored 0. A model change is then refused by
    # `compare_to_baseline`, naming both models, unless --allow-model-change. (The newest run
    # of another suite in the same store would match nothing, so the sets must overlap.)
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
