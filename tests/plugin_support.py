"""Helpers for the plugin's pytester tests: eval set files and reading back the store."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verdryx_core.runs import EvalRun
from verdryx_core.store import Store

TOOLS = [
    {"name": name, "description": name, "input_schema": {"type": "object"}}
    for name in ("lookup", "act", "notify")
]


def trace_case(case_id: str, called: Sequence[str], **extra: Any) -> dict[str, Any]:
    """A tool_trace case expecting lookup, act, notify; `called` is the recorded output.

    Its pass bar is 0.5 (a partial trace passes), so the gate tests can move scores around a
    passing case; `min_score=None` leaves the case on the tool trace's own bar (1.0)."""
    case = {
        "id": case_id,
        "prompt": f"task {case_id}",
        "grader": "tool_trace",
        "tools": TOOLS,
        "expected_tools": ["lookup", "act", "notify"],
        "output": list(called),
        "min_score": 0.5,
        **extra,
    }
    return {name: value for name, value in case.items() if value is not None}


def exact_case(case_id: str, output: str, expected: str = "yes", **extra: Any) -> dict[str, Any]:
    return {
        "id": case_id,
        "prompt": f"question {case_id}",
        "expected": expected,
        "output": output,
        **extra,
    }


def write_evalset(directory: Path, name: str, set_id: str, cases: list[dict[str, Any]]) -> Path:
    path = directory / f"{name}.evalset.json"
    path.write_text(json.dumps({"id": set_id, "cases": cases}, indent=1))
    return path


def stored_runs(db: Path) -> list[EvalRun]:
    with Store.open(db) as store:
        runs = [store.load_run(summary.id) for summary in store.list_runs()]
    return [run for run in runs if run is not None]


FULL = ["lookup", "act", "notify"]
PARTIAL = ["lookup", "act"]  # LCS 2 of 3: 0.667, still above the default bar of 0.5
