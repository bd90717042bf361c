"""The typed add-on's hooks (verdryx_core.hooks): its three options, in both faces, and the
typed grader's options from them. The grader itself plugs in by its own entry point
(`verdryx.graders`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from verdryx_core.hooks import AddonOption, hookimpl

__all__ = ["verdryx_addoption", "verdryx_grader_options"]


@hookimpl
def verdryx_addoption() -> Sequence[AddonOption]:
    return (
        AddonOption("typed_url", "typed grading service URL; enables typed cases", metavar="URL"),
        AddonOption(
            "typed_key_file",
            "file holding the typed service key (default $VERDRYX_TYPRYX_KEY_FILE)",
            metavar="PATH",
            env="VERDRYX_TYPRYX_KEY_FILE",
        ),
        AddonOption(
            "typed_template",
            "typed grading template (default eval.outcome_met)",
            "eval.outcome_met",
            metavar="ID",
        ),
    )


@hookimpl
def verdryx_grader_options(options: Mapping[str, Any]) -> Mapping[str, Mapping[str, Any]]:
    from verdryx_core.addons.typed import typed_options

    return typed_options(
        options.get("typed_url"), options.get("typed_key_file"), options.get("typed_template")
    )
