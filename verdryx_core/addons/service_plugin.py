"""The verification service's hooks (verdryx_core.hooks): `verdryx serve` and `verdryx keys`
(docs/verification-service.md)."""

from __future__ import annotations

from collections.abc import Sequence

from verdryx_core.hooks import AddonCommand, hookimpl

__all__ = ["verdryx_cli_commands"]


@hookimpl
def verdryx_cli_commands() -> Sequence[AddonCommand]:
    return (
        AddonCommand("keys", "verdryx_core.addons.service.keys_command"),
        AddonCommand("serve", "verdryx_core.addons.service.serve_command"),
    )
