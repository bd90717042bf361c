"""`verdryx gate --group ID --baseline LABEL`: a sharded CI run's shards assembled into one run
and concluded once, as an unsharded session is (docs/sharding.md); exit 1 when it fails (a
regressed verdict, a case that fails under `--fail-on`), 2 when the gate is refused."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from verdryx_core.cli.commands._common import (
    add_db_argument,
    add_json_argument,
    print_command,
    print_json,
)
from verdryx_core.cli.commands._gating import (
    add_gate_arguments,
    conclusion_lines,
    exit_code,
    gate_document,
    outcome_lines,
    run_policy_from,
)
from verdryx_core.cli.commands._settings import add_setting_arguments
from verdryx_core.conclusion import Conclusion, conclude
from verdryx_core.errors import CLI_FLAGS, UsageError, VerdryxError
from verdryx_core.gating.baselines import BASELINE_DIR, check_label, find_baseline
from verdryx_core.gating.compare import GateOutcome, refused
from verdryx_core.gating.run_group import AssembledGroup, assemble_group
from verdryx_core.reporting.ci import gate_annotation, step_summary, verdict_line
from verdryx_core.reporting.ci.gate_junit import write_gate_junit
from verdryx_core.reporting.ci.step_summary import markdown_text
from verdryx_core.runs import EvalRun
from verdryx_core.store import Store, describe, resolve_store_path

NAME = "gate"
HELP = (
    "assemble a run group's shard runs into one run and gate it against a baseline; "
    "exits 1 on a regressed verdict, 2 when a shard is missing or the gate is refused"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--group", required=True, help="the run group its shards were stored under")
    add_gate_arguments(parser)
    add_setting_arguments(parser, NAME)
    parser.add_argument(
        "--shards",
        type=int,
        metavar="N",
        help="the shard count expected (default: the count the shard runs carry)",
    )
    parser.add_argument(
        "--junitxml", metavar="PATH", help="write a JUnit XML file with the gate testcase"
    )
    add_db_argument(parser)
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    began = time.monotonic()
    assembled: AssembledGroup | None = None
    conclusion: Conclusion | None = None
    try:
        assembled, conclusion = _judge(args)
        assert conclusion.gate is not None  # a whole assembled run with a baseline
        gate = conclusion.gate
    except VerdryxError as exc:
        gate = refused(args.baseline, str(exc))
    run_ = assembled.run if assembled is not None else None
    failure = _failure(conclusion)
    if args.junitxml:
        write_gate_junit(
            Path(args.junitxml),
            run_,
            gate,
            extra=_group_properties(args, assembled),
            elapsed=time.monotonic() - began,
            failure=failure,
        )
    _ci_outputs(args, run_, gate)
    if gate.refused is not None or conclusion is None:
        if args.json:
            print_json({"group": args.group, "verdict": "refused", "refused": gate.refused})
        print(f"error: {gate.refused}", file=sys.stderr)
        return 2
    assert assembled is not None
    if args.json:
        print_json(
            gate_document(gate)
            | {
                "run_id": assembled.run.id,
                "group": args.group,
                "shards": assembled.total,
                "shard_run_ids": [shard.id for shard in assembled.shard_runs],
                "cases": len(assembled.run.scores),
                "partial": assembled.run.partial,
                "exit": conclusion.exit,
                "exit_reason": conclusion.exit_reason,
                "failed": list(conclusion.failed),
                "new": list(conclusion.new),
            }
        )
    else:
        print()
        print(
            f"  Gate of run group {args.group}: {assembled.total} shard"
            f"{'s' if assembled.total != 1 else ''} assembled into run {assembled.run.id} "
            f"({len(assembled.run.scores)} cases) vs baseline {gate.baseline}"
        )
        if assembled.superseded:
            print(
                f"  (a shard was stored more than once; its newest run counts, not "
                f"{', '.join(assembled.superseded)})"
            )
        for line in [*outcome_lines(gate), *conclusion_lines(conclusion)]:
            print(f"  {line}")
        print()
    if conclusion.exit == "refused" and conclusion.exit_reason:
        print(f"error: {conclusion.exit_reason}", file=sys.stderr)
    return exit_code(conclusion)


def _failure(conclusion: Conclusion | None) -> str | None:
    """Why the run fails when its verdict alone does not say it (a failing case): the gate
    testcase then fails with it, so JUnit agrees with the exit code."""
    if conclusion is None or conclusion.exit != "failed":
        return None
    if conclusion.gate is not None and conclusion.gate.regressed:
        return None
    return conclusion.exit_reason


def _judge(args: argparse.Namespace) -> tuple[AssembledGroup, Conclusion]:
    target = resolve_store_path(args.db)
    if isinstance(target, Path) and not target.is_file():
        # Opening would create an empty store and then report every shard missing.
        raise UsageError(
            f"no store at {describe(target)}; name the store the shards wrote (--db), or merge "
            "their stores into one first (verdryx merge)"
        )
    with Store.open(target) as store:
        baseline = find_baseline(args.baseline, store=store, root=Path(args.root), flags=CLI_FLAGS)
        assembled = assemble_group(store, args.group, shards=args.shards)
        # Stored before the verdict: the assembled run is a whole measurement whatever the
        # gate then says (a refused comparison included), and `verdryx show` can explain it.
        store.save_run(assembled.run)
        conclusion = conclude(
            assembled.run,
            baseline=baseline,
            policy=run_policy_from(args, NAME),
            store=store,
            keep="stored",
            flags=CLI_FLAGS,
        )
    return assembled, conclusion


def _group_properties(args: argparse.Namespace, assembled: AssembledGroup | None) -> dict[str, str]:
    properties = {"verdryx.run_group": args.group}
    if assembled is not None:
        properties["verdryx.shards"] = str(assembled.total)
    return properties


def _baseline_file(args: argparse.Namespace) -> str | None:
    """The committed baseline file, relative to the root, when there is one (annotations pin
    a refused or regressed gate to it)."""
    try:
        relative = BASELINE_DIR / f"{check_label(args.baseline)}.json"
    except UsageError:
        return None
    return relative.as_posix() if (Path(args.root) / relative).is_file() else None


def _ci_outputs(args: argparse.Namespace, run_: EvalRun | None, gate: GateOutcome) -> None:
    """Under GitHub Actions: the annotation on stdout and the job summary (docs/ci.md)."""
    if os.environ.get("GITHUB_ACTIONS") != "true":
        return
    line = gate_annotation(gate, file=_baseline_file(args))
    if line is not None:
        print_command(line)
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary_path:
        return
    if run_ is not None:
        text = step_summary(run_, gate)
    else:
        text = (
            f"## verdryx: REFUSED against baseline {markdown_text(gate.baseline)}\n\n"
            f"{markdown_text(verdict_line(gate))}\n"
        )
    try:
        with open(summary_path, "a", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:  # the summary is a view: it never changes the verdict
        print(f"warning: job summary not written to {summary_path}: {exc}", file=sys.stderr)
