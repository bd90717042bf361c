"""`verdryx judge-agreement (--run ID | --db PATH) --labels PATH... [--evalset FILE...]`: how
well a run's judge agrees with the human labels (the files', and the cases' `human_label`):
n, agreement, kappa with its interval, TPR, TNR, the confusion matrix and the disagreements,
overall and per judge fingerprint (docs/cli.md, docs/calibrating-the-judge.md)."""

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
from verdryx_core.evalsets.load import load_evalsets
from verdryx_core.judge.calibration.figures import save_figures
from verdryx_core.judge.calibration.judge_check import check_judge, summary_lines
from verdryx_core.judge.calibration.labels import case_labels, read_labels
from verdryx_core.runs import EvalRun
from verdryx_core.store import Store
from verdryx_core.untrusted.text import printable

NAME = "judge-agreement"
HELP = "how well a run's LLM judge agrees with human labels (kappa, TPR, TNR, disagreements)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--run", metavar="ID", help="the stored run (an id prefix; default: the newest run)"
    )
    parser.add_argument(
        "--labels",
        metavar="PATH",
        nargs="+",
        default=[],
        type=Path,
        help="labels files (*.labels.jsonl), or folders of them",
    )
    parser.add_argument(
        "--evalset",
        metavar="PATH",
        nargs="+",
        default=[],
        type=Path,
        dest="evalsets",
        help=(
            "eval set files (or folders of them) whose cases carry a human_label of their "
            "recorded output"
        ),
    )
    parser.add_argument(
        "--save",
        action="store_true",
        help="keep each judge's figure in the store, for the judge-drift check of later runs",
    )
    add_db_argument(parser)
    add_json_argument(parser)


def _run(store: Store, prefix: str | None) -> EvalRun:
    if prefix is None:
        newest = store.list_runs(limit=1)
        if not newest:
            raise UsageError("the store holds no run (run `verdryx eval` or pytest first)")
        prefix = newest[0].id
    found = store.find_run(prefix)
    if found is None:
        raise UsageError(f"no such eval run: {prefix!r} (see `verdryx runs`)")
    return found


def run(args: argparse.Namespace) -> int:
    if not args.labels and not args.evalsets:
        raise UsageError("no labels: pass --labels PATH... (or --evalset FILE... with human_label)")
    labels = case_labels(load_evalsets(args.evalsets)) + read_labels(args.labels)
    with open_store(args, read_only=not args.save) as store:
        found = _run(store, args.run)
        check = check_judge(found, labels, store)
        if args.save:
            save_figures(store, found.id, check.agreement)
    if args.json:
        print_json(
            {"run_id": found.id, "judge_model": found.judge_model}
            | check.agreement.to_dict()
            | {"drift": list(check.drifts)}
        )
        return 0
    print()
    print(f"  Judge agreement of run {found.id} (judge {found.judge_model or 'none'})")
    for line in summary_lines(check):
        print(f"  {line}")
    for fingerprint, figure in check.agreement.judges:
        kappa = "n/a" if figure.kappa is None else f"{figure.kappa:.2f}"
        print(
            f"    {fingerprint.model} rubric {fingerprint.rubric} template "
            f"{fingerprint.template}: n {figure.n}, kappa {kappa}"
        )
    for item in check.agreement.disagreements:
        reason = printable(str(item["reason"]), keep_newlines=False)[:120]
        print(
            f"    disagrees: {item['eval_set_id']}::{item['case_id']} judge "
            f"{item['judge_score']:.2f}, human {item['human']}: {reason}"
        )
    print()
    return 0
