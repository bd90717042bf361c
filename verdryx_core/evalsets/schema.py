"""The published eval set JSON Schema (`verdryx_core/schemas/evalset.schema.json`): read once,
shared by the loader, the CSV reader's cell types and the docs test."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["evalset_schema"]


@cache
def evalset_schema() -> dict[str, Any]:
    """The published eval set JSON Schema (also what the docs are checked against)."""
    text = resources.files("verdryx_core.schemas").joinpath("evalset.schema.json").read_text()
    data: dict[str, Any] = json.loads(text)
    return data
