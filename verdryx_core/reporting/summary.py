"""Words for results: the lines both faces print (the CLI and the pytest terminal summary).

Each line quotes ids, a baseline's name, a model's name and unmeasured reasons (which quote
providers and outputs): every line is made printable and kept to one line here, where the
text enters the lines, by the text rule (untrusted/text.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from verdryx_core.errors import CLI_FLAGS, word_hint
from verdryx_core.runs import EvalRun, Score
from verdryx_core.untrusted.text import printable

if TYPE_CHECKING:
    # Types only: a run that names no baseline never imports the gate's statistics.
    from verdryx_core.gating.comparison import Comparison
    from verdryx_core.gating.planning import Noise, Plan

__all__ = [
    "fmt_score",
    "fmt_usd",
    "gate_lines",
    "kept_workspace_lines",
    "output_failure_lines",
    "plan_line",
    "plan_lines",
    "repeat_note",
    "run_lines",
    "spans_line",
    "unmeasured_lines",
    "window_line",
]


def fmt_score(value: float | None) -> str:
    return "unmeasured" if value is None else f"{value:.3f}"


def fmt_usd(value: float) -> str:
    if value == 0:
        return "$0"
    return f"${value:.4f}" if value >= 0.01 else f"${value:.6f}"


def run_lines(
    run: EvalRun,
    *,
    passed: int | None = None,
    failed: int | None = None,
    xfailed: int = 0,
    dropped: int = 0,
) -> list[str]:
    measured = len(run.measured)
    asked = len(run.scores)
    mean = run.mean_score
    mean_text = (
        f"{mean:.3f} over {measured} case{'s' if measured != 1 else ''}"
        if mean is not None
        else f"unmeasured (0 of {asked} cases measured)"
    )
    lines = [
        f"run {run.id}  {run.produced_by}"
        + (f"  judge={run.judge_model}" if run.judge_model else "")
    ]
    lines.append(f"mean score: {mean_text}")
    if passed is not None and failed is not None:
        known = f", {xfailed} below the bar as in the baseline" if xfailed else ""
        gone = f", {dropped} dropped below their bar (the verdict decides)" if dropped else ""
        lines.append(
            f"cases: {passed} passed, {failed} failed{known}{gone}, "
            f"{len(run.unmeasured)} unmeasured"
        )
    elif run.unmeasured:
        lines.append(f"unmeasured: {len(run.unmeasured)} of {asked} (counted apart, never as 0)")
    cost = run.total_cost_usd
    cost_line = (
        f"tokens: {run.total_tokens}   cost: {fmt_usd(cost)} "
        # A target run's outputs are the agent's: its spend is the target's, not a model's.
        f"({'target' if run.target else 'model'} {fmt_usd(run.model_cost_usd)}, "
        f"judge {fmt_usd(run.judge_cost_usd)})"
    )
    passing = sum(1 for score in run.scores if score.passed)
    if cost > 0:
        per = fmt_usd(cost / passing) if passing else "n/a (no case passed)"
        cost_line += f"   per passing case: {per}"
    lines.append(cost_line)
    return _printable(lines)


def repeat_note(repeat: int, live_cases: int, flags: Mapping[str, str] = CLI_FLAGS) -> str | None:
    """The one line saying repeats were asked for and change nothing: no scored case's output
    was live (a model or target call), and a recorded output is one fixed measurement."""
    if repeat <= 1 or live_cases > 0:
        return None
    flag = word_hint("{repeat}", flags)
    return f"{flag} {repeat} changes nothing here: every case's output is recorded"


def spans_line(taken: int, overridden: int, flags: Mapping[str, str] = CLI_FLAGS) -> str | None:
    """What the target calls' OpenTelemetry spans gave the results (docs/targets.md,
    "Frameworks"), said once a run; None when they gave nothing and nothing won over them."""
    if not taken and not overridden:
        return None
    parts = []
    if taken:
        parts.append(f"tool calls or usage of {taken} target call(s) read from their spans")
    if overridden:
        parts.append(
            f"{overridden} call(s) returned tool calls or usage of their own, graded instead "
            "of their spans'"
        )
    off = word_hint("{otel} off", flags)
    return f"OpenTelemetry spans: {'; '.join(parts)} ({off} to read no spans)"


def kept_workspace_lines(failed: Sequence[Score]) -> list[str]:
    """Where the kept workspaces of the failed cases are (`--verdryx-keep-workspaces`): each
    folder holds `workspace/` as the agent left it and `evidence/` as the graders saw it."""
    lines = [f"  {score.key}: {folder}" for score in failed for folder in score.workspaces]
    if not lines:
        return []
    head = "kept workspaces of failed cases (workspace/: as the agent left it; evidence/):"
    return _printable([head, *lines])


def output_failure_lines(scores: Sequence[Score], *, limit: int = 10) -> list[str]:
    """The cases scored as failures because what the agent produced could not be graded
    (`Score.failed_by_output`), headed; none when there are none (docs/outcomes.md)."""
    failed = [score for score in scores if score.failed_by_output is not None]
    if not failed:
        return []
    lines = [
        f"scored 0, their output could not be graded (failures, not unmeasured): {len(failed)}"
    ]
    lines += [f"  {score.key}: {score.failed_by_output}" for score in failed[:limit]]
    if len(failed) > limit:
        lines.append(f"  ... and {len(failed) - limit} more")
    return _printable(lines)


def unmeasured_lines(scores: Sequence[Score], *, limit: int = 10) -> list[str]:
    lines = [f"  {score.key}: {score.unmeasured}" for score in scores[:limit]]
    if len(scores) > limit:
        lines.append(f"  ... and {len(scores) - limit} more")
    return _printable(lines)


def gate_lines(
    result: Comparison,
    *,
    worst: int = 5,
    list_limit: int = 10,
    flags: Mapping[str, str] = CLI_FLAGS,
    repeats_help: bool = True,
    refused: bool = False,
) -> list[str]:
    """The gate's lines; `flags`: how the face printing them spells its settings;
    `repeats_help`: whether some case's output is live (see `repeat_note`); `refused`: the
    gate was refused (its reason is printed apart), so the verdict line says so instead of
    what the statistics alone read."""
    baseline = result.baseline
    name = baseline.label or baseline.id
    lines: list[str] = []
    if result.model_change:
        allowed = word_hint("allowed by {allow_model_change}", flags)
        lines.append(f"WARNING: {result.model_change} ({allowed})")
    if result.target_change:
        lines.append(f"compared across versions: {result.target_change}")
    report = result.stats
    if report is not None and result.coverage < 0.5:
        # A verdict over a small part of the baseline says so first.
        lines.append(
            f"WARNING: only {result.coverage_words()} ({result.coverage:.0%}): this verdict "
            "speaks for them alone"
        )
    if report is None:
        lines.append(f"baseline {name}: {result.note}")
    else:
        lines.append(
            f"baseline {name}: {report.baseline_mean:.3f} over {result.matched} matched "
            f"case{'s' if result.matched != 1 else ''}   current: {report.mean_score:.3f}"
            + (f" (window of {report.window} runs)" if report.window > 1 else "")
        )
        window = window_line(result)
        if window:
            lines.append(window)
        interval = _interval(report)
        lines.append(f"delta: {report.delta:+.3f}   {interval}")
        if report.mde is not None and report.mde > 0:
            lines.append(
                f"smallest drop these {result.matched} cases can detect (80% power): "
                f"{report.mde:.3f}"
            )
        sentence = report.inconclusive_sentence(flags, repeats_help=repeats_help)
        if sentence:
            lines.append(sentence)
        if report.clusters is not None:
            lines.append(report.clusters.words())
        metric = "" if result.metric == "score" else f", metric: {result.metric}"
        label = "REFUSED" if refused else report.verdict_label()
        lines.append(f"verdict: {label}  (gate: {report.gate}{metric})")
    for title, keys in (
        ("added since the baseline (not compared)", result.added),
        ("removed since the baseline", result.removed),
        ("changed since the baseline (not compared)", result.changed),
    ):
        if keys:
            shown = ", ".join(keys[:list_limit])
            more = f" and {len(keys) - list_limit} more" if len(keys) > list_limit else ""
            lines.append(f"{title}: {len(keys)}: {shown}{more}")
    dropped = result.dropped_cases()
    significant = [item for item in dropped if result.significant(item.key)]
    # Significant drops are listed whatever the verdict (they are news on their own), all
    # of them; then, on a regressed verdict, the worst of the rest.
    drops = significant + (
        [item for item in dropped if not result.significant(item.key)][:worst]
        if report is not None and report.verdict == "regressed"
        else []
    )
    if drops:
        tested = len(result.case_drops)
        # Cases left out of the false discovery count are said so: their drop, if any, is
        # one their samples cannot show (docs/statistics.md, "Which cases regressed").
        cannot = result.cannot_show()
        left_out = f"; {cannot} cannot show a drop with their samples" if cannot else ""
        lines.append(
            "worst regressed cases:"
            if not tested
            else f"regressed cases ({len(significant)} of {tested} tested significant at "
            f"FDR {result.fdr:g}{left_out}):"
        )
        lines.extend(
            f"  {item.key}: {item.baseline:.3f} -> {item.current:.3f} ({item.delta:+.3f})"
            + (f"  {result.drop_words(item.key)}" if tested else "")
            for item in drops
        )
    return _printable(lines)


def window_line(result: Comparison, *, listed: int = 10) -> str | None:
    """`window: this run and 2 earlier (1a2b3c4d, 5e6f7a8b); 3 earlier not comparable, not
    pooled (3 another target)`: what a window pooled, by short run id, and what it passed
    over (docs/options.md, `--verdryx-window`); None without a window."""
    if not result.pooled and not result.window_skipped:
        return None
    shown = ", ".join(run_id[:8] for run_id in result.pooled[:listed])
    more = f" and {len(result.pooled) - listed} more" if len(result.pooled) > listed else ""
    line = f"window: this run and {len(result.pooled)} earlier" + (
        f" ({shown}{more})" if result.pooled else ""
    )
    if result.window_skipped:
        why = Counter(reason for _, reason in result.window_skipped)
        counts = ", ".join(f"{count} {reason}" for reason, count in why.most_common())
        line += f"; {len(result.window_skipped)} earlier not comparable, not pooled ({counts})"
    return line


def plan_line(plan: Plan, *, repeats_help: bool = True) -> str:
    """The summary's one `plan:` line: the sizes that see a drop of `detect` at `power`
    (docs/statistics.md, "Planning a run"); `repeats_help` as for `gate_lines` (repeats of a
    recorded output measure nothing new, so only more cases are offered)."""
    ways = [_size(plan.cases_needed, 1) + _in_clusters(plan)]
    # Repeats are offered only where they get there: a shock a cluster's cases share in a
    # session is not averaged out by repeats (docs/statistics.md, "Clustered cases in a plan").
    if repeats_help and plan.repeats_needed is not None:
        ways.append(_size(plan.noise.cases, plan.repeats_needed))
    return (
        f"plan: to see a drop of {plan.detect:.3f} at {plan.power:.0%} power, measure "
        f"{' or '.join(ways)}, in the baseline and in each gated run "
        f"(now {_size(plan.noise.cases, plan.noise.samples)}: {plan.power_now:.0%} power)"
    )


def plan_lines(plan: Plan) -> list[str]:
    """`verdryx plan`'s text: the noise it planned from, then each way to get there."""
    noise = plan.noise
    source = {
        "repeats": "from the cases' repeated samples",
        "paired": "from the paired differences of a run and its baseline",
        "bound": "an upper bound from one sample per case, where a flaky case and a hard one "
        "look alike; measure once with repeats for a sharper plan",
    }[noise.source]
    shocks = {
        "none": "",
        "baseline": ", from this one session: an upper bound",
        "paired": ", from paired differences",
    }[noise.shocks]
    repeats = (
        f"{_size(noise.cases, plan.repeats_needed)} (live outputs only: a recorded output is "
        "one fixed measurement)"
        if plan.repeats_needed is not None
        else f"cannot get there: at {noise.cases:,} cases {_unaveraged(noise)}, which "
        f"repeats do not average out, leaves an MDE of at least {plan.mde_floor:.3f}; add "
        + ("cases in more clusters" if noise.cluster_size > 1 else "cases")
    )
    lines = [
        f"noise: within-case variance {plan.noise.variance:.4f} per sample ({source})",
        *(
            [
                f"{noise.clusters.words()}: design effect {noise.design_effect:.2f} (the "
                "variance of the mean is that many times an independent set's); per "
                f"session shock {noise.cluster_shock:.4f} a cluster{shocks}, not averaged by "
                "repeats"
            ]
            if noise.clusters is not None
            else []
        ),
        *(
            [f"per-session shock of a case {noise.case_shock:.4f}, not averaged by repeats"]
            if noise.case_shock > 0
            else []
        ),
        f"to see a drop of {plan.detect:.3f} at {plan.power:.0%} power (the gate's "
        f"{1 - plan.alpha:.0%} interval below zero):",
        f"  now:          {_size(noise.cases, noise.samples)}: MDE {plan.mde:.3f}, power "
        f"{plan.power_now:.0%}",
        f"  more cases:   {_size(plan.cases_needed, 1)}{_in_clusters(plan)}",
        f"  more repeats: {repeats}",
        "the baseline and each gated run are measured at the size chosen",
    ]
    if plan.enough:
        lines.insert(1, f"the current size already sees a drop of {plan.detect:.3f}")
    return _printable(lines)


