"""`verdryx eval SET... --model M`: grade eval sets outside pytest, store the run, print it."""

from __future__ import annotations

import argparse
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from verdryx_core import __version__
from verdryx_core.commands._common import add_db_argument, add_json_argument, open_store, print_json
from verdryx_core.contracts.history import promise_of, verdict_rows
from verdryx_core.errors import UsageError
from verdryx_core.evalset import EvalSet, load_evalset
from verdryx_core.graders import GradeContext, build_graders
from verdryx_core.model import EvalRun, Score, case_key
from verdryx_core.runner import CaseEvaluator, is_remote
from verdryx_core.summary import run_lines, unmeasured_lines

NAME = "eval"
HELP = "grade eval sets against a model, store the run, print the scores"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("evalsets", nargs="+", metavar="SET", help="*.evalset.json files")
    parser.add_argument(
        "--model",
        default="stub",
        help="'stub' (default: offline, deterministic) or a real model id",
    )
    parser.add_argument("--judge", metavar="MODEL", help="judge model for llm_judge cases")
    parser.add_argument("--agent-id", help="the agent this run measures (for SLO joins)")
    parser.add_argument(
        "--concurrency", type=int, default=8, help="model calls in flight (default 8)"
    )
    parser.add_argument(
        "--cache", choices=("on", "off", "replay"), default="on", help="model cache (default on)"
    )
    parser.add_argument(
        "--min-score", type=float, default=0.5, help="pass bar for cases without one (0.5)"
    )
    add_db_argument(parser)
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    sets = [load_evalset(Path(path)) for path in args.evalsets]
    ids = [evalset.id for evalset in sets]
    duplicated = sorted({set_id for set_id in ids if ids.count(set_id) > 1})
    if duplicated:
        raise UsageError(
            f"eval set id {', '.join(map(repr, duplicated))} given more than once; each set "
            "is graded once per run (cases are compared by eval set id and case id)"
        )
    with open_store(args) as store:
        evaluator, flush = _evaluator(args, sets, store)
        run_id = str(uuid.uuid4())
        started = datetime.now(UTC)
        scores = _evaluate(evaluator, sets, run_id, args.concurrency)
        flush()
        judge_model = _judge_name(args) if any(s.grader == "llm_judge" for s in scores) else None
        run = EvalRun(
            id=run_id,
            model=args.model,
            judge_model=judge_model,
            agent_id=args.agent_id or None,
            started_at=started,
            finished_at=datetime.now(UTC),
            eval_set_ids=tuple(sorted({s.id for s in sets})),
            scores=tuple(scores),
            complete=True,
            plugin_version=__version__,
        )
        store.save_run(run)
        promises = {
            case_key(evalset.id, case.id): promise_of(case)
            for evalset in sets
            for case in evalset.cases
            if case.grader == "contract"
        }
        rows = verdict_rows(run, promises)
        if rows:
            store.save_contract_verdicts(rows)
    if args.json:
        print_json(eval_document(run))
    else:
        _print_text(run, store.path)
    return 0


def eval_document(run: EvalRun) -> dict[str, Any]:
    """docs/cli.md, `eval`."""
    return {
        "run_id": run.id,
        "eval_set_id": ",".join(run.eval_set_ids),
        "eval_set_ids": list(run.eval_set_ids),
        "model": run.model,
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
        "total_tokens": run.total_tokens,
        "total_cost_usd": run.total_cost_usd,
        "model_cost_usd": run.model_cost_usd,
        "judge_cost_usd": run.judge_cost_usd,
    }


def _judge_name(args: argparse.Namespace) -> str | None:
    if args.judge:
        return args.judge
    return "stub" if args.model == "stub" else None


def _evaluator(
    args: argparse.Namespace, sets: list[EvalSet], store: Any
) -> tuple[CaseEvaluator, Any]:
    cases = [case for evalset in sets for case in evalset.cases]
    needs_model = any(case.needs_model for case in cases)
    judge_name = _judge_name(args)
    needs_judge = judge_name is not None and any(case.grader == "llm_judge" for case in cases)
    adapter = judge = None
    flushes = []
    if needs_model or needs_judge:
        from verdryx_core.llm import CachedAdapter, make_adapter

        if needs_model:
            adapter = CachedAdapter(make_adapter(args.model), store, args.cache)
            flushes.append(adapter.flush)
        if needs_judge:
            judge = CachedAdapter(make_adapter(judge_name), store, args.cache)
            flushes.append(judge.flush)
    graders = build_graders(judge=judge)
    evaluator = CaseEvaluator(graders=graders, adapter=adapter, min_score=args.min_score)

    def flush() -> None:
        for step in flushes:
            step()

    return evaluator, flush


def _evaluate(
    evaluator: CaseEvaluator, sets: list[EvalSet], run_id: str, concurrency: int
) -> list[Score]:
    work = [
        (case, GradeContext(eval_set_id=s.id, eval_set_path=s.path, run_id=run_id))
        for s in sets
        for case in s.cases
    ]
    remote = [item for item in work if is_remote(item[0], evaluator.graders)]
    futures: dict[int, Any] = {}
    pool = None
    if remote:
        from verdryx_core.llm import CallPool
        from verdryx_core.llm.progress import Progress

        pool = CallPool(concurrency, progress=Progress(len(remote), stream=sys.stderr))
        futures = evaluator.prefetch(work, pool.submit)
    try:
        return [
            futures[index].result() if index in futures else evaluator.evaluate(case, context)
            for index, (case, context) in enumerate(work)
        ]
    finally:
        if pool is not None:
            pool.close()


def _print_text(run: EvalRun, db: str) -> None:
    print()
    for line in run_lines(run):
        print(f"  {line}")
    print(f"  stored in {db}")
    print()
    for score in run.scores:
        value = "  -- " if score.value is None else f"{score.value:.2f}"
        mark = "" if score.passed is None else (" pass" if score.passed else " FAIL")
        print(f"  [{value}]{mark:5} {score.key}")
    if run.unmeasured:
        print()
        print("  unmeasured:")
        for line in unmeasured_lines(run.unmeasured):
            print(line)
    print()
