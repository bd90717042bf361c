"""How a case's repeated samples make its one value (docs/workspaces-and-execution.md,
"Aggregating repeats: pass@k"): `mean` (the default: the pass@1 estimate for a 0/1 grader),
`all` (1.0 when every sample passes), `any` (1.0 when one does), `pass@K` (the unbiased
estimate of the chance that at least one of K samples passes, HumanEval's estimator
1 - C(n-c, K) / C(n, K) over n samples of which c pass). The gate compares these values.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Final

__all__ = ["AGGREGATES", "aggregate", "aggregate_k", "pass_at_k", "samples_problem"]

AGGREGATES: Final = ("mean", "all", "any", "pass@K")
_PASS_AT: Final = re.compile(r"^pass@([1-9][0-9]{0,2})$")


def aggregate_k(rule: str | None) -> int | None:
    """K of a `pass@K` rule, else None."""
    found = _PASS_AT.match(rule or "")
    return int(found.group(1)) if found else None


def pass_at_k(n: int, c: int, k: int) -> float:
    """1 - C(n-c, k) / C(n, k): the unbiased estimate that one of k samples drawn without
    replacement from n (c of them passing) passes. Exact integers, then one division."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def samples_problem(rule: str | None, samples: int) -> str | None:
    """Why `rule` cannot aggregate `samples` samples, or None."""
    k = aggregate_k(rule)
    if k is not None and k > samples:
        return f"aggregate {rule!r} needs at least {k} samples, and the case has {samples}"
    return None


def aggregate(samples: Sequence[float], passed: Sequence[bool], rule: str | None) -> float:
    """The case's value from its samples' values and whether each passed its bar."""
    if not samples or len(samples) != len(passed):
        raise ValueError("aggregate needs one pass flag per sample, and at least one sample")
    if rule is None or rule == "mean":
        # Each sample is in [0, 1]; the clamp guards float sums only.
        return min(1.0, max(0.0, math.fsum(samples) / len(samples)))
    if rule == "all":
        return 1.0 if all(passed) else 0.0
    if rule == "any":
        return 1.0 if any(passed) else 0.0
    k = aggregate_k(rule)
    if k is None:
        raise ValueError(f"unknown aggregate {rule!r}; expected one of {', '.join(AGGREGATES)}")
    problem = samples_problem(rule, len(samples))
    if problem is not None:
        raise ValueError(problem)
    return pass_at_k(len(samples), sum(passed), k)
