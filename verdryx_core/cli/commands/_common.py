"""Argument and output helpers shared by the CLI commands."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from verdryx_core.errors import StoreError
from verdryx_core.store import Store, resolve_store_path

__all__ = ["add_db_argument", "add_json_argument", "open_store", "print_json"]


def add_db_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        metavar="PATH|URL",
        help="the store: a SQLite file or a postgresql:// URL (default: $VERDRYX_DB, else "
        "$TAIPAN_HOME/verdryx.db when that folder exists, else ./verdryx.db)",
    )


def add_json_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print one JSON document on stdout instead of text"
    )


def open_store(args: argparse.Namespace, *, read_only: bool = False) -> Store:
    """The store `--db` names. `read_only` for commands that only read: a missing store is an
    error (not a new empty one) and a store in a read-only folder can still be read."""
    target = resolve_store_path(getattr(args, "db", None))
    if isinstance(target, Path) and not target.parent.is_dir():
        # Checked here too, so the hint names this face's flag (--db).
        raise StoreError(
            f"{target}: cannot open the verdryx store: the directory {str(target.parent)!r} "
            "does not exist (verdryx creates no directories)",
            hint="create it or pass another path with {db}",
        )
    return Store.open(target, read_only=read_only)


def print_json(document: Any) -> None:
    json.dump(document, sys.stdout, indent=2, ensure_ascii=False, allow_nan=False)
    sys.stdout.write("\n")
