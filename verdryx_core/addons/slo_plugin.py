"""The SLO add-on's hooks (verdryx_core.hooks): `verdryx slo`."""

from __future__ import annotations

from collections.abc import Sequence

from verdryx_core.hooks import AddonCommand, hookimpl

__all__ = ["verdryx_cli_commands"]


@hookimpl
def verdryx_cli_commands() -> Sequence[AddonCommand]:
    return (AddonCommand("slo", "verdryx_core.addons.slo.slo_command"),)
