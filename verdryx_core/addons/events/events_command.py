"""`verdryx events verify FILE`: check an event log's prev_hash chain.

Exit 0 when every link holds, 1 naming the first line that cannot be trusted, 2 when the file
cannot be read.
"""

from __future__ import annotations

import argparse

from verdryx_core.addons.events.log import verify_chain
from verdryx_core.cli.commands._common import add_json_argument, print_json

NAME = "events"
HELP = "work with agent-event logs (verify: check a file's prev_hash chain)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    verify = actions.add_parser(
        "verify",
        help="check every prev_hash link; exit 1 naming the first broken line",
        description="Check that each line's prev_hash is the RFC 8785 hash of the line before "
        "it. Exit 0 when the chain holds, 1 naming the first broken line.",
    )
    verify.add_argument("file", metavar="FILE", help="an NDJSON agent-event log")
    add_json_argument(verify)


def run(args: argparse.Namespace) -> int:
    result = verify_chain(args.file)
    if args.json:
        print_json({"file": args.file, **result.to_dict()})
    elif result.ok:
        print(f"ok: {args.file}: {result.message}")
    else:
        print(f"broken: {args.file}: {result.message} ({result.lines} line(s) in the file)")
    return 0 if result.ok else 1
