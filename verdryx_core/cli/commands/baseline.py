"""`verdryx baseline RUN_ID --label L`: snapshot a stored run as a named baseline, by the rules
the pytest plugin saves one by (an incomplete or partial run is refused: docs/ci.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from verdryx_core.cli.commands._common import (
    add_db_argument,
    add_json_argument,
    open_store,
    print_json,
)
from verdryx_core.cli.commands._settings import add_setting_arguments
from verdryx_core.conclusion import save_baseline
from verdryx_core.errors import CLI_FLAGS, UsageError
from verdryx_core.gating.baselines import check_label
from verdryx_core.untrusted.text import printable

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
    # --allow-partial, --runs: the table's.
    add_setting_arguments(parser, NAME)
    add_db_argument(parser)
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    label = check_label(args.label)
    root = _write_root(args.write_file) if args.write_file else None
    with open_store(args) as store:
        found = store.find_run(args.run_id)
        if found is None:
            raise UsageError(f"no such eval run: {args.run_id!r} (see `verdryx runs`)")
        saved = save_baseline(
            found,
            label,
            store=store,
            root=root,
            allow_partial=args.allow_partial,
            runs=args.runs,
            flags=CLI_FLAGS,
        )
    baseline, path = saved.baseline, saved.path
    if saved.warning:
        print(f"WARNING: {printable(saved.warning, keep_newlines=False)}", file=sys.stderr)
    if args.json:
        print_json(
            baseline.to_dict()
            | {"file": str(path) if path else None, "pooled_runs": list(saved.pooled)}
        )
    else:
        pooled = f"; {saved.pooled_words}" if saved.pooled_words else ""
        print(
            f"baseline {label} ({baseline.id}): run {found.id}, mean {baseline.mean:.3f} over "
            f"{len(baseline.cases)} cases{pooled}" + (f"; written to {path}" if path else "")
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
