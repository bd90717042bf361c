"""Makes this folder importable, so the eval set's `"target": "fixer:fix"` resolves without
installing anything, and keeps pytest out of `repo/`: it is the agent's workspace, whose own
tests fail until the agent has fixed the bug (docs/workspaces-and-execution.md)."""

from __future__ import annotations

import sys
from pathlib import Path

collect_ignore = ["repo"]

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
