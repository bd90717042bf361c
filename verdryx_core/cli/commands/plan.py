"""`verdryx plan (--baseline LABEL | --run ID | --baseline LABEL --run ID)`: what it takes for
the gate to see a drop of `--detect` at `--power`: the MDE now, the cases needed at one
sample, the repeats needed at the current cases (when repeats can get there), and the calls
of each (docs/cli.md, docs/statistics.md "Planning a run"). Both: from the run's paired
differences against the baseline, two sessions, which tell a cluster's per-session shock
from its shared difficulty."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from verdryx_core.cli.commands._common import (
    add_db_argument,
    add_json_argument,
    float_argument,
    open_store,
    print_json,
)
from verdryx_core.errors import CLI_FLAGS, UsageError
from verdryx_core.gating.baselines import find_baseline
from verdryx_core.gating.planning import (
    DEFAULT_DETECT,
    DEFAULT_POWER,
    Noise,
    noise_of_baseline,
    noise_of_pair,
    noise_of_scores,
    plan,
)
from verdryx_core.reporting.summary import plan_lines
from verdryx_core.runs import Baseline, EvalRun
from verdryx_core.store import resolve_store_path

NAME = "plan"
HELP = "how many cases or repeats the gate needs to see a drop (from a run or a baseline)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--baseline",
        metavar="LABEL",
        help="plan from this baseline's cases (with --run: from the run's paired differences "
        "against it)",
    )
    parser.add_argument("--run", metavar="ID", help="plan from this stored run (an id prefix)")
    parser.add_argument(
        "--detect",
        type=float_argument(),
        default=DEFAULT_DETECT,
        metavar="D",
        help=f"the drop to see, in score points (default {DEFAULT_DETECT})",
    )
    parser.add_argument(
        "--power",
        type=float_argument(),
        default=DEFAULT_POWER,
        metavar="P",
        help=f"the chance of seeing it, in [0.5, 1) (default {DEFAULT_POWER})",
    )
    parser.add_argument(
        "--root", default=".", help="where .verdryx/baselines/ lives (default: current dir)"
    )
    add_db_argument(parser)
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    if args.run is None and args.baseline is None:
        raise UsageError("plan from what: pass --baseline LABEL, --run ID, or both")
    if args.run is not None and args.baseline is not None:
        subject, noise, source = _paired(args)
    elif args.run is not None:
        with open_store(args, read_only=True) as store:
            found = store.find_run(args.run)
        if found is None:
            raise UsageError(f"no such eval run: {args.run!r} (see `verdryx runs`)")
        subject, noise = f"run {found.id}", noise_of_scores(found.scores)
        source = {"run_id": found.id}
    else:
        baseline, baseline_run = _baseline(args)
        name = baseline.label or baseline.id
        subject = f"baseline {name} (run {baseline.run_id})"
        noise = noise_of_baseline(baseline, baseline_run)
        source = {"baseline": name, "run_id": baseline.run_id}
    result = plan(noise, detect=args.detect, power=args.power)
    if args.json:
        print_json(source | result.to_dict() | {"note": noise.note})
        return 0
    print()
    print(f"  Plan for {subject}: {_measured(noise)}")
    for line in plan_lines(result):
        print(f"  {line}")
    if noise.note:
        print(f"  note: {noise.note}")
    print()
    return 0


def _paired(args: argparse.Namespace) -> tuple[str, Noise, dict[str, str]]:
    """The noise of the run's paired differences against the baseline: two sessions of the
    same cases, where a cluster's shared difficulty cancels and its per-session shock
    shows (docs/statistics.md, "Clustered cases in a plan")."""
    from verdryx_core.gating.comparison import compare_to_baseline

    with open_store(args, read_only=True) as store:
        baseline = find_baseline(args.baseline, store=store, root=Path(args.root))
        found = store.find_run(args.run)
    if found is None:
        raise UsageError(f"no such eval run: {args.run!r} (see `verdryx runs`)")
    name = baseline.label or baseline.id
    result = compare_to_baseline([found], baseline, detect=args.detect)
    counts = [max(1, len(case.samples)) for case in baseline.cases]
    noise = (
        None
        if result.stats is None
        else noise_of_pair(
            result.stats, found, baseline_samples=sum(counts) / len(counts) if counts else 1.0
        )
    )
    if noise is None:
        raise UsageError(
            f"run {found.id} pairs fewer than 2 cases with baseline {name!r}: nothing to plan "
            "from; plan from the baseline or the run alone"
        )
    if result.regressed:
        noise = dataclasses.replace(
            noise,
            note="the run regressed against the baseline: its paired differences hold the drop "
            "too; plan from a run of the unchanged agent",
        )
    subject = f"run {found.id} against baseline {name} ({noise.cases:,} paired cases)"
    return subject, noise, {"baseline": name, "run_id": found.id}


def _baseline(args: argparse.Namespace) -> tuple[Baseline, EvalRun | None]:
    """The baseline, and its run when the store holds it (its samples give the noise). A
    committed baseline file needs no store: a fresh checkout can plan from it."""
    target = resolve_store_path(args.db)
    if isinstance(target, Path) and not target.exists() and args.db is None:
        return find_baseline(args.baseline, root=Path(args.root), flags=CLI_FLAGS), None
    with open_store(args, read_only=True) as store:
        baseline = find_baseline(args.baseline, store=store, root=Path(args.root), flags=CLI_FLAGS)
        return baseline, store.load_run(baseline.run_id)


def _measured(noise: Noise) -> str:
    samples = (
        f"{noise.samples:g}" if noise.samples == int(noise.samples) else f"{noise.samples:.1f}"
    )
    cases = f"{noise.cases:,} measured case{'s' if noise.cases != 1 else ''}"
    return f"{cases} x {samples} sample{'s' if noise.samples != 1 else ''}"
