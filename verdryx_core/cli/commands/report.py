"""`verdryx report -o report.html`: the self-contained HTML report of the stored runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from verdryx_core.cli.commands._common import add_db_argument, open_store
from verdryx_core.cli.commands._settings import add_setting_arguments
from verdryx_core.errors import CLI_FLAGS
from verdryx_core.gating.baselines import find_baseline
from verdryx_core.hooks import trace_costs
from verdryx_core.reporting.html import write_report

NAME = "report"
HELP = "write a self-contained HTML report: score over runs, baseline band, cases, cost"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o", "--output", required=True, metavar="PATH", help="the HTML file to write"
    )
    parser.add_argument(
        "--run", metavar="RUN_ID", help="the run to report on (default: the newest complete run)"
    )
    parser.add_argument(
        "--eval-set", metavar="ID", help="only runs that include this eval set, and its cases"
    )
    parser.add_argument("--model", metavar="M", help="only runs of this model")
    parser.add_argument(
        "--baseline",
        metavar="L",
        help="baseline id or label (default: the newest stored baseline of the run's model)",
    )
    parser.add_argument(
        "--traces",
        metavar="DIR",
        help="TokenFuse traces (a directory of .parquet) or records (.ndjson/.csv): adds the "
        "cost-per-outcome table",
    )
    # --gate, --threshold, --min-effect: the table's.
    add_setting_arguments(parser, NAME)
    parser.add_argument(
        "--root", default=".", help="where .verdryx/baselines/ lives (default: current dir)"
    )
    add_db_argument(parser)


def run(args: argparse.Namespace) -> int:
    with open_store(args, read_only=True) as store:
        baseline = (
            find_baseline(args.baseline, store=store, root=Path(args.root), flags=CLI_FLAGS)
            if args.baseline
            else None
        )
        path = write_report(
            store,
            Path(args.output),
            run_id=args.run,
            baseline=baseline,
            eval_set_id=args.eval_set,
            model=args.model,
            traces=Path(args.traces) if args.traces else None,
            traces_costs=trace_costs(Path(args.traces)) if args.traces else (None, None),
            gate=args.gate,
            threshold=args.threshold,
            min_effect=args.min_effect,
        )
    print(f"report: {path}")
    return 0
