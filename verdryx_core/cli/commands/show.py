"""`verdryx show RUN_ID`: one stored run, case by case."""

from __future__ import annotations

import argparse
from typing import Any

from verdryx_core.cli.commands._common import (
    add_db_argument,
    add_json_argument,
    open_store,
    print_json,
)
from verdryx_core.cli.commands._table import render_table, when
from verdryx_core.errors import UsageError
from verdryx_core.reporting.breakdown import breakdown_lines, compute_breakdown
from verdryx_core.reporting.naturalsort import score_order
from verdryx_core.reporting.summary import fmt_usd, run_lines
from verdryx_core.runs import EvalRun, Score, iso_utc
from verdryx_core.untrusted.json_input import parse_json

NAME = "show"
HELP = "show one stored run (id or unique prefix) with its per-case scores"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_id", metavar="RUN_ID", help="the run id or a unique prefix of it")
    parser.add_argument(
        "--sort",
        choices=("id", "order", "score"),
        default="id",
        help="case order: by eval set and case id, numbers in natural order (default: "
        "HumanEval/18 before HumanEval/106), as collected, or lowest score first",
    )
    add_db_argument(parser)
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    with open_store(args, read_only=True) as store:
        found = store.find_run(args.run_id)
        if found is None:
            raise UsageError(
                f"no such eval run: {args.run_id!r} in {store.path}; list them with `verdryx runs`"
            )
    scores = list(found.scores)
    if args.sort == "id":
        scores.sort(key=lambda s: score_order(s.eval_set_id, s.case_id))
    elif args.sort == "score":
        # Unmeasured first: a case that could not be scored is worse news than a low score.
        scores.sort(
            key=lambda s: (
                s.value is not None,
                s.value or 0.0,
                score_order(s.eval_set_id, s.case_id),
            )
        )
    if args.json:
        print_json(show_document(found, scores))
    else:
        _print_text(found, scores)
    return 0


def show_document(run: EvalRun, scores: list[Score]) -> dict[str, Any]:
    """The `eval --json` keys (docs/cli.md) plus the run's provenance; each score
    carries what the report shows: output, expected, reason. `cost_usd` is model plus judge
    spend, as in `eval --json`."""
    return {
        "run_id": run.id,
        "eval_set_id": ",".join(run.eval_set_ids),
        "eval_set_ids": list(run.eval_set_ids),
        "model": run.model,
        "target": run.target,
        "target_version": run.target_version,
        "judge_model": run.judge_model,
        "agent_id": run.agent_id,
        "started_at": iso_utc(run.started_at),
        "finished_at": iso_utc(run.finished_at) if run.finished_at else None,
        "complete": run.complete,
        "mean_score": run.mean_score,
        "cases": len(run.measured),
        "scores": [_score(score) for score in scores if score.value is not None],
        "unmeasured": [
            {"case_id": s.case_id, "eval_set_id": s.eval_set_id, "reason": s.unmeasured}
            for s in scores
            if s.value is None
        ],
        "total_tokens": run.total_tokens,
        "total_cost_usd": run.total_cost_usd,
        "model_cost_usd": run.model_cost_usd,
        "judge_cost_usd": run.judge_cost_usd,
        "label": run.label,
        "commit": run.commit,
        "branch": run.branch,
        "ci_url": run.ci_url,
        "run_group": run.run_group,
        "partial": run.partial,
        "breakdown": compute_breakdown(run).to_dict(),
    }


def _score(score: Score) -> dict[str, Any]:
    return {
        "case_id": score.case_id,
        "eval_set_id": score.eval_set_id,
        "value": score.value,
        "grader": score.grader,
        "passed": score.passed,
        "tokens": score.tokens,
        "cost_usd": score.cost_usd + score.judge_cost_usd,
        "model_cost_usd": score.cost_usd,
        "judge_cost_usd": score.judge_cost_usd,
        "samples": list(score.samples),
        "output": structured_output(score),
        "expected": score.expected,
        "reason": score.reason,
        "checks": [check.to_dict() for check in score.checks],
    }


def structured_output(score: Score) -> Any:
    """A tool trace's stored text as the list it was: `{"name", "arguments"}` objects (stored
    as their JSON, joined), or names (stored joined by ", "); other outputs as stored."""
    text = score.output
    if score.grader != "tool_trace" or text is None or text.startswith("[transcript]\n"):
        return text  # a simulated dialogue's is its transcript (docs/scenarios.md)
    if not text.strip():
        return []
    if text.lstrip().startswith("{"):
        try:
            calls = parse_json(f"[{text}]")
        except ValueError:
            return text  # cut for length: shown as stored
        return calls if isinstance(calls, list) else text
    return text.split(", ")


def provenance_line(run: EvalRun) -> str:
    """ "label: nightly   commit: 1a2b3c4 (main)   ci: URL   partial run", as far as known."""
    parts = []
    if run.label:
        parts.append(f"label: {run.label}")
    if run.commit or run.branch:
        commit = run.commit or "?"
        parts.append(f"commit: {commit}" + (f" ({run.branch})" if run.branch else ""))
    if run.ci_url:
        parts.append(f"ci: {run.ci_url}")
    if run.partial:
        parts.append("partial run (a subset of the cases)")
    return "   ".join(parts)


def _print_text(run: EvalRun, scores: list[Score]) -> None:
    print()
    for line in run_lines(run):
        print(f"  {line}")
    sets = ", ".join(run.eval_set_ids) or "-"
    agent = f"   agent: {run.agent_id}" if run.agent_id else ""
    print(f"  started {when(run.started_at)} UTC   eval sets: {sets}{agent}")
    source = provenance_line(run)
    if source:
        print(f"  {source}")
    breakdown = compute_breakdown(run)
    if breakdown.worth_showing:
        print()
        for line in breakdown_lines(breakdown):
            print(f"  {line}")
    print()
    rows = [
        [
            "--" if score.value is None else f"{score.value:.3f}",
            {True: "pass", False: "FAIL", None: ""}[score.passed],
            score.eval_set_id,
            score.case_id,
            score.grader,
            str(score.tokens),
            fmt_usd(score.cost_usd + score.judge_cost_usd),
            _note(score),
        ]
        for score in scores
    ]
    headers = ["SCORE", "PASS", "EVAL SET", "CASE", "GRADER", "TOKENS", "COST", "NOTE"]
    for line in render_table(headers, rows, numeric={0, 5, 6}):
        print(f"  {line}")
    print()


def _note(score: Score) -> str:
    """Why a case is unmeasured, else the grader's reason; a failed case without a reason
    (exact, regex) shows what was answered, the first thing anyone asks about it."""
    if score.unmeasured:
        return score.unmeasured
    if score.reason:
        return _first_line(score.reason)
    if score.passed is False and score.output:
        return f"output: {_first_line(score.output, limit=52)!r}"
    return ""


def _first_line(text: str | None, limit: int = 60) -> str:
    if not text:
        return ""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"
