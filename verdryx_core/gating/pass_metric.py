"""The pass metric of a case (`--verdryx-gate-metric=pass`; docs/statistics.md, "What the gate
compares"): on each side, the share of the case's samples that reached its bar, or its pass
or fail (1.0 or 0.0) when it has one sample. Both are estimates of the case's chance to pass,
so a side of three samples and a side of one, or a baseline pooled over five runs, compare
without a bias: what a case that passes two samples of three decided by its mean (a pass,
1.0) would carry against an unchanged run's 0.667. The fixed and the sequential gate read it
here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from verdryx_core.runs import BaselineCase, Score

__all__ = ["DEFAULT_BAR", "baseline_pass_value", "pass_value"]

#: The pass bar of a case whose baseline kept no pass result (docs/graders.md).
DEFAULT_BAR: Final = 0.5


def pass_value(score: Score) -> float:
    """A measured score's side of the pass metric."""
    assert score.value is not None
    return _share(score.samples, score.sample_passes(), score.passed, score.value)


def baseline_pass_value(case: BaselineCase) -> float:
    """A baseline case's side of the pass metric."""
    return _share(case.samples, case.passes, case.passed, case.value)


def _share(
    samples: Sequence[float], passes: Sequence[bool], passed: bool | None, value: float
) -> float:
    if len(samples) >= 2:
        if len(passes) == len(samples):
            return sum(passes) / len(passes)
        # Kept before each sample's pass was: each sample against the default bar.
        return sum(sample >= DEFAULT_BAR for sample in samples) / len(samples)
    if passed is None:  # a baseline saved before pass results were kept
        passed = value >= DEFAULT_BAR
    return 1.0 if passed else 0.0
