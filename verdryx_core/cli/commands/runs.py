"""`verdryx runs`: the stored runs, newest first, each with its verdict against a baseline."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from verdryx_core.cli.commands._common import (
    add_db_argument,
    add_json_argument,
    open_store,
    print_json,
)
from verdryx_core.cli.commands._table import render_table, short_id, when
from verdryx_core.errors import CLI_FLAGS, UsageError
from verdryx_core.gating.baselines import find_baseline
from verdryx_core.gating.comparison import compare_to_baseline
from verdryx_core.gating.set_targets import target_differences
from verdryx_core.hooks import AgentHistory, agent_history
from verdryx_core.reporting.summary import fmt_score
from verdryx_core.runs import Baseline
from verdryx_core.store import RunSummary, Store
from verdryx_core.store.rows import StoreRowError

NAME = "runs"
HELP = "list stored runs, newest first, with each run's verdict against the default baseline"

_SETS_WIDTH = 32
#: docs/cli.md, exit codes: unreadable input (here a stored row); the other runs are listed.
EXIT_UNREADABLE = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--limit", type=int, default=20, metavar="N", help="show the N newest runs (default 20)"
    )
    parser.add_argument("--model", metavar="M", help="only runs of this model")
    parser.add_argument(
        "--all",
        action="store_true",
        help="also list partial runs (a -k subset, an --lf rerun), hidden by default",
    )
    parser.add_argument(
        "--agent",
        metavar="AGENT",
        help="only runs of this agent id, followed by the agent's contract verdicts",
    )
    parser.add_argument(
        "--baseline",
        metavar="L",
        help="judge runs against this baseline id or label (default: the newest stored one)",
    )
    parser.add_argument(
        "--root", default=".", help="where .verdryx/baselines/ lives (default: current dir)"
    )
    add_db_argument(parser)
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    if args.limit < 1:
        raise UsageError(f"--limit {args.limit} is not a positive number of runs; try --limit 20")
    # A run whose rows cannot be read back is named, with its repair, and the others are
    # still listed (docs/store.md, "Rows that cannot be read").
    broken: list[StoreRowError] = []
    with open_store(args, read_only=True) as store:
        try:
            baseline = _baseline(store, args)
        except StoreRowError as unreadable:  # judged against nothing, and named below
            broken.append(unreadable)
            baseline = None
        summaries = store.list_runs(
            model=args.model,
            agent_id=args.agent,
            limit=None if not args.all else args.limit,
            broken=broken,
        )
        if not args.all:  # a partial run measured a subset: not a point of the history
            summaries = [summary for summary in summaries if not summary.partial][: args.limit]
        rows = [run_row(store, summary, baseline, broken=broken) for summary in summaries]
        # What the add-ons keep of the agent (the contracts' verdicts): verdryx_core.hooks.
        histories = agent_history(store, args.agent) if args.agent else []
    if args.json:
        document: dict[str, Any] = {
            "runs": rows,
            "baseline": None
            if baseline is None
            else {"id": baseline.id, "label": baseline.label, "mean": baseline.mean},
        }
        if broken:  # only then: a store that reads whole keeps its document as it was
            document["unreadable"] = [
                {"run_id": item.run_id, "error": str(item)} for item in broken
            ]
        for history in histories:
            document[history.key] = history.rows
        print_json(document)
    else:
        _print_text(store.path, rows, baseline, args, histories)
    for item in broken:
        print(f"error: {item}", file=sys.stderr)
    return EXIT_UNREADABLE if broken else 0


def run_row(
    store: Store,
    summary: RunSummary,
    baseline: Baseline | None,
    *,
    broken: list[StoreRowError] | None = None,
) -> dict[str, Any]:
    """One `runs --json` entry: docs/cli.md keys plus the verdict and why it is null. A run
    whose scores cannot be read back has no verdict; its error goes to `broken` when given
    (else it is raised)."""
    try:
        verdict, note, inconclusive = _verdict(store, summary, baseline)
    except StoreRowError as exc:
        if broken is None:
            raise
        broken.append(exc)
        verdict, note, inconclusive = None, "unreadable: see the error below", None
    return {
        "run_id": summary.id,
        "eval_set_ids": list(summary.eval_set_ids),
        "model": summary.model,
        "target": summary.target,
        "target_version": summary.target_version,
        "cases": summary.cases,
        "unmeasured": summary.unmeasured,
        "mean_score": summary.mean_score,
        "started_at": summary.to_dict()["started_at"],
        "complete": summary.complete,
        "agent_id": summary.agent_id,
        "total_tokens": summary.total_tokens,
        "total_cost_usd": summary.model_cost_usd + summary.judge_cost_usd,
        # The cost of quality apart: what the agent's model spent and what grading it cost.
        "model_cost_usd": summary.model_cost_usd,
        "judge_cost_usd": summary.judge_cost_usd,
        # Provenance (docs/ci.md): where the run came from, and whether it was a subset.
        "label": summary.label,
        "commit": summary.commit,
        "branch": summary.branch,
        "ci_url": summary.ci_url,
        "partial": summary.partial,
        "verdict": verdict,
        "verdict_note": note,
        # On-track only because the drop cannot yet be told from chance (null: no verdict).
        "inconclusive": inconclusive,
    }


def source_text(row: dict[str, Any]) -> str:
    """Label, branch@commit and "partial", as far as known: "nightly main@1a2b3c4d"."""
    parts = [row["label"]] if row.get("label") else []
    commit = (row.get("commit") or "")[:8]
    branch = row.get("branch") or ""
    if branch or commit:
        parts.append(f"{branch}@{commit}" if branch and commit else branch or commit)
    if row.get("partial"):
        parts.append("partial")
    return " ".join(parts)


def _baseline(store: Store, args: argparse.Namespace) -> Baseline | None:
    if args.baseline:
        return find_baseline(args.baseline, store=store, root=Path(args.root), flags=CLI_FLAGS)
    newest = store.list_baselines()
    return store.get_baseline(newest[0][0]) if newest else None


def _verdict(
    store: Store, summary: RunSummary, baseline: Baseline | None
) -> tuple[str | None, str | None, bool | None]:
    """The verdict `verdryx drift --run ID` would give (window 1, default gate), or why none,
    and whether it is an inconclusive drop."""
    if baseline is None:
        return None, "no baseline", None
    if not summary.complete:
        return None, "incomplete run: not gated", None
    if summary.model != baseline.model:
        return None, f"other model than the baseline's ({baseline.model})", None
    run = store.load_run(summary.id)
    if run is None:  # replaced or deleted since it was listed
        return None, "run no longer stored", None
    if target_differences(run, baseline):
        return None, f"other target than the baseline's ({baseline.target or 'none'})", None
    result = compare_to_baseline([run], baseline)
    if result.stats is None:
        return None, "no case in common with the baseline", None
    return result.stats.verdict, None, result.stats.inconclusive


def _print_text(
    db: str,
    rows: list[dict[str, Any]],
    baseline: Baseline | None,
    args: argparse.Namespace,
    histories: list[AgentHistory],
) -> None:
    if not rows:
        which = f" of agent {args.agent!r}" if args.agent else ""
        print(f"no runs{which} stored in {db}")
    else:
        table = [
            [
                short_id(row["run_id"]),
                when(row["started_at"]),
                _sets(row["eval_set_ids"]),
                _produced_by(row),
                str(row["cases"])
                + (f" +{row['unmeasured']} unmeasured" if row["unmeasured"] else ""),
                fmt_score(row["mean_score"]),
                _verdict_text(row),
                source_text(row),
            ]
            for row in rows
        ]
        headers = ["ID", "WHEN (UTC)", "EVAL SETS", "MODEL", "CASES", "MEAN", "VERDICT", "SOURCE"]
        # MODEL says what produced the outputs: the agent under test when there was one.
        for line in render_table(headers, table, numeric={4, 5}):
            print(line)
        if baseline is not None:
            print()
            print(
                f"verdicts against baseline {baseline.label or baseline.id} "
                f"(mean {baseline.mean:.3f}, run {short_id(baseline.run_id)}, "
                "default gate, window 1)"
            )
        else:
            print()
            print("no baseline stored: save one with `verdryx baseline RUN_ID --label v1`")
    for history in histories:
        print()
        for line in history.lines:
            print(line)


def _sets(eval_set_ids: list[str]) -> str:
    text = ",".join(eval_set_ids) or "-"
    return text if len(text) <= _SETS_WIDTH else text[: _SETS_WIDTH - 1] + "…"


def _verdict_text(row: dict[str, Any]) -> str:
    if row["verdict"] is not None:
        if row["verdict"] == "regressed":
            return "REGRESSED"
        # As the report's amber title: a visible drop nobody should read as all clear.
        return "on-track (inconclusive drop)" if row.get("inconclusive") else str(row["verdict"])
    note = row["verdict_note"] or ""
    if note.startswith("incomplete"):
        return "incomplete"
    if note.startswith("other model"):
        return "- (other model)"
    if note.startswith("no case"):
        return "- (no match)"
    if note.startswith("unreadable"):
        return "UNREADABLE"
    return "-"


def _produced_by(row: dict[str, Any]) -> str:
    """The target (with its version) when the run had one, else the model."""
    if row.get("target"):
        version = f"@{row['target_version']}" if row.get("target_version") else ""
        return f"{row['target']}{version}"
    return str(row["model"])
