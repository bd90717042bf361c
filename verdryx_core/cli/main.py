"""The `verdryx` console script: argparse in front, one module per command behind.

Each module in `verdryx_core.cli.commands` (not starting with `_`) is a command: it defines
`NAME`, `HELP`, `add_arguments(parser)` and `run(args) -> int`. Adding a command is adding
a module; this file never changes for it. An add-on's commands (`verdryx verify`, `serve`...)
are modules of the same shape that the add-on names through the `verdryx_cli_commands` hook
(verdryx_core.hooks); this face never imports an add-on.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import pkgutil
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

from verdryx_core.cli import commands
from verdryx_core.errors import VerdryxError
from verdryx_core.hooks import addon_commands
from verdryx_core.leftover_threads import exit_past_leftover_threads, threads_now
from verdryx_core.untrusted.text import PrintableStream, clean_text, printable

__all__ = ["build_parser", "main"]

#: Usage errors and unreadable input (docs/cli.md).
EXIT_USAGE = 2

#: Arguments that name files: kept byte for byte (a file name need not be UTF-8).
_PATH_ARGUMENTS = frozenset(
    {
        "base_path",
        "bundle",
        "bundle_out",
        "contract",
        "db",
        "evalsets",
        "events",
        "file",
        "input",
        "junitxml",
        "labels",
        "output",
        "root",
        "scores_db",
        "traces",
        "write_file",
    }
)


def _command_modules(only: str | None = None) -> list[ModuleType]:
    """Every command's module, or only the one named `only` (`cost-per-correct` lives in
    `cost_per_correct.py`) when there is one: a command run pays for its own imports, not
    for every other command's (`verdryx drift` needs no HTTP server or trace reader)."""
    names = sorted(
        info.name
        for info in pkgutil.iter_modules(commands.__path__)
        if not info.name.startswith("_")
    )
    if only is not None and only.replace("-", "_") in names:
        module = importlib.import_module(f"{commands.__name__}.{only.replace('-', '_')}")
        if only == module.NAME:
            return [module]
    # An add-on's command may not take a built-in's name (refused, naming the add-on).
    built_in = {name.replace("_", "-") for name in names}
    added = {command.name: command.module for command in addon_commands(built_in.__contains__)}
    if only is not None and only in added:
        return [importlib.import_module(added[only])]
    modules = {name.replace("_", "-"): f"{commands.__name__}.{name}" for name in names}
    modules.update(added)
    # Listed by name, built-in or not, as `verdryx --help` always listed them.
    return [importlib.import_module(modules[name]) for name in sorted(modules, key=_by_module)]


def _by_module(name: str) -> str:
    """The order of the command modules' names (`cost_per_correct` before `cost`...)."""
    return name.replace("-", "_")


class _Version(argparse.Action):
    """`--version`, looked up when asked: reading the installed package's metadata costs
    every other command a tenth of `verdryx drift`'s own start-up."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        from verdryx_core.version import __version__

        print(f"verdryx {__version__}")
        parser.exit()


class _Parser(argparse.ArgumentParser):
    """Usage errors are one line on stderr and exit 2 (docs/cli.md), not a usage block."""

    def error(self, message: str) -> NoReturn:
        # The message quotes the user's argument, which may hold anything (an undecodable byte
        # arrives as a lone surrogate): printable, one line.
        line = printable(f"error: {message} (see `{self.prog} --help`)", keep_newlines=False)
        self.exit(EXIT_USAGE, line + "\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with `command` (the first argument), only that command's
    subparser when it names one (its help, its errors and its run are the same)."""
    parser = _Parser(
        prog="verdryx",
        description="Grade an agent's outputs, store every run, and gate on quality drift.",
    )
    parser.add_argument(
        "--version", action=_Version, nargs=0, help="show program's version number and exit"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _command_modules(command):
        sub = subparsers.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(sub)
        # A command whose exit codes carry meaning (verify: 2 is FLAG) names its own.
        sub.set_defaults(_run=module.run, _usage_exit=getattr(module, "USAGE_EXIT", EXIT_USAGE))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    first = arguments[0] if arguments and not arguments[0].startswith("-") else None
    try:
        parser = build_parser(first)
    except VerdryxError as exc:  # an add-on that cannot be loaded, or takes a taken name
        print(printable(f"error: {exc}", keep_newlines=False), file=sys.stderr)
        return EXIT_USAGE
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        code = getattr(args, "_usage_exit", EXIT_USAGE)
        command = f"verdryx {args.command}" if getattr(args, "command", None) else "verdryx"
        print(
            printable(
                f"error: unrecognized arguments: {' '.join(unknown)} (see `{command} --help`)",
                keep_newlines=False,
            ),
            file=sys.stderr,
        )
        return code
    if getattr(args, "_run", None) is None:
        parser.print_help()
        return EXIT_USAGE
    _clean_arguments(args)
    # What a command prints, on either stream (a CI runner reads commands from both), may
    # quote stored outputs, reasons, ids and file names: escaped on the way out, never printed
    # raw, by the text rule (verdryx_core.untrusted.text).
    out, err = PrintableStream(sys.stdout), PrintableStream(sys.stderr)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                threads_at_start = threads_now()
                code = int(args._run(args))
                exit_past_leftover_threads(threads_at_start, lambda: code)
                return code
            finally:
                out.finish()
                err.finish()
    except VerdryxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `verdryx runs | head` is not an error
        return 0


def _clean_arguments(args: argparse.Namespace) -> None:
    """Ids, labels and model names with an undecodable byte (Python hands it over as a lone
    surrogate) get U+FFFD in its place, by the text rule (untrusted/text.py): they then match
    nothing and are reported as unknown, instead of crashing the store's query."""
    for name, value in vars(args).items():
        if name in _PATH_ARGUMENTS:
            continue
        if isinstance(value, str):
            setattr(args, name, clean_text(value))
        elif isinstance(value, list):
            setattr(args, name, [clean_text(v) if isinstance(v, str) else v for v in value])
