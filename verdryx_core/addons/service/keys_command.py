"""`verdryx keys create|list|revoke`: the verification service's API keys.

A key is shown once, by `create`, and stored only as its sha256 (docs/verification-service.md).
Each key is a tenant: it sees only the contracts and verdicts it submitted.
"""

from __future__ import annotations

import argparse
import sys

from verdryx_core.addons.service.command_storage import open_service_storage
from verdryx_core.addons.service.keys import create_key, key_name_problem
from verdryx_core.cli.commands._common import add_db_argument, add_json_argument, print_json
from verdryx_core.cli.commands._table import render_table
from verdryx_core.errors import UsageError

NAME = "keys"
HELP = "create, list and revoke API keys of the verification service (`verdryx serve`)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="keys_action", metavar="ACTION", required=True)
    create = actions.add_parser("create", help="create a key; it is printed once, keep it")
    create.add_argument("--name", required=True, help="who or what the key is for, e.g. ci")
    add_db_argument(create)
    add_json_argument(create)
    listing = actions.add_parser("list", help="list keys (never the keys themselves)")
    add_db_argument(listing)
    add_json_argument(listing)
    revoke = actions.add_parser("revoke", help="revoke a key: it is refused from now on")
    revoke.add_argument("key_id", metavar="ID", help="the key's id, as `keys list` shows it")
    add_db_argument(revoke)
    add_json_argument(revoke)


def run(args: argparse.Namespace) -> int:
    if args.keys_action == "create":
        # Checked before the store is opened: a refused name creates no file.
        problem = key_name_problem(args.name.strip())
        if problem is not None:
            raise UsageError(f"--name {problem}")
    path, storage = open_service_storage(args.db)
    with storage:
        if args.keys_action == "create":
            name = args.name.strip()
            record, key = create_key(storage, name)
            if args.json:
                print_json({**record.to_dict(), "key": key})
            else:
                # The key alone on stdout, so `KEY=$(verdryx keys create --name ci)` works.
                print(key)
                print(
                    f"created key {record.key_id} ({name!r}) in {path}; it is shown only "
                    "now: store it as VERDRYX_API_KEY where the client runs",
                    file=sys.stderr,
                )
            return 0
        if args.keys_action == "list":
            keys = storage.list_keys()
            if args.json:
                print_json([key.to_dict() for key in keys])
            elif not keys:
                print(f"no API keys in {path}; create one with `verdryx keys create --name N`")
            else:
                rows = [
                    [
                        key.key_id,
                        key.name,
                        key.prefix + "...",
                        key.created_at[:19] + "Z",
                        "active" if key.active else f"revoked {key.revoked_at or ''}"[:27],
                    ]
                    for key in keys
                ]
                print("\n".join(render_table(["id", "name", "key", "created", "status"], rows)))
            return 0
        revoked = storage.revoke_key(args.key_id)
        if revoked is None:
            raise UsageError(f"no API key {args.key_id!r} in {path} (see `verdryx keys list`)")
        if args.json:
            print_json(revoked.to_dict())
        else:
            print(f"revoked key {revoked.key_id} ({revoked.name!r}); it is refused from now on")
        return 0
