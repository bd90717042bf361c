"""An anytime-valid confidence sequence for the mean of bounded observations: the
hedged-capital betting CS with predictable plug-in bets (Waudby-Smith & Ramdas, "Estimating
means of bounded random variables by betting", JRSS-B 2023, Theorem 3 and Section 5.1).

For every candidate mean m on a grid, two bettors wager against it, one that the mean is
above m and one that it is below; their capital is a nonnegative martingale when m is the
true mean, so by Ville's inequality it ever reaches 1/alpha with probability at most alpha,
at any time, however the stopping time is chosen. The confidence set at time t is every m
whose capital has stayed below 1/alpha; the running intersection keeps it nested, so a side
it left once it never returns to. That is what lets the gate stop the moment the set
settles a verdict (docs/statistics.md, "The sequential gate").

Observations are in [lo, hi] (the gate's per-case differences: [-1, 1]); they are mapped to
[0, 1] for the bets. Everything is vectorised over the grid; `betting_cs` also over time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

__all__ = ["BettingCS", "Bounds", "betting_cs"]

#: The bet never stakes more than this share of the capital a loss could take (the paper's
#: c = 1/2): capital stays positive, and a run of surprises does not ruin a bettor at once.
_MAX_STAKE: Final = 0.5
#: Candidate means on [0, 1]: a step of 1/2000 is 0.001 on the gate's [-1, 1] scale.
DEFAULT_GRID: Final = 2001

Array = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Bounds:
    """The confidence set after `n` observations, on the observations' own scale."""

    lower: float
    upper: float
    n: int

    @property
    def width(self) -> float:
        return self.upper - self.lower


def _bet_sizes(x: Array, alpha: float) -> Array:
    """The predictable plug-in bets lambda_t for observations x in [0, 1] (one per time,
    before truncation): each uses only x_1..x_{t-1}, through a regularised running variance
    (the paper's eq. 26-27: prior mean 1/2, prior variance 1/4)."""
    n = x.shape[-1]
    t = np.arange(1, n + 1, dtype=np.float64)
    mean = (0.5 + np.cumsum(x, axis=-1)) / (t + 1)  # mu_hat_t
    # sigma2_hat_t uses mu_hat_t itself (after x_t), as in the paper.
    var = (0.25 + np.cumsum((x - mean) ** 2, axis=-1)) / (t + 1)
    previous = np.concatenate([np.full((*x.shape[:-1], 1), 0.25), var[..., :-1]], axis=-1)
    return np.sqrt(2.0 * math.log(2.0 / alpha) / (previous * t * np.log1p(t)))


def _log_capital(x: Array, bets: Array, grid: Array) -> tuple[Array, Array]:
    """Cumulative log capital of the bettor on "above m" and on "below m", shape
    (..., n, grid): the stakes truncated so no outcome in [0, 1] can take all the capital."""
    up = np.minimum(bets[..., :, None], _MAX_STAKE / np.maximum(grid, 1e-12))
    down = np.minimum(bets[..., :, None], _MAX_STAKE / np.maximum(1.0 - grid, 1e-12))
    diff = x[..., :, None] - grid
    return (
        np.cumsum(np.log1p(up * diff), axis=-2),
        np.cumsum(np.log1p(-down * diff), axis=-2),
    )


def _rejected(log_up: Array, log_down: Array, alpha: float) -> npt.NDArray[np.bool_]:
    """Where the hedged capital max(K+/2, K-/2) has reached 1/alpha (theta = 1/2)."""
    threshold = math.log(2.0 / alpha)  # K/2 >= 1/alpha  <=>  log K >= log(2/alpha)
    return np.maximum(log_up, log_down) >= threshold


def _edges(kept: npt.NDArray[np.bool_], grid: Array) -> tuple[Array, Array]:
    """The lowest and highest kept grid points, widened by one step outward so the bound
    between two grid points is never optimistic; an empty set (possible only with
    probability below alpha) is returned as the grid point nearest its last bounds."""
    size = grid.shape[0]
    step = 1.0 / (size - 1)
    any_kept = kept.any(axis=-1)
    first = np.argmax(kept, axis=-1)
    last = size - 1 - np.argmax(kept[..., ::-1], axis=-1)
    lower = np.where(any_kept, np.clip(grid[first] - step, 0.0, 1.0), np.nan)
    upper = np.where(any_kept, np.clip(grid[last] + step, 0.0, 1.0), np.nan)
    return lower, upper


