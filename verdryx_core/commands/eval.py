"""`verdryx eval SET... --model M`: grade eval sets outside pytest, store the run, print it.

Argument parsing and printing only: the evaluation itself is `verdryx_core.evaluation`, the
same pipeline the pytest plugin drives.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from verdryx_core.commands._common import add_db_argument, add_json_argument, open_store, print_json
from verdryx_core.errors import UsageError
from verdryx_core.evalset import load_evalset
from verdryx_core.evaluation import (
    DEFAULT_MIN_SCORE,
    EvalSettings,
    Pipeline,
    Work,
    assemble_run,
    promises_of,
    save_run,
    score_all,
)
from verdryx_core.graders import GradeContext
from verdryx_core.llm.batch import check_batchable
from verdryx_core.model import EvalRun
from verdryx_core.summary import run_lines, unmeasured_lines

NAME = "eval"
HELP = "grade eval sets against a model, store the run, print the scores"


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is below the minimum 1")
    return value


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
        "--concurrency", type=_positive, default=8, help="model calls in flight (default 8)"
    )
    parser.add_argument(
        "--cache", choices=("on", "off", "replay"), default="on", help="model cache (default on)"
    )
    parser.add_argument(
        "--min-score",
        type=float,
        default=None,
        help="pass bar for cases without one (default: the grader's own bar, 1.0 for "
        f"tool_trace, else {DEFAULT_MIN_SCORE})",
    )
    parser.add_argument(
        "--repeat",
        type=_positive,
        default=1,
        metavar="N",
        help="sample every model case N times; its score is the mean (default 1)",
    )
    parser.add_argument(
        "--prices",
        metavar="FILE",
        help="JSON price file overriding the built-in price book (model -> $ per million tokens)",
    )
    parser.add_argument(
        "--typed-url", metavar="URL", help="typed verdict service URL; enables typed cases"
    )
    parser.add_argument(
        "--typed-key-file",
        metavar="PATH",
        help="file holding the typed service key (default $VERDRYX_TYPRYX_KEY_FILE)",
    )
    parser.add_argument(
        "--typed-template",
        metavar="ID",
        default="eval.outcome_met",
        help="typed verdict template (default eval.outcome_met)",
    )
    parser.add_argument(
        "--batch",
        action="store_true",
        help="send the model and judge calls as Anthropic Message Batches: half price, "
        "answers within the hour rather than seconds (docs/sharding.md)",
    )
    add_db_argument(parser)
    add_json_argument(parser)


def settings_from(args: argparse.Namespace) -> EvalSettings:
    return EvalSettings(
        model=args.model,
        judge=args.judge or None,
        cache=args.cache,
        concurrency=args.concurrency,
        repeat=args.repeat,
        prices=Path(args.prices) if args.prices else None,
        typed_url=args.typed_url or None,
        typed_key_file=args.typed_key_file or os.environ.get("VERDRYX_TYPRYX_KEY_FILE") or None,
        typed_template=args.typed_template,
        min_score=args.min_score,
        agent_id=args.agent_id or None,
        batch=args.batch,
    )


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    if settings.batch:
        check_batchable(settings.model, cache=settings.cache)
    sets = [load_evalset(Path(path)) for path in args.evalsets]
    ids = [evalset.id for evalset in sets]
    duplicated = sorted({set_id for set_id in ids if ids.count(set_id) > 1})
    if duplicated:
        raise UsageError(
            f"eval set id {', '.join(map(repr, duplicated))} given more than once; each set "
            "is graded once per run (cases are compared by eval set id and case id)"
        )
    with open_store(args) as store:
        pipeline = Pipeline(settings, lambda: store)
        run_id = str(uuid.uuid4())
        started = datetime.now(UTC)
        work = [
            Work(
                str(index),
                case,
                GradeContext(eval_set_id=evalset.id, eval_set_path=evalset.path, run_id=run_id),
            )
            for index, (evalset, case) in enumerate(
                (evalset, case) for evalset in sets for case in evalset.cases
            )
        ]
        scorer = pipeline.scorer([entry.case for entry in work])
        try:
            scores = score_all(
                scorer,
                work,
                concurrency=settings.concurrency,
                stream=sys.stderr,
                batch=settings.batch,
            )
        finally:
            tally = pipeline.finish_calls()
        run = assemble_run(
            run_id=run_id,
            settings=settings,
            started_at=started,
            scores=scores,
            complete=True,
            eval_set_ids=ids,
        )
        save_run(
            store,
            run,
            cache_entries=tally.take_entries(),
            promises=promises_of((evalset.id, case) for evalset in sets for case in evalset.cases),
        )
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
