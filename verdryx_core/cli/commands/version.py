"""`verdryx version`."""

from __future__ import annotations

import argparse

from verdryx_core.version import __version__

NAME = "version"
HELP = "print the verdryx version"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser


def run(args: argparse.Namespace) -> int:
    print(__version__)
    return 0
