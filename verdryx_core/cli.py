"""The `verdryx` console script: argparse in front, one module per command behind.

Each module in `verdryx_core.commands` (not starting with `_`) is a command: it defines
`NAME`, `HELP`, `add_arguments(parser)` and `run(args) -> int`. Adding a command is adding
a module; this file never changes for it.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

from verdryx_core import __version__, commands
from verdryx_core.errors import VerdryxError

__all__ = ["build_parser", "main"]

#: Usage errors and unreadable input (docs/cli.md).
EXIT_USAGE = 2


def _command_modules() -> list[ModuleType]:
    names = sorted(
        info.name
        for info in pkgutil.iter_modules(commands.__path__)
        if not info.name.startswith("_")
    )
    return [importlib.import_module(f"{commands.__name__}.{name}") for name in names]


class _Parser(argparse.ArgumentParser):
    """Usage errors are one line on stderr and exit 2 (docs/cli.md), not a usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="verdryx",
        description="Grade an agent's outputs, store every run, and gate on quality drift.",
    )
    parser.add_argument("--version", action="version", version=f"verdryx {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _command_modules():
        sub = subparsers.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(sub)
        # A command whose exit codes carry meaning (verify: 2 is FLAG) names its own.
        sub.set_defaults(_run=module.run, _usage_exit=getattr(module, "USAGE_EXIT", EXIT_USAGE))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        code = getattr(args, "_usage_exit", EXIT_USAGE)
        command = f"verdryx {args.command}" if getattr(args, "command", None) else "verdryx"
        print(
            f"error: unrecognized arguments: {' '.join(unknown)} (see `{command} --help`)",
            file=sys.stderr,
        )
        return code
    if getattr(args, "_run", None) is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args._run(args))
    except VerdryxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `verdryx runs | head` is not an error
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
