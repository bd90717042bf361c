"""The defaults a face shows in its help text (the pass bar, the gates and their threshold),
in a module that imports nothing: the pytest plugin defines its options in every session,
and must not pay for the evaluation or numpy to do it (docs/options.md, "When verdryx turns
on"). Their homes re-export them (`verdryx_core.evaluation`, `verdryx_core.gating.drift`).
"""

from __future__ import annotations

from typing import Final

__all__ = ["DEFAULT_MIN_SCORE", "DEFAULT_THRESHOLD", "GATES"]

#: The pass bar of a case without its own `min_score` (graders may have their own).
DEFAULT_MIN_SCORE: Final = 0.5
#: The drop the `threshold` gate calls regressed.
DEFAULT_THRESHOLD: Final = 0.05
#: The verdict rules (docs/statistics.md).
GATES: Final = ("significant", "threshold")
