"""Argument and output helpers shared by the CLI commands."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from verdryx_core.errors import StoreError
from verdryx_core.store import Store, resolve_store_path

__all__ = ["add_db_argument", "add_json_argument", "open_store", "print_json"]


def add_db_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        metavar="PATH",
        help="the store (default: $VERDRYX_DB, else $TAIPAN_HOME/verdryx.db when that folder "
        "exists, else ./verdryx.db)",
    )


def add_json_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print one JSON document on stdout instead of text"
    )


def open_store(args: argparse.Namespace) -> Store:
    path = resolve_store_path(getattr(args, "db", None))
    if not path.parent.is_dir():
        # Checked here too, so the hint names this face's flag (--db).
        raise StoreError(
            f"{path}: cannot open the verdryx store: the directory {str(path.parent)!r} "
            "does not exist (verdryx creates no directories)",
            hint="create it or pass another path with {db}",
        )
    return Store.open(path)


def print_json(document: Any) -> None:
    json.dump(document, sys.stdout, indent=2, ensure_ascii=False, allow_nan=False)
    sys.stdout.write("\n")
