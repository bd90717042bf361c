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

from verdryx_core.cli.commands._common import (
    add_db_argument,
    add_json_argument,
    open_store,
    print_json,
)
from verdryx_core.errors import UsageError, VerdryxError
from verdryx_core.evalsets.load import EvalSet, load_evalset
from verdryx_core.evaluation import (
    DEFAULT_MIN_SCORE,
    CaseScorer,
    EvalSettings,
    Pipeline,
    Work,
    assemble_run,
    promises_of,
    save_run,
    start_ahead,
)
from verdryx_core.graders import GradeContext
from verdryx_core.llm.batch import check_batchable
from verdryx_core.reporting.summary import repeat_note, run_lines, unmeasured_lines
from verdryx_core.runs import EvalRun, Score
from verdryx_core.timeouts import DEFAULT_TIMEOUT_S, check_timeout

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


def _seconds(text: str) -> float:
    try:
        return check_timeout(float(text), what="--timeout")
    except (ValueError, VerdryxError) as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds") from exc


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("evalsets", nargs="+", metavar="SET", help="*.evalset.json files")
    parser.add_argument(
        "--model",
        default="stub",
        help="'stub' (default: offline, deterministic) or a real model id",
    )
    parser.add_argument(
        "--judge",
        metavar="MODEL",
        help="judge model for llm_judge cases ('stub': the offline stub judge); without it "
        "those cases are unmeasured",
    )
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
    parser.add_argument(
        "--target",
        metavar="MODULE:CALLABLE",
        help="the agent under test, called once per case and repeat (an eval set's own "
        "target wins; imported from the current folder first)",
    )
    parser.add_argument(
        "--target-version",
        metavar="VERSION",
        help="cache the target's results under this version (unset: never cached)",
    )
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"seconds any one call may take: target, model, judge (default {DEFAULT_TIMEOUT_S:g})",
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
        call_timeout=args.timeout,
        target=args.target or None,
        target_version=args.target_version or None,
        target_root=Path.cwd(),
    )


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    if settings.batch:
        check_batchable(settings.model, cache=settings.cache)
    sets, problems = _load_sets(args.evalsets)
    ids = [evalset.id for evalset in sets]
    duplicated = sorted({set_id for set_id in ids if ids.count(set_id) > 1})
    if duplicated:
        raise UsageError(
            f"eval set id {', '.join(map(repr, duplicated))} given more than once; each set "
            "is graded once per run (cases are compared by eval set id and case id)"
        )
    with open_store(args) as store:
        pipeline = Pipeline(settings, lambda: store)
        pipeline.check_target()
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
            scores, failures, interrupted = _score_each(
                scorer, work, settings.concurrency, batch=settings.batch
            )
        finally:
            tally = pipeline.finish_calls()
        # A case whose call failed, a file that did not load, or a Ctrl-C leaves the run
        # incomplete: stored (with every answer already paid for, so a re-run pays only for
        # the rest), never gated on or saved as a baseline.
        run = assemble_run(
            run_id=run_id,
            settings=settings,
            started_at=started,
            scores=scores,
            complete=not failures and not problems and not interrupted,
            eval_set_ids=ids,
        )
        save_run(
            store,
            run,
            cache_entries=tally.take_entries(),
            promises=promises_of((evalset.id, case) for evalset in sets for case in evalset.cases),
        )
    if interrupted:
        print(
            f"error: interrupted; {len(scores)} of {len(work)} cases scored, stored as "
            f"incomplete run {run.id} in {store.path}",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    errors = [*problems, *failures]
    for line in errors:
        print(f"error: {line}", file=sys.stderr)
    if args.json:
        print_json(eval_document(run) | {"complete": run.complete, "errors": errors})
    else:
        live = sum(1 for entry in work if entry.case.needs_model)
        note = repeat_note(settings.repeat, live)
        _print_text(run, store.path, problems=problems, failures=failures, note=note)
    return EXIT_UNREADABLE if problems else (EXIT_INCOMPLETE if failures else 0)


#: docs/cli.md, exit codes: an unreadable eval set is exit 2 (the others are still graded),
#: a case whose call failed exit 1 (the run is stored as incomplete).
EXIT_UNREADABLE = 2
EXIT_INCOMPLETE = 1
#: A Ctrl-C, as for every command (the run is stored as incomplete).
EXIT_INTERRUPTED = 130


def _load_sets(paths: list[str]) -> tuple[list[EvalSet], list[str]]:
    """The eval sets that load, and one line for each that does not; none loading at all is
    the first file's error."""
    sets: list[EvalSet] = []
    problems: list[VerdryxError] = []
    for path in paths:
        try:
            sets.append(load_evalset(Path(path)))
        except VerdryxError as exc:
            problems.append(exc)
    if not sets:
        raise problems[0]
    return sets, [f"{exc} (not graded)" for exc in problems]


def _score_each(
    scorer: CaseScorer, work: list[Work], concurrency: int, *, batch: bool = False
) -> tuple[list[Score], list[str], bool]:
    """Every case scored in order, remote ones ahead (as Message Batches first with `batch`);
    a case whose call fails is one line naming it, and the others are still scored. On a
    Ctrl-C, the cases whose calls had ended, and True."""
    ahead = start_ahead(scorer, work, concurrency=concurrency, stream=sys.stderr, batch=batch)
    try:
        ahead.wait()  # aborts what is in flight on a Ctrl-C
    except KeyboardInterrupt:
        ended = ahead.scores()
        return [ended[entry.key] for entry in work if entry.key in ended], [], True
    ahead.finish()
    scores: list[Score] = []
    failures: list[str] = []
    for entry in work:
        try:
            if entry.key in ahead.futures:
                scores.append(ahead.futures[entry.key].result())
            else:
                scores.append(scorer.score(entry.case, entry.context))
        except VerdryxError as exc:
            key = f"{entry.context.eval_set_id}::{entry.case.id}"
            failures.append(f"case {key}: {exc}")
    return scores, failures, False


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


def _print_text(
    run: EvalRun, db: str, *, problems: list[str], failures: list[str], note: str | None = None
) -> None:
    print()
    for line in run_lines(run):
        print(f"  {line}")
    if note:
        print(f"  {note}")
    if not run.complete:
        why = []
        if problems:
            why.append(f"{len(problems)} eval set file(s) not graded")
        if failures:
            why.append(f"{len(failures)} case(s) failed to score")
        print(f"  INCOMPLETE run: {', '.join(why)} (see the errors above); not a baseline")
    print(f"  stored in {db}{' as incomplete' if not run.complete else ''}")
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
