"""`verdryx merge A.db B.db ... --into all.db`: several stores' rows copied into one."""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import ExitStack

from verdryx_core.cli.commands._common import add_json_argument, print_json
from verdryx_core.errors import UsageError
from verdryx_core.hooks import store_tables
from verdryx_core.store import Store, describe, is_store_url, resolve_store_path
from verdryx_core.store.merge import merge_stores

NAME = "merge"
HELP = (
    "copy the runs, baselines, cache entries and contract verdicts of stores into one "
    "(SQLite or PostgreSQL); refuses rows that conflict, merging twice changes nothing"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sources", nargs="+", metavar="STORE", help="the stores to read")
    parser.add_argument(
        "--into",
        required=True,
        metavar="PATH|URL",
        help="the store to merge into (created when missing): a SQLite file or a postgresql:// URL",
    )
    add_json_argument(parser)


def _same_file(a: str, b: str) -> bool:
    if is_store_url(a) or is_store_url(b):
        return a == b
    return os.path.abspath(a) == os.path.abspath(b) or (
        os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b)
    )


def run(args: argparse.Namespace) -> int:
    for source in args.sources:
        if _same_file(source, args.into):
            raise UsageError(f"{describe(source)} is both a source and the target of the merge")
    with ExitStack() as stack:
        sources = [
            (
                describe(source),
                stack.enter_context(Store.open(resolve_store_path(source), read_only=True)),
            )
            for source in args.sources
        ]
        target = stack.enter_context(Store.open(resolve_store_path(args.into)))
        progress = None if args.json else (lambda line: print(line, file=sys.stderr))
        result = merge_stores(sources, target, addons=store_tables(), progress=progress)
    if args.json:
        print_json(
            {"into": target.path, "sources": [name for name, _ in sources], **result.to_dict()}
        )
        return 0
    verdicts_added, verdicts_present = (
        result.added.get("verdicts", 0),
        result.present.get("verdicts", 0),
    )
    kept = (
        f"; {result.cache_kept} cache entries had another answer there and kept it"
        if result.cache_kept
        else ""
    )
    print(
        f"merged {len(sources)} store(s) into {target.path}: added {result.runs_added} runs, "
        f"{result.baselines_added} baselines, {result.cache_added} cache entries, "
        f"{verdicts_added} contract verdicts; already there: {result.runs_present} "
        f"runs, {result.baselines_present} baselines, {result.cache_present} cache entries, "
        f"{verdicts_present} contract verdicts{kept}"
    )
    return 0
