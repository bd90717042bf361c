"""Makes this folder importable, so the eval set's `"target": "order_support:answer"` resolves
without installing anything (docs/targets.md, "Naming a target")."""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