def betting_cs(
    values: npt.ArrayLike,
    *,
    alpha: float = 0.05,
    lo: float = -1.0,
    hi: float = 1.0,
    grid: int = DEFAULT_GRID,
) -> tuple[Array, Array]:
    """The confidence sequence's lower and upper bounds after each observation, on [lo, hi]:
    `values` of shape (n,) or (runs, n) (then each row is its own sequence). Bounds are the
    running intersection, so they never widen. Each side holds at level alpha/2."""
    x = (np.asarray(values, dtype=np.float64) - lo) / (hi - lo)
    if np.any(~np.isfinite(x) | (x < -1e-12) | (x > 1 + 1e-12)):
        raise ValueError(f"observations must lie in [{lo:g}, {hi:g}]")
    x = np.clip(x, 0.0, 1.0)
    points = np.linspace(0.0, 1.0, grid)
    log_up, log_down = _log_capital(x, _bet_sizes(x, alpha), points)
    # Running intersection: a candidate rejected once stays rejected.
    kept = ~np.logical_or.accumulate(_rejected(log_up, log_down, alpha), axis=-2)
    lower, upper = _edges(kept, points)
    # An empty set keeps its last bounds (the intersection cannot widen).
    lower = np.fmax.accumulate(np.nan_to_num(lower, nan=-np.inf), axis=-1)
    upper = np.fmin.accumulate(np.nan_to_num(upper, nan=np.inf), axis=-1)
    return lo + (hi - lo) * lower, lo + (hi - lo) * upper


class BettingCS:
    """The same confidence sequence, one observation at a time (the sequential gate feeds it
    each case's difference as the case is graded); agrees with `betting_cs` exactly."""

    def __init__(
        self, *, alpha: float = 0.05, lo: float = -1.0, hi: float = 1.0, grid: int = DEFAULT_GRID
    ) -> None:
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
        if not hi > lo:
            raise ValueError(f"the bounds must be ordered, got [{lo!r}, {hi!r}]")
        self.alpha, self.lo, self.hi = alpha, lo, hi
        self._grid = np.linspace(0.0, 1.0, grid)
        self._log_up = np.zeros(grid)
        self._log_down = np.zeros(grid)
        self._kept = np.ones(grid, dtype=bool)
        self._sum = 0.0
        self._squares = 0.0  # running sum of (x_i - mu_hat_i)^2
        self._var = 0.25  # sigma2_hat_{t-1}
        self._lower, self._upper = 0.0, 1.0
        self.n = 0

    def update(self, value: float) -> Bounds:
        """Take one observation in [lo, hi]; returns the bounds after it."""
        if not math.isfinite(value) or not self.lo - 1e-12 <= value <= self.hi + 1e-12:
            raise ValueError(f"observation {value!r} is outside [{self.lo:g}, {self.hi:g}]")
        x = min(max((value - self.lo) / (self.hi - self.lo), 0.0), 1.0)
        self.n += 1
        t = float(self.n)
        bet = math.sqrt(2.0 * math.log(2.0 / self.alpha) / (self._var * t * math.log1p(t)))
        grid = self._grid
        up = np.minimum(bet, _MAX_STAKE / np.maximum(grid, 1e-12))
        down = np.minimum(bet, _MAX_STAKE / np.maximum(1.0 - grid, 1e-12))
        self._log_up += np.log1p(up * (x - grid))
        self._log_down += np.log1p(-down * (x - grid))
        self._kept &= ~_rejected(self._log_up, self._log_down, self.alpha)
        # The variance for the next bet, as `_bet_sizes` computes it.
        self._sum += x
        mean = (0.5 + self._sum) / (t + 1)
        self._squares += (x - mean) ** 2
        self._var = (0.25 + self._squares) / (t + 1)
        if self._kept.any():
            lower, upper = _edges(self._kept, grid)
            self._lower = max(self._lower, float(lower))
            self._upper = min(self._upper, float(upper))
        return self.bounds

    @property
    def bounds(self) -> Bounds:
        scale = self.hi - self.lo
        return Bounds(
            lower=self.lo + scale * self._lower, upper=self.lo + scale * self._upper, n=self.n
        )
