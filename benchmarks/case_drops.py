"""How many broken cases the per-case drop tests flag, and how many false flags they raise,
when the cases that cannot show a drop are left out of the false discovery count, against
plain Benjamini-Hochberg over every tested case and Tarone's count (docs/statistics.md,
"Which cases regressed").

    .venv/bin/python benchmarks/case_drops.py              # 400 trials a design
    .venv/bin/python benchmarks/case_drops.py --quick      # a smoke run: 20 trials

A trial draws the baseline's and the current samples of every case (pass/fail, so each case
gets Fisher's exact test), with the given pass rates; the broken cases fail every current
sample. The three procedures read the very same p-values (from `case_drop_tests`):

- `all`: Benjamini-Hochberg over every case sampled twice a side (verdryx before);
- `filter`: what verdryx does: cases whose smallest possible p is above the rate left out;
- `tarone`: Tarone's count (Gilbert 2005): the smallest K with at most K cases whose
  smallest p is at most rate / K; those cases only, Benjamini-Hochberg over them.

Power is the share of broken cases flagged (over all trials); the false discovery rate the
mean over trials of false flags / flags; `any false` the share of trials with a false flag,
with its Wilson 95% interval.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np
from benchlib import verdict

from verdryx_core.addons.slo.stats import wilson_interval
from verdryx_core.gating.case_drops import bh_adjust, case_drop_tests

FDR = 0.1
PROCEDURES = ("all", "filter", "tarone")


@dataclass(frozen=True)
class Design:
    name: str
    #: Each case's pass rate (baseline and now, but for the broken ones).
    passing: tuple[float, ...]
    broken: int
    samples: int


def _designs() -> list[Design]:
    rng = np.random.default_rng(2026)
    # A mostly stable set, as agents' sets are: 70% always pass, 10% never, 20% flaky.
    kinds = rng.choice(3, size=200, p=(0.7, 0.1, 0.2))
    flaky = rng.uniform(0.3, 0.9, 200)
    stable = tuple(
        float(1.0 if k == 0 else 0.0 if k == 1 else f) for k, f in zip(kinds, flaky, strict=True)
    )
    mixed = tuple(float(x) for x in rng.uniform(0.4, 1.0, 60))
    return [
        Design("51 cases, 50 always pass, 1 broken", (1.0,) * 51, 1, 3),
        Design("200 mostly stable, 10 broken", stable, 10, 3),
        Design("200 mostly stable, 10 broken", stable, 10, 5),
        Design("60 flaky (0.4-1.0), 6 broken", mixed, 6, 3),
        Design("200 mostly stable, none broken", stable, 0, 3),
    ]


def _flagged(procedure: str, p: np.ndarray, min_p: np.ndarray) -> np.ndarray:
    keep = np.ones(p.size, bool)
    if procedure == "filter":
        keep = min_p <= FDR + 1e-12
    elif procedure == "tarone":
        for k in range(1, p.size + 1):
            keep = min_p <= FDR / k + 1e-12
            if keep.sum() <= k:
                break
    flags = np.zeros(p.size, bool)
    if keep.any():
        flags[keep] = bh_adjust(p[keep]) <= FDR + 1e-12
    return flags


def run(design: Design, trials: int, seed: int) -> dict[str, tuple[float, float, int]]:
    """Per procedure: (power, mean false discovery proportion, trials with a false flag)."""
    rng = np.random.default_rng(seed)
    passing = np.asarray(design.passing)
    # The broken cases: those that passed most often (a drop there is one to see).
    broken = np.zeros(passing.size, bool)
    if design.broken:
        broken[np.argsort(-passing, kind="stable")[: design.broken]] = True
    hits = dict.fromkeys(PROCEDURES, 0)
    fdp = dict.fromkeys(PROCEDURES, 0.0)
    any_false = dict.fromkeys(PROCEDURES, 0)
    n = design.samples
    for _ in range(trials):
        base = rng.random((passing.size, n)) < passing[:, None]
        cur = (rng.random((passing.size, n)) < passing[:, None]) & ~broken[:, None]
        drops = case_drop_tests(
            {
                str(i): (tuple(base[i].astype(float)), tuple(cur[i].astype(float)))
                for i in range(passing.size)
            },
            fdr=FDR,
        )
        p = np.array([drops[str(i)].p_value for i in range(passing.size)])
        min_p = np.array([drops[str(i)].min_p for i in range(passing.size)])
        for procedure in PROCEDURES:
            flags = _flagged(procedure, p, min_p)
            false = int((flags & ~broken).sum())
            hits[procedure] += int((flags & broken).sum())
            fdp[procedure] += false / flags.sum() if flags.any() else 0.0
            any_false[procedure] += false > 0
    total_broken = max(1, design.broken * trials)
    return {
        name: (hits[name] / total_broken, fdp[name] / trials, any_false[name])
        for name in PROCEDURES
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 20 trials")
    args = parser.parse_args()
    trials = 20 if args.quick else args.trials
    began = time.monotonic()
    print(f"FDR {FDR}, {trials} trials a design, pass/fail samples (Fisher's exact test)")
    print(f"{'design':<40} {'n':>2} | {'procedure':<7} | power  | FDR    | any false flag")
    held = True
    for index, design in enumerate(_designs()):
        for name, (power, fdr, false) in run(design, trials, seed=index).items():
            low, high = wilson_interval(false, trials)
            power_cell = f"{power:6.1%}" if design.broken else "   -  "
            print(
                f"{design.name:<40} {design.samples:>2} | {name:<7} | {power_cell} | {fdr:6.1%} "
                f"| {false / trials:5.1%} [{low:5.1%}, {high:5.1%}]"
            )
            # The rate holds when the mean false discovery proportion is within it (give or
            # take two standard errors of a share at the rate).
            held &= fdr <= FDR + 2 * (FDR * (1 - FDR) / trials) ** 0.5
    print(f"elapsed {time.monotonic() - began:.1f} s")
    print(verdict(held, f"every procedure's false discovery rate at most {FDR:g}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
