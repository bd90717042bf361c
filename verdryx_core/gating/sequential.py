"""The sequential gate (docs/statistics.md, "The sequential gate"): cases are graded in a
seeded random order, each matched case's difference (its score now minus its baseline score,
in [-1, 1]) feeds an anytime-valid confidence sequence for the mean difference, and calls
stop as soon as the sequence settles the verdict: wholly below zero (regressed) or wholly
above -detect (on track: no drop as large as `--verdryx-detect`). The cases left are not
needed: never called, never passed or failed, never stored as measured.

Valid under optional stopping by construction: the confidence sequence covers the mean at
every time at once (`confidence_sequence`), so stopping the moment it settles spends no more
than its alpha. The random order is what makes the cases seen first a fair sample of the
set: a file's order (easy cases first, one topic at a time) is not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from verdryx_core.gating.confidence_sequence import BettingCS
from verdryx_core.gating.pass_metric import baseline_pass_value, pass_value
from verdryx_core.runs import BaselineCase, Score

__all__ = ["SEQUENTIAL_ALPHA", "SequentialGate", "SequentialVerdict", "seeded_order"]

#: Two-sided: each side of the sequence holds at 2.5%, the fixed gate's one-sided level, so a
#: false "regressed" is at most as likely as with every case called.
SEQUENTIAL_ALPHA: Final = 0.05


def seeded_order(count: int, seed: int) -> list[int]:
    """A random order of `count` positions, the same for the same seed (numpy's PCG64)."""
    return [int(i) for i in np.random.default_rng(seed).permutation(count)]


@dataclass(frozen=True, slots=True, kw_only=True)
class SequentialVerdict:
    """Where the sequential gate stands: settled (`verdict` "regressed" or "on-track") or
    not (None), from `n` matched differences, over the cases the run called."""

    verdict: str | None
    lower: float
    upper: float
    n: int
    detect: float
    seed: int
    #: Eval cases graded, and eval cases the verdict made unnecessary (never called).
    called: int = 0
    not_needed: int = 0
    alpha: float = SEQUENTIAL_ALPHA

    @property
    def settled(self) -> bool:
        return self.verdict is not None

    def words(self) -> str:
        """One line for the summary: what was decided, on what, and what it saved."""
        interval = f"[{self.lower:+.3f}, {self.upper:+.3f}]"
        level = f"{1 - self.alpha:.0%} confidence sequence"
        if self.verdict == "regressed":
            said = f"regressed: the {level} of the mean difference {interval} lies below zero"
        elif self.verdict == "on-track":
            said = (
                f"on track: the {level} of the mean difference {interval} lies above "
                f"-{self.detect:g} (no drop of --verdryx-detect)"
            )
        else:
            said = (
                f"not settled: the {level} of the mean difference {interval} holds both 0 "
                f"and -{self.detect:g}; the fixed-sample gate decides"
            )
        return (
            f"sequential gate {said}, after {self.n} matched case(s); {self.called} called, "
            f"{self.not_needed} not needed (seed {self.seed})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "lower": self.lower,
            "upper": self.upper,
            "n": self.n,
            "detect": self.detect,
            "seed": self.seed,
            "called": self.called,
            "not_needed": self.not_needed,
            "alpha": self.alpha,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SequentialVerdict:
        return cls(
            verdict=data["verdict"],
            lower=float(data["lower"]),
            upper=float(data["upper"]),
            n=int(data["n"]),
            detect=float(data["detect"]),
            seed=int(data["seed"]),
            called=int(data.get("called", 0)),
            not_needed=int(data.get("not_needed", 0)),
            alpha=float(data.get("alpha", SEQUENTIAL_ALPHA)),
        )


class SequentialGate:
    """Feeds each graded case's paired difference to the confidence sequence, in the order
    the cases were graded; `verdict` says when it has settled. Only what the fixed gate would
    compare counts: a case measured now and in the baseline, on the same fingerprint."""

    def __init__(
        self,
        baseline: Mapping[str, BaselineCase],
        *,
        detect: float,
        seed: int = 0,
        metric: str = "score",
        alpha: float = SEQUENTIAL_ALPHA,
    ) -> None:
        self._baseline = baseline
        self.detect, self.seed, self.metric = detect, seed, metric
        self._sequence = BettingCS(alpha=alpha)
        self.called = 0
        self.not_needed = 0
        self._verdict: str | None = None

    def difference(self, score: Score) -> float | None:
        """The case's paired difference, or None when it does not pair."""
        base = self._baseline.get(score.key)
        if base is None or score.value is None:
            return None
        if base.fingerprint and score.fingerprint and base.fingerprint != score.fingerprint:
            return None  # edited since the baseline: its old score is of another case
        if self.metric == "pass":
            if score.passed is None:
                return None
            return pass_value(score) - baseline_pass_value(base)
        return min(max(score.value - base.value, -1.0), 1.0)

    def observe(self, score: Score) -> str | None:
        """Take one graded case (in grading order); returns the verdict once settled. A case
        graded after the verdict (a call already in flight) still counts: the sequence holds
        at every time, and its bounds only narrow."""
        self.called += 1
        difference = self.difference(score)
        if difference is None:
            return self._verdict
        bounds = self._sequence.update(difference)
        if self._verdict is None:
            if bounds.upper < 0.0:
                self._verdict = "regressed"
            elif bounds.lower > -self.detect:
                self._verdict = "on-track"
        return self._verdict

    def observe_all(self, scores: Sequence[Score]) -> str | None:
        for score in scores:
            self.observe(score)
        return self._verdict

    @property
    def settled(self) -> bool:
        return self._verdict is not None

    def verdict(self) -> SequentialVerdict:
        bounds = self._sequence.bounds
        return SequentialVerdict(
            verdict=self._verdict,
            lower=bounds.lower,
            upper=bounds.upper,
            n=bounds.n,
            detect=self.detect,
            seed=self.seed,
            called=self.called,
            not_needed=self.not_needed,
            alpha=self._sequence.alpha,
        )
