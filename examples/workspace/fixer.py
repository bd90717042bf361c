"""An offline example of a code-editing agent: it is given a copy of a repository (the case's
workspace, `case.workspace`) and edits files in it; verdryx then checks what it left there.

It is plain Python and deterministic, so the example runs anywhere. Set
`VERDRYX_EXAMPLE_EDIT=wrong` to make it a careless agent: it makes plausible but wrong edits,
says it fixed everything all the same, and the checks on the workspace catch it.
"""

from __future__ import annotations

import os
from pathlib import Path

from verdryx_core.targets import TargetCase, TargetResult

_BUG = "return round(amount + rate, 2)"
_FIXES = {
    "right": "return round(amount * (1 + rate), 2)",
    # Tax alone: the amount is dropped. Reads like a fix; the repository's tests fail on it.
    "wrong": "return round(amount * rate, 2)",
}


def fix(case: TargetCase) -> TargetResult:
    """The target: one task in one fresh workspace."""
    if case.workspace is None:
        raise ValueError(f"case {case.id}: this agent works on a workspace, and has none")
    mode = "wrong" if os.environ.get("VERDRYX_EXAMPLE_EDIT") == "wrong" else "right"
    root = Path(case.workspace)
    task = (case.metadata or {}).get("task")
    if task == "fix-tax":
        _fix_tax(root, mode)
    elif task == "changelog":
        _changelog(root, mode)
    else:
        raise ValueError(f"case {case.id}: unknown task {task!r}")
    # What it says is the same either way: the checks grade what it did.
    return TargetResult(output=f"Done: {task} ({case.id}); all edits made in {root.name}/.")


def _fix_tax(root: Path, mode: str) -> None:
    source = root / "pricing.py"
    text = source.read_text(encoding="utf-8")
    source.write_text(text.replace(_BUG, _FIXES[mode]), encoding="utf-8")
    if mode == "wrong":
        # A careless agent leaves its backup behind, outside the scope it was given.
        (root / "pricing.py.orig").write_text(text, encoding="utf-8")


def _changelog(root: Path, mode: str) -> None:
    changelog = root / "CHANGELOG.md"
    text = changelog.read_text(encoding="utf-8")
    entry = "- Fixed: total_with_tax adds the tax as a share of the amount.\n"
    if mode == "wrong":
        changelog.write_text(text + "fixed tax\n", encoding="utf-8")  # not under the heading
    else:
        changelog.write_text(text.replace("## Unreleased\n", "## Unreleased\n" + entry))
