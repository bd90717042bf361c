"""The command-line arguments generated from the one table of settings
(verdryx_core.settings_table): each command takes the settings the table lists it under, with
the table's default, range and help, so no command writes a default of its own."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from verdryx_core.cli.commands._common import float_argument
from verdryx_core.settings_table import SETTINGS, Setting, fields_for

__all__ = ["add_setting_arguments", "setting_fields"]


def add_setting_arguments(parser: argparse.ArgumentParser, command: str) -> None:
    """`verdryx COMMAND`'s table settings, in the table's order."""
    for entry in SETTINGS:
        if command not in entry.commands:
            continue
        flag, text = entry.command_flag, entry.command_text
        if entry.kind == "bool":
            parser.add_argument(flag, action="store_true", help=text)
        elif entry.kind == "choice":
            parser.add_argument(flag, choices=entry.choices, default=entry.default, help=text)
        else:
            # `auto` repeats are the pytest face's alone (see _reader).
            metavar = "N" if entry.kind == "repeat" else entry.metavar
            parser.add_argument(
                flag, type=_reader(entry), default=entry.default, metavar=metavar, help=text
            )


def setting_fields(target: str, args: argparse.Namespace, command: str) -> dict[str, Any]:
    """The keyword arguments of `target` (`evaluation`, `gate`, `run`: settings_table's
    `fields_for`) from `verdryx COMMAND`'s arguments."""
    return fields_for(target, lambda entry: getattr(args, entry.command_dest), command=command)


def _reader(entry: Setting) -> Callable[[str], Any]:
    """An argparse `type` reading the value by the table's rule (the pytest face's too)."""
    if entry.kind == "float":
        return float_argument(minimum=entry.minimum, maximum=entry.maximum)

    def read(text: str) -> Any:
        if entry.kind == "repeat" and text.strip() == "auto":
            # `auto` allocates from a baseline before the items run: the pytest face's alone.
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
        try:
            return entry.read(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    read.__name__ = entry.kind
    return read
