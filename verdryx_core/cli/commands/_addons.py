"""The add-ons' options on the command line (verdryx_core.hooks): `--NAME` for each option
an add-on offers this face, and their values read back, by name."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import Any

from verdryx_core.errors import addon_flag
from verdryx_core.hooks import AddonSession, addon_options, grader_options

__all__ = ["add_addon_arguments", "addon_grader_options", "addon_session", "addon_values"]


def add_addon_arguments(parser: argparse.ArgumentParser) -> None:
    """`--NAME` for every add-on option of the command line (an add-on option taking a name
    this command already has is refused)."""
    taken = {action.dest for action in parser._actions}
    for option in addon_options("cli", taken=taken.__contains__):
        parser.add_argument(
            addon_flag(option.name),
            dest=option.name,
            default=option.default,
            metavar=option.metavar or option.name.upper(),
            help=option.help,
        )


def addon_values(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Each add-on option's value (its environment variable when the flag is unset)."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    for option in addon_options("cli"):
        value = getattr(args, option.name, None)
        if not value and option.env:
            value = env.get(option.env) or None
        values[option.name] = value if value not in ("", None) else option.default
    return values


def addon_grader_options(args: argparse.Namespace) -> dict[str, Mapping[str, Any]]:
    """`EvalSettings.grader_options`, from the add-on options given."""
    return grader_options(addon_values(args))


def addon_session(args: argparse.Namespace, agent_id: str | None) -> AddonSession:
    """What the add-ons see of a `verdryx eval` run (`face` "cli")."""
    return AddonSession(
        options=addon_values(args),
        agent_id=agent_id,
        exporting=True,
        environ=dict(os.environ),
        face="cli",
    )
