"""The `verdryx` section of pytest's terminal summary: it prints a `SessionEnd`.

Display only: everything shown was decided and stored in `pytest_sessionfinish`, which pytest
runs even on exits that skip the summary.
"""

from __future__ import annotations

from typing import Any

from pytest_verdryx.finish import SessionEnd
from pytest_verdryx.options import FLAGS
from verdryx_core.reporting.breakdown import breakdown_lines, compute_breakdown
from verdryx_core.reporting.summary import (
    fmt_score,
    fmt_usd,
    gate_lines,
    kept_workspace_lines,
    output_failure_lines,
    plan_line,
    repeat_note,
    run_lines,
    spans_line,
    unmeasured_lines,
)
from verdryx_core.runs import EvalRun
from verdryx_core.untrusted.text import printable

__all__ = ["next_step", "write_summary"]


class _PrintableLines:
    """The terminal reporter, with every line of the section made printable and one line by
    the text rule (verdryx_core.untrusted.text): the section quotes case ids, errors, reasons,
    a baseline's name and messages, so the rule is applied here, once, for all of them."""

    def __init__(self, tr: Any) -> None:
        self._tr = tr

    def write_sep(self, sep: str, title: str = "", **markup: bool) -> None:
        self._tr.write_sep(sep, printable(title, keep_newlines=False), **markup)

    def write_line(self, line: str, **markup: bool) -> None:
        self._tr.write_line(printable(line, keep_newlines=False), **markup)


def write_summary(tr: Any, end: SessionEnd) -> None:
    tr = _PrintableLines(tr)
    settings, run = end.settings, end.run
    tr.write_sep("=", "verdryx")
    conclusion = end.conclusion
    passed = sum(1 for score in run.scores if score.passed)
    for line in run_lines(
        run,
        passed=passed,
        failed=len(conclusion.failed),
        xfailed=len(conclusion.excused),
        dropped=len(conclusion.dropped),
    ):
        tr.write_line(line)
    new = conclusion.new_line()
    if new:
        tr.write_line(new)
    if end.incomplete:
        kept = "stored as incomplete and" if end.stored else "not stored, and"
        tr.write_line(f"INCOMPLETE run: {end.incomplete}; {kept} not gated", red=True)
    errors = end.state.errors
    if errors:
        tr.write_line(
            f"{len(errors)} case(s) errored instead of scoring; first: {errors[0]}", red=True
        )
    calls = end.state.calls
    if calls.hits or calls.misses:
        tr.write_line(
            f"model cache: {calls.hits} hits, {calls.misses} misses, ${calls.saved_usd:.4f} saved"
        )
    spans = spans_line(calls.span_results, calls.span_overridden, FLAGS)
    if spans:
        tr.write_line(spans)
    if end.call_seconds >= 0.1:
        # Imported for a session whose calls took a while (its calls imported it already).
        from verdryx_core.llm.progress import call_words

        # Named by what was called: a sandbox run on a recorded output is no model call.
        tr.write_line(
            f"{call_words(end.call_kinds)}: {end.call_seconds:.2f}s "
            f"with concurrency {settings.concurrency}"
        )
    stopped = _stopped_calls_line(end)
    if stopped:
        tr.write_line(stopped)
    for model in sorted(calls.unpriced):
        tr.write_line(
            f"NOTE: no price for {model!r}: priced at the fallback rate; add it to the "
            "price file named by ini verdryx_prices"
        )
    allocation = end.context.allocation
    stability = end.state.stability()
    if stability:
        labels = list(stability.values())
        counts = ", ".join(
            f"{labels.count(label)} {label}"
            for label in ("stable-pass", "stable-fail", "flaky")
            if label in labels
        )
        # Reruns add their attempts' samples (docs/outcomes.md, "Reruns"): cases then differ.
        sizes = {len(score.samples) for _, score in end.state.scores.values() if score.samples}
        across = (
            str(settings.repeat) if allocation is None and sizes == {settings.repeat} else "their"
        )
        tr.write_line(f"across {across} samples per case: {counts}")
        flaky = sorted(key for key, label in stability.items() if label == "flaky")
        if flaky:
            tr.write_line(f"flaky across {across} samples: {', '.join(flaky)}")
    if allocation is not None:
        tr.write_line(allocation.words())
        if allocation.fallback:
            tr.write_line(f"--verdryx-repeat=auto: {allocation.fallback}", yellow=True)
    note = repeat_note(settings.repeat, end.state.live_cases, FLAGS)
    if note:
        tr.write_line(note)
    for line in kept_workspace_lines([score for score in run.scores if score.passed is False]):
        tr.write_line(line)
    for line in output_failure_lines(run.scores):
        tr.write_line(line, red=not line.startswith(" "))
    if run.unmeasured:
        tr.write_line("unmeasured (skipped, counted apart):")
        for line in unmeasured_lines(run.unmeasured):
            tr.write_line(line)
    if end.stored and end.store_path is not None:
        tr.write_line(f"stored: {run.id} in {end.store_path}")
    result = end.gate.result if end.gate is not None else None
    if result is not None:
        refused = end.gate is not None and end.gate.refused is not None
        lines = gate_lines(
            result, flags=FLAGS, repeats_help=end.state.live_cases > 0, refused=refused
        )
        sequential = end.gate.sequential if end.gate is not None else None
        if sequential is not None and sequential.verdict is not None:
            # The confidence sequence decided, on the cases it needed (docs/statistics.md,
            # "The sequential gate"): the fixed-sample figures above are of those cases.
            decided = f"verdict: {sequential.verdict.upper()}  (gate: sequential)"
            lines = [
                shown
                for line in lines
                for shown in (
                    (decided, sequential.words()) if line.startswith("verdict: ") else (line,)
                )
            ]
        for line in lines:
            regressed = line.startswith("verdict: REGRESSED")
            tr.write_line(line, bold=regressed, red=regressed)
    if end.plan is not None:
        tr.write_line(plan_line(end.plan, repeats_help=end.state.live_cases > 0))
    breakdown = compute_breakdown(run, result)
    if breakdown.worth_showing:
        for line in breakdown_lines(breakdown):
            tr.write_line(line)
    if end.judge is not None:
        from verdryx_core.judge.calibration.judge_check import summary_lines as judge_lines

        for line in judge_lines(end.judge):
            tr.write_line(line, red=line.startswith("WARNING"))
    corrected = end.gate.corrected if end.gate is not None else None
    if corrected is not None:
        ci = corrected.ci
        tr.write_line(
            f"judged pass rate corrected for the judge: {corrected.current:.3f} vs baseline "
            f"{corrected.baseline:.3f}, delta {corrected.delta:+.3f}"
            + (f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "")
            + f" on {corrected.n} judged cases"
            + (": REGRESSED" if corrected.regressed else ""),
            red=corrected.regressed,
        )
    if end.gate is not None and end.gate.refused is not None:
        tr.write_line(f"gate refused: {end.gate.refused}", red=True)
    if end.saved_baseline:
        tr.write_line(f"baseline saved: {end.saved_baseline}")
    rival, rival_gate = conclusion.challenger_run, conclusion.challenger
    if rival is not None and rival_gate is not None:
        from verdryx_core.reporting.challenger import challenger_lines

        for line in challenger_lines(rival, rival_gate):
            bad = rival_gate.exit != "ok" and line.startswith("verdryx challenger")
            tr.write_line(line, bold=bad, red=bad)
    if end.pairwise is not None:
        tr.write_line(end.pairwise.words())
        if end.pairwise.calls:
            tr.write_line(
                f"pairwise judge: {end.pairwise.calls} verdict(s), "
                f"{fmt_usd(end.pairwise.cost_usd)} paid (not in the cost line above)"
            )
    for message in end.messages:
        tr.write_line(message, red=message.startswith(("ERROR", "WARNING")))
    tr.write_line(next_step(end, run))


