"""Argument and output helpers shared by the CLI commands."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from verdryx_core.errors import StoreError
from verdryx_core.option_numbers import option_float
from verdryx_core.store import Store, resolve_store_path
from verdryx_core.untrusted.text import PrintableStream, printable_json

__all__ = [
    "add_db_argument",
    "add_json_argument",
    "float_argument",
    "open_store",
    "print_command",
    "print_json",
]


def float_argument(
    *, minimum: float | None = None, maximum: float | None = None
) -> Callable[[str], float]:
    """An argparse `type` for a float option: finite and within [minimum, maximum], by the
    rule the pytest plugin reads its float options with (verdryx_core.option_numbers), so
    `nan` or `inf` is a usage error naming the option before anything runs."""

    def read(text: str) -> float:
        float(text)  # not a number at all: argparse's own "invalid float value: 'x'"
        try:
            return option_float(text, minimum=minimum, maximum=maximum)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    read.__name__ = "float"  # argparse names the type in its own messages
    return read


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
    """One JSON document on stdout. Characters the text rule escapes are written as JSON
    escapes here, so the document parses to the same values and the printable stream the CLI
    writes through (whose `\\x85` would not be JSON) finds nothing to change."""
    text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False)
    sys.stdout.write(printable_json(text) + "\n")


def print_command(line: str) -> None:
    """One of verdryx's own CI workflow commands on stdout, unescaped (its parts were escaped
    when it was built): through the printable stream, its leading `::` would be defused."""
    stream = sys.stdout
    if isinstance(stream, PrintableStream):
        stream.write_command(line)
    else:
        stream.write(line + "\n")
