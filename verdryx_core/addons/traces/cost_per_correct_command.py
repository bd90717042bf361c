"""`verdryx cost-per-correct (--input FILE | --traces DIR) [--json]`: dollars per outcome."""

from __future__ import annotations

import argparse

from verdryx_core.addons.traces import ABANDONED, RESOLVED, CostPerOutcomeReport, cost_report_for
from verdryx_core.cli.commands._common import add_json_argument, print_json
from verdryx_core.untrusted.text import printable

NAME = "cost-per-correct"
HELP = "count, total and mean cost per outcome tag, and what one resolved case really costs"

_RULE = "  " + "-" * 52


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--input",
        metavar="FILE",
        help="per-run records: .ndjson/.jsonl/.csv with outcome and cost_usd, or a .parquet trace",
    )
    source.add_argument(
        "--traces",
        metavar="DIR",
        help="a TokenFuse trace: a directory of calls-*.parquet segments (or one .parquet file)",
    )
    parser.add_argument(
        "--resolved",
        default=RESOLVED,
        metavar="TAG",
        help=f"the tag of a resolved case, for the headline (default: {RESOLVED})",
    )
    parser.add_argument(
        "--abandoned",
        default=ABANDONED,
        metavar="TAG",
        help=f"the tag of an abandoned case, for the headline (default: {ABANDONED})",
    )
    add_json_argument(parser)


def _row(tag: str, count: int, total: float, mean: float) -> str:
    # A tag is a trace's value: made printable and one line (untrusted/text.py) before it is
    # padded, so a newline in it cannot start a row of its own.
    return f"  {_shown(tag):<20} {count:>6} ${total:>10.2f} ${mean:>8.4f}"


def _shown(text: str) -> str:
    return printable(text, keep_newlines=False)


def render(report: CostPerOutcomeReport, source: str, *, resolved: str, abandoned: str) -> str:
    source, resolved, abandoned = _shown(source), _shown(resolved), _shown(abandoned)
    lines = ["", f"Cost per outcome -- {source}", ""]
    lines.append(f"  {'OUTCOME':<20} {'COUNT':>6} {'TOTAL':>11} {'MEAN':>9}")
    for row in report.ordered():
        lines.append(_row(row.outcome, row.count, row.total_cost_usd, row.mean_cost_usd))
    lines.append(_RULE)
    overall = report.overall
    lines.append(_row("overall", overall.count, overall.total_cost_usd, overall.mean_cost_usd))
    lines.append("")
    head = report.headline(resolved=resolved, abandoned=abandoned)
    if head.usd_per_resolved is None:
        lines.append(
            f"  no run was tagged '{resolved}': a resolved case cannot be priced from this input"
        )
    else:
        lines.append(
            f"  ${head.usd_per_resolved:.4f} per resolved case "
            f"(all ${overall.total_cost_usd:.2f} of spend over "
            f"{head.resolved_runs} {resolved} run{'' if head.resolved_runs == 1 else 's'})"
        )
    share = "" if head.abandoned_share is None else f" ({head.abandoned_share:.1%} of spend)"
    runs = "run" if head.abandoned_runs == 1 else "runs"
    lines.append(
        f"  ${head.abandoned_usd:.2f}{share} went to {head.abandoned_runs} {abandoned} {runs}"
    )
    lines.append("")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    source = args.input if args.input is not None else args.traces
    report = cost_report_for(source)
    if args.json:
        document = report.to_dict(resolved=args.resolved, abandoned=args.abandoned)
        print_json({"source": str(source), **document})
    else:
        print(render(report, str(source), resolved=args.resolved, abandoned=args.abandoned))
    return 0