def _stopped_calls_line(end: SessionEnd) -> str | None:
    """What a stop did to the prefetched calls: the cost line above counts scored cases
    only, so calls paid for but scored by no item are priced here."""
    state = end.state
    parts = []
    if state.calls_not_made:
        parts.append(f"{state.calls_not_made} call(s) never made")
    if state.calls_given_up:
        parts.append(f"{state.calls_given_up} given up in flight")
    if state.unscored_calls:
        parts.append(
            f"{state.unscored_calls} made but not scored ({fmt_usd(state.unscored_cost_usd)} paid)"
        )
    return f"stopped early: {'; '.join(parts)}" if parts else None


def next_step(end: SessionEnd, run: EvalRun) -> str:
    """The one thing to do now, as the summary's last line."""
    if not run.complete:
        return "next: fix what stopped the session, then re-run it whole to get a gated run"
    if end.settings.store and not end.stored:
        return "next: fix the store error above, then re-run to store and gate the run"
    if end.conclusion.exit == "refused" and (end.gate is None or end.gate.refused is None):
        return f"next: the run was refused ({end.conclusion.exit_reason}); fix that and re-run"
    if end.settings.shard is not None:
        from pytest_verdryx.shard import gate_hint  # a shard's session only

        return f"next: {gate_hint(end.settings)}"
    gate = end.gate
    result = gate.result if gate is not None else None
    rival = end.conclusion.challenger
    if rival is not None and rival.regressed and not (gate is not None and gate.regressed):
        return (
            "next: the challenger scored below the champion: look at its worst cases above "
            "before it replaces the champion"
        )
    if gate is not None and gate.regressed:
        return (
            "next: look at the worst cases above; if the drop is intended, save a new "
            "baseline with --verdryx-save-baseline=LABEL and commit .verdryx/baselines/"
        )
    if end.saved_baseline:
        label = end.settings.save_baseline
        return (
            f"next: commit .verdryx/baselines/{label}.json, then gate CI with "
            f"--verdryx-baseline={label}"
        )
    if end.context.baseline is None:
        return (
            "next: save this run as a baseline with --verdryx-save-baseline=v1, commit "
            ".verdryx/baselines/v1.json, then gate CI with --verdryx-baseline=v1"
        )
    drift = result.stats if result is not None else None
    if drift is not None and drift.inconclusive:
        if end.state.live_cases:
            return "next: add cases or use --verdryx-repeat N until the drop is decided"
        # Every output is recorded: a repeat would grade the same output again.
        return "next: add cases until the drop is decided"
    failed = len(end.conclusion.failed)
    if failed:
        return f"next: the gate is on track, but {failed} case(s) failed: see the reports above"
    if drift is not None:
        return f"next: nothing to do: quality is on track against {end.context.baseline_name}"
    return f"mean {fmt_score(run.mean_score)}"
