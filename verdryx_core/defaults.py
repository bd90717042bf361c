"""The defaults a face shows in its help text (the pass bar, the gates and their settings),
in a module that imports nothing: the pytest plugin defines its options in every session,
and must not pay for the evaluation or numpy to do it (docs/options.md, "When verdryx turns
on"). Their homes re-export them (`verdryx_core.evaluation`, `verdryx_core.gating.drift`).
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "DEFAULT_FDR",
    "DEFAULT_ITERATIONS",
    "DEFAULT_MIN_COVERAGE",
    "DEFAULT_MIN_SCORE",
    "DEFAULT_THRESHOLD",
    "GATES",
]

#: The pass bar of a case without its own `min_score` (graders may have their own).
DEFAULT_MIN_SCORE: Final = 0.5
#: The drop the `threshold` gate calls regressed.
DEFAULT_THRESHOLD: Final = 0.05
#: The share of the baseline's cases a gate must compare more than (docs/statistics.md,
#: "Coverage"): a gate that compared this share or less is refused. At 0.8, a renamed or
#: missing eval set of two, or of three, a forgotten judge on a third of the cases, and a
#: fifth of the cases edited are refused; a case edited in ten still gates.
DEFAULT_MIN_COVERAGE: Final = 0.8
#: Bootstrap resamples of the gate's intervals (docs/statistics.md, "What is computed").
DEFAULT_ITERATIONS: Final = 2000
#: The false discovery rate of the per-case drop tests (`--verdryx-fdr`).
DEFAULT_FDR: Final = 0.1
#: The verdict rules (docs/statistics.md).
GATES: Final = ("significant", "threshold")