def _unaveraged(noise: Noise) -> str:
    """What repeats cannot average out, in words."""
    parts = []
    if noise.cluster_shock > 0 and noise.cluster_size > 1:
        parts.append("the shock a cluster's cases share in one session")
    if noise.case_shock > 0:
        parts.append("a case's own shock in one session")
    return " and ".join(parts) or "the noise of a session"


def _in_clusters(plan: Plan) -> str:
    """` in 120 clusters` when the cases cluster: more cases must come in more clusters."""
    count = plan.clusters_needed
    return "" if count is None else f" in {count:,} clusters of {plan.noise.cluster_size:.3g}"


def _size(cases: int, samples: float) -> str:
    """`1,200 cases x 3 samples (3,600 calls a run)`."""
    shown = f"{samples:g}" if samples == int(samples) else f"{samples:.1f}"
    calls = round(cases * samples)
    return (
        f"{cases:,} case{'s' if cases != 1 else ''} x {shown} sample"
        f"{'s' if samples != 1 else ''} ({calls:,} call{'s' if calls != 1 else ''} a run)"
    )


def _printable(lines: list[str]) -> list[str]:
    return [printable(line, keep_newlines=False) for line in lines]


def _interval(report: object) -> str:
    paired = getattr(report, "paired", None)
    if paired is not None and paired.ci_low is not None:
        t = "n/a" if paired.t_statistic is None else f"{paired.t_statistic:+.2f}"
        return (
            f"95% CI (paired, n={paired.n}): [{paired.ci_low:+.3f}, {paired.ci_high:+.3f}]   "
            f"paired t: {t}"
        )
    ci_low = getattr(report, "ci_low", None)
    ci_high = getattr(report, "ci_high", None)
    if ci_low is not None and ci_high is not None:
        t_stat = getattr(report, "t_statistic", None)
        t = "n/a" if t_stat is None else f"{t_stat:+.2f}"
        return f"95% CI: [{ci_low:+.3f}, {ci_high:+.3f}]   Welch t: {t}"
    return "CI: n/a (fewer than 2 scores on a side)"
