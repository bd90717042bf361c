"""A baseline from several runs, and the warning a one-sample baseline gets (docs/statistics.md,
"Baselines from several runs").

A baseline saved from one run freezes that run's luck: each case's one sample is above or
below the case's own mean by chance, and every later gate is judged against those draws. A
baseline of K runs pools each case's samples over this run and the K-1 newest earlier runs of
the same measurement, chosen by the rule `--verdryx-window` pools by (`window_runs`), so its
per-case means sit closer to the agent's own and its per-case samples give the variance the
drop tests and `--verdryx-repeat=auto` read.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from verdryx_core.errors import word_hint
from verdryx_core.gating.comparison import Window, window_runs
from verdryx_core.gating.planning import DEFAULT_DETECT, Noise, noise_of_scores, plan, power_apart
from verdryx_core.runs import Baseline, BaselineCase, EvalRun, Score
from verdryx_core.store import Store

__all__ = [
    "SUGGESTED_RUNS",
    "Pooled",
    "pool_baseline",
    "pooled_cases",
    "variation_warning",
]

#: The baseline runs the one-sample warning quotes `plan` for.
SUGGESTED_RUNS: Final = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class Pooled:
    """A baseline pooled over a window of runs."""

    baseline: Baseline
    #: The earlier runs pooled, newest first (their ids).
    runs: tuple[str, ...] = ()
    #: The earlier runs passed over as not comparable: (run id, why), newest first.
    skipped: tuple[tuple[str, str], ...] = ()
    #: The runs asked for (`--verdryx-baseline-runs`), this one included.
    asked: int = 1

    def words(self) -> str | None:
        """`pooled with 2 earlier runs (1a2b3c4d, 5e6f7a8b)`, with what fell short; None for
        a baseline of one run asked as one."""
        if self.asked <= 1:
            return None
        shown = ", ".join(run_id[:8] for run_id in self.runs)
        found = len(self.runs)
        text = (
            f"pooled with {found} earlier run{'s' if found != 1 else ''} ({shown})"
            if found
            else "no earlier run to pool with"
        )
        if found < self.asked - 1:
            text += (
                f": {self.asked} runs were asked for, {found + 1} found (complete runs of "
                "the same eval sets, model, judge, target and target version)"
            )
        if self.skipped:
            text += f"; {len(self.skipped)} earlier not comparable, not pooled"
        return text


def pool_baseline(baseline: Baseline, run: EvalRun, store: Store, runs: int) -> Pooled:
    """`baseline` (saved from `run`) with each case's samples pooled over `run` and the
    `runs - 1` newest earlier comparable runs in `store` (`window_runs`' rule)."""
    window = window_runs(store, run, runs)
    return Pooled(
        baseline=pooled_cases(baseline, window),
        runs=tuple(earlier.id for earlier in window.runs[1:]),
        skipped=window.skipped,
        asked=runs,
    )


def pooled_cases(baseline: Baseline, window: Window) -> Baseline:
    """`baseline` with each case's samples those of every run of `window` (the baseline's
    own run first, then the earlier ones, newest first) that measured the case graded as it
    is now (the same fingerprint); its value their mean, `passed` what most of those runs
    said (a tie: the baseline's own run), and the baseline's mean the mean of the cases."""
    if len(window.runs) < 2:
        return baseline
    own = {case.key: case for case in baseline.cases}
    samples: dict[str, list[float]] = {key: [] for key in own}
    votes: dict[str, list[bool]] = {key: [] for key in own}
    # Each pooled sample's pass (None once a run's cannot be told): the pass metric's share.
    passes: dict[str, list[bool] | None] = {key: [] for key in own}
    for run in window.runs:
        for score in run.scores:
            case = own.get(score.key)
            if case is None or score.value is None:
                continue
            # An earlier run's score of the case enters only when graded as it is now.
            if case.fingerprint and score.fingerprint and case.fingerprint != score.fingerprint:
                continue
            samples[score.key].extend(_samples(score))
            if score.passed is not None:
                votes[score.key].append(score.passed)
            told, known = _sample_passes(score), passes[score.key]
            passes[score.key] = None if told is None or known is None else [*known, *told]
    cases = tuple(
        _pooled_case(case, samples[case.key], votes[case.key], passes[case.key])
        for case in baseline.cases
    )
    mean = math.fsum(case.value for case in cases) / len(cases) if cases else baseline.mean
    return dataclasses.replace(baseline, cases=cases, mean=mean)


def _samples(score: Score) -> tuple[float, ...]:
    assert score.value is not None
    return score.samples or (score.value,)


def _sample_passes(score: Score) -> tuple[bool, ...] | None:
    """Whether each of the score's samples passed (its one sample: `passed`); None when
    that cannot be told (a run stored before each sample's pass was kept)."""
    if not score.samples:
        return None if score.passed is None else (score.passed,)
    told = score.sample_passes()
    return told if len(told) == len(score.samples) else None


def _pooled_case(
    case: BaselineCase, samples: list[float], votes: list[bool], passes: list[bool] | None
) -> BaselineCase:
    own = len(case.samples) or 1
    if len(samples) <= own:  # no earlier run measured it as it is now
        return case
    passing = sum(votes)
    passed = case.passed if 2 * passing == len(votes) else 2 * passing > len(votes)
    return dataclasses.replace(
        case,
        value=min(1.0, max(0.0, math.fsum(samples) / len(samples))),
        samples=tuple(samples),
        passed=passed,
        passes=tuple(passes) if passes is not None and len(passes) == len(samples) else (),
    )


def variation_warning(
    baseline: Baseline,
    run: EvalRun,
    *,
    flags: Mapping[str, str],
    detect: float = DEFAULT_DETECT,
) -> str | None:
    """Why a baseline of one sample per case will carry its run's luck into every gate,
    with what `verdryx plan` predicts for more baseline runs and for repeats; None when no
    case rests on one sample, or nothing says its cases vary."""
    single = [case for case in baseline.cases if len(case.samples) < 2]
    # A baseline most of whose cases hold several samples (a pooled one with a few cases
    # new or edited since the earlier runs) is not a one-sample baseline.
    if not single or 2 * len(single) < len(baseline.cases):
        return None
    why = _why_it_varies(baseline.cases, run)
    if why is None:
        return None
    keys = {case.key for case in baseline.cases}
    noise = noise_of_scores(run.scores, keys=keys)
    now = plan(noise, detect=detect)
    runs = SUGGESTED_RUNS
    pooled = power_apart(noise, baseline_samples=runs * noise.samples, detect=detect)
    repeats = now.repeats_needed
    held = (
        "every case holds one sample"
        if len(single) == len(baseline.cases)
        else f"{len(single)} of {len(baseline.cases)} cases hold one sample"
    )
    hint = (
        f"baseline {baseline.label!r}: {held} and its cases vary ({why}), so this one run's "
        'luck is in every gate against it (docs/statistics.md, "Baselines from several '
        f'runs"). verdryx plan predicts, for a drop of {detect:.3f}: as saved, '
        f"{_size(noise)}: MDE {now.mde:.3f}, power {now.power_now:.0%}; "
        f"{{baseline_runs}}={runs} (the baseline pools {runs} runs, each gated run as now): "
        f"MDE {pooled.mde:.3f}, power {pooled.power:.0%}; " + _repeats_part(noise, repeats, detect)
    )
    return word_hint(hint, flags)


def _repeats_part(noise: Noise, repeats: int | None, detect: float) -> str:
    """What `plan` predicts for repeats on both sides; None from `plan` means no number of
    samples reaches the drop (a per-session shock repeats cannot average)."""
    if repeats is None:
        return f"{{repeat}}: no number of samples a case gets a drop of {detect:.3f} seen"
    repeated = power_apart(noise, samples=repeats, baseline_samples=repeats, detect=detect)
    return (
        f"{{repeat}}={repeats} (the baseline and every gated run {repeats} samples a case): "
        f"MDE {repeated.mde:.3f}, power {repeated.power:.0%}"
    )


def _why_it_varies(cases: Sequence[BaselineCase], run: EvalRun) -> str | None:
    """The evidence that the cases' scores vary from run to run, in words (None: none)."""
    differ = sum(1 for case in cases if len(case.samples) >= 2 and len(set(case.samples)) > 1)
    if differ:
        return f"{differ} case{'s' if differ != 1 else ''}' samples differ"
    targets = {target for target in (run.set_targets or {}).values() if target} or (
        {run.target} if run.target else set()
    )
    if targets:
        return f"a target answers: {', '.join(sorted(targets))}"
    if run.model != "stub":
        return f"model {run.model} answers"
    if run.judge_model and run.judge_model != "stub" and any(s.judged for s in run.scores):
        return f"judge {run.judge_model} grades"
    return None


def _size(noise: Noise) -> str:
    samples = (
        f"{noise.samples:g}" if noise.samples == int(noise.samples) else f"{noise.samples:.1f}"
    )
    return f"{noise.cases} cases x {samples} sample{'s' if noise.samples != 1 else ''}"
