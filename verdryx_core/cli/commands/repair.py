"""`verdryx repair RUN_ID`: rewrite a stored run's rows that cannot be read back, or remove
the run (`--delete`) or a baseline (`--baseline ID`) (docs/store.md, "Rows that cannot be
read"). Every read command names the command to run when it meets such a row."""

from __future__ import annotations

import argparse

from verdryx_core.cli.commands._common import add_db_argument, open_store
from verdryx_core.errors import UsageError

NAME = "repair"
HELP = "repair a stored run whose rows cannot be read back, or remove it or a baseline"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run_id", nargs="?", metavar="RUN_ID", help="the run id or a unique prefix of it"
    )
    parser.add_argument(
        "--delete",
        action="store_true",
        help="remove the run and its scores instead (when its id, model or start time cannot "
        "be read, it cannot be repaired)",
    )
    parser.add_argument(
        "--baseline",
        metavar="ID",
        help="remove this baseline (a snapshot cannot be recomputed; save it again with "
        "`verdryx baseline`)",
    )
    add_db_argument(parser)


def run(args: argparse.Namespace) -> int:
    if (args.run_id is None) == (args.baseline is None):
        raise UsageError("give a RUN_ID to repair or remove, or --baseline ID to remove")
    if args.baseline is not None and args.delete:
        raise UsageError("--delete is for a run; --baseline ID already removes the baseline")
    with open_store(args) as store:
        if args.baseline is not None:
            if not store.delete_baseline(args.baseline):
                raise UsageError(f"no baseline with id {args.baseline!r} in {store.path}")
            print(f"removed baseline {args.baseline} from {store.path}")
            return 0
        run_id = store.run_id_for(args.run_id)
        if run_id is None:
            raise UsageError(
                f"no such eval run: {args.run_id!r} in {store.path}; list them with `verdryx runs`"
            )
        if args.delete:
            store.delete_run(run_id)
            print(f"removed run {run_id} and its scores from {store.path}")
            return 0
        changed = store.repair_run(run_id)
    if not changed:
        print(f"run {run_id}: every row reads back; nothing to repair")
        return 0
    print(f"repaired run {run_id} in {store.path}:")
    for line in changed:
        print(f"  {line}")
    return 0
