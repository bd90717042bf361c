"""`verdryx baseline RUN_ID --label L`: snapshot a stored run as a named baseline."""

from __future__ import annotations

import argparse
import uuid
from pathlib import Path

from verdryx_core.cli.commands._common import (
    add_db_argument,
    add_json_argument,
    open_store,
    print_json,
)
from verdryx_core.errors import UsageError
from verdryx_core.gating.baselines import check_label, write_baseline_file
from verdryx_core.runs import Baseline

NAME = "baseline"
HELP = "save a stored run as a named baseline (optionally as a committed file too)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_id", help="the run id (or a unique prefix)")
    parser.add_argument("--label", required=True, help="the baseline's name, e.g. v1")
    parser.add_argument(
        "--write-file",
        metavar="ROOT",
        help="also write ROOT/.verdryx/baselines/LABEL.json, meant to be committed",
    )
    add_db_argument(parser)
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    label = check_label(args.label)
    root = _write_root(args.write_file) if args.write_file else None
    with open_store(args) as store:
        found = store.find_run(args.run_id)
        if found is None:
            raise UsageError(f"no such eval run: {args.run_id!r} (see `verdryx runs`)")
        if not found.complete:
            raise UsageError(
                f"eval run {found.id!r} is incomplete (interrupted): a baseline of part of a "
                "run would judge later runs against the wrong cases"
            )
        try:
            baseline = Baseline.from_run(found, id=str(uuid.uuid4()), label=label)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        store.save_baseline(baseline)
    path = write_baseline_file(root, baseline) if root is not None else None
    if args.json:
        print_json(baseline.to_dict() | {"file": str(path) if path else None})
    else:
        print(
            f"baseline {label} ({baseline.id}): run {found.id}, mean {baseline.mean:.3f} over "
            f"{len(baseline.cases)} cases" + (f"; written to {path}" if path else "")
        )
    return 0


def _write_root(value: str) -> Path:
    """The folder to write under, checked before anything is saved: verdryx creates only its
    own `.verdryx/baselines/` inside it, never a mistyped tree of missing folders."""
    root = Path(value)
    if not root.is_dir():
        what = "is not a folder" if root.exists() else "does not exist"
        raise UsageError(
            f"--write-file {value!r}: the folder {what}; pass the repository root (it must "
            "exist; verdryx creates only .verdryx/baselines/ inside it)"
        )
    return root
