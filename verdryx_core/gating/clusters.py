"""Clustered cases: when cases share a source, the paired test counts clusters, not cases
(docs/statistics.md, "Clustered cases").

Questions of one passage, or twenty cases expanded from one template, rise and fall
together; treated as independent, they make the interval too narrow and the gate cries
regression on noise. Here the mean paired difference is the ratio of the clusters' sums to
their sizes; its interval resamples whole clusters (the cluster bootstrap), its standard
error is the cluster-robust (CR1) one, and the ICC and design effect say how much the
clustering costs. A case without a cluster is a cluster of its own: with no cluster named,
every number here is the ordinary one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

__all__ = [
    "ClusterStats",
    "Clusters",
    "cluster_bootstrap_means",
    "cluster_se",
    "cluster_stats",
    "icc",
]

#: Cluster draws held at once (iterations x clusters): ~2 MB of int64.
_CHUNK_ELEMENTS: Final = 1 << 18


@dataclass(frozen=True, slots=True)
class Clusters:
    """Which cluster each value belongs to: `codes[i]` in 0..count-1."""

    codes: np.ndarray
    sizes: np.ndarray

    @classmethod
    def of(cls, labels: Sequence[str | None]) -> Clusters:
        """Clusters from per-case labels; None is a cluster of its own."""
        index: dict[str, int] = {}
        codes = np.empty(len(labels), dtype=np.int64)
        for position, label in enumerate(labels):
            if label is None:
                codes[position] = len(index)
                index[f"\0{position}"] = len(index)  # no label can hold NUL: never shared
            else:
                codes[position] = index.setdefault(label, len(index))
        return cls(codes=codes, sizes=np.bincount(codes, minlength=len(index)))

    @property
    def count(self) -> int:
        return int(self.sizes.size)

    @property
    def shared(self) -> bool:
        """Some cluster holds more than one case: clustering changes the numbers."""
        return bool(self.sizes.size and self.sizes.max() > 1)

    def sums(self, values: np.ndarray) -> np.ndarray:
        return np.bincount(self.codes, weights=values, minlength=self.count)


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterStats:
    """What the summary says of the clustering: `clusters: 50 (mean size 10, ICC 0.41)`."""

    count: int
    mean_size: float
    #: The intraclass correlation of the paired differences (one-way ANOVA); None with no
    #: cluster of two.
    icc: float | None
    #: Var(cluster-robust) / Var(independent cases): what the clustering costs in variance.
    design_effect: float

    def words(self) -> str:
        icc_text = "n/a" if self.icc is None else f"{self.icc:.2f}"
        return f"clusters: {self.count} (mean size {self.mean_size:.3g}, ICC {icc_text})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "mean_size": self.mean_size,
            "icc": self.icc,
            "design_effect": self.design_effect,
        }


def cluster_se(values: np.ndarray, clusters: Clusters) -> float:
    """The cluster-robust (CR1) standard error of the mean of `values`:
    sqrt(G / (G - 1) * sum_g (S_g - n_g mean)^2) / N. With clusters of one it is the
    ordinary sd / sqrt(n)."""
    count = clusters.count
    if count < 2:
        return 0.0
    mean = float(np.mean(values))
    residuals = clusters.sums(values) - clusters.sizes * mean
    total = float(np.dot(residuals, residuals))
    return math.sqrt(count / (count - 1) * total) / values.size


def cluster_bootstrap_means(
    values: np.ndarray, clusters: Clusters, iterations: int, rng: np.random.Generator
) -> np.ndarray:
    """Means of `iterations` resamples that draw G whole clusters with replacement: each
    resample's mean is its clusters' summed values over their summed sizes. The clusters'
    sums are taken once, so the cost is iterations x G draws, not x N."""
    count = clusters.count
    sums, sizes = clusters.sums(values), clusters.sizes.astype(np.float64)
    rows = max(1, _CHUNK_ELEMENTS // max(1, count))
    means = np.empty(iterations)
    for start in range(0, iterations, rows):
        stop = min(iterations, start + rows)
        picks = rng.integers(0, count, size=(stop - start, count))
        means[start:stop] = sums[picks].sum(axis=1) / sizes[picks].sum(axis=1)
    return means


def icc(values: np.ndarray, clusters: Clusters) -> float | None:
    """The one-way ANOVA estimate of the intraclass correlation, clipped to [0, 1]:
    (MSB - MSW) / (MSB + (n0 - 1) MSW), n0 the size-weighted mean cluster size. None when no
    cluster holds two values or there are fewer than two clusters (nothing to compare)."""
    count, n = clusters.count, values.size
    if count < 2 or n <= count:
        return None
    sizes = clusters.sizes.astype(np.float64)
    means = clusters.sums(values) / sizes
    grand = float(np.mean(values))
    between = float(np.dot(sizes, (means - grand) ** 2)) / (count - 1)
    within = float(np.sum((values - means[clusters.codes]) ** 2)) / (n - count)
    n0 = (n - float(np.dot(sizes, sizes)) / n) / (count - 1)
    denominator = between + (n0 - 1) * within
    if denominator <= 0:
        return 0.0
    return min(1.0, max(0.0, (between - within) / denominator))


def cluster_stats(values: np.ndarray, clusters: Clusters) -> ClusterStats:
    """The summary's numbers for these paired differences."""
    plain = float(np.var(values, ddof=1)) / values.size if values.size >= 2 else 0.0
    robust = cluster_se(values, clusters) ** 2
    return ClusterStats(
        count=clusters.count,
        mean_size=values.size / clusters.count,
        icc=icc(values, clusters),
        design_effect=robust / plain if plain > 0 else 1.0,
    )
