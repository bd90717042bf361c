"""The `verdryx` section of pytest's terminal summary, and the prefetch progress stream.

Display only: everything shown was decided and stored in `pytest_sessionfinish`, which pytest
runs even on exits that skip the summary.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import pytest

from verdryx_core.model import EvalRun
from verdryx_core.store import resolve_store_path
from verdryx_core.summary import fmt_score, gate_lines, run_lines, unmeasured_lines

if TYPE_CHECKING:
    from pytest_verdryx.session import VerdryxSession

__all__ = ["TerminalStream", "next_step", "write_summary"]


def write_summary(tr: Any, session: VerdryxSession, run: EvalRun) -> None:
    settings = session.settings
    tr.write_sep("=", "verdryx")
    passed = sum(1 for score in run.scores if score.passed)
    below = [score for score in run.scores if score.passed is False]
    xfailed = sum(1 for score in below if session.below_in_baseline(score))
    for line in run_lines(run, passed=passed, failed=len(below) - xfailed, xfailed=xfailed):
        tr.write_line(line)
    if session.incomplete:
        kept = "stored as incomplete and" if settings.store else "not stored, and"
        tr.write_line(f"INCOMPLETE run: {session.incomplete}; {kept} not gated", red=True)
    stats = session.cache_stats
    if stats["hits"] or stats["misses"]:
        tr.write_line(
            f"model cache: {int(stats['hits'])} hits, {int(stats['misses'])} misses, "
            f"${stats['saved_usd']:.4f} saved"
        )
    if session.prefetch_seconds >= 0.1:
        tr.write_line(
            f"model calls: {session.prefetch_seconds:.2f}s with concurrency {settings.concurrency}"
        )
    for model in sorted(session.unpriced):
        tr.write_line(
            f"NOTE: no price for {model!r}: priced at the fallback rate; add it to the "
            "price file named by ini verdryx_prices"
        )
    if session.stability:
        labels = list(session.stability.values())
        counts = ", ".join(
            f"{labels.count(label)} {label}"
            for label in ("stable-pass", "stable-fail", "flaky")
            if label in labels
        )
        tr.write_line(f"across {settings.repeat} samples per case: {counts}")
        flaky = sorted(key for key, label in session.stability.items() if label == "flaky")
        if flaky:
            tr.write_line(f"flaky across {settings.repeat} samples: {', '.join(flaky)}")
    if run.unmeasured:
        tr.write_line("unmeasured (skipped, counted apart):")
        for line in unmeasured_lines(run.unmeasured):
            tr.write_line(line)
    if settings.store:
        tr.write_line(f"stored: {run.id} in {resolve_store_path(settings.db)}")
    if session.result is not None:
        for line in gate_lines(session.result):
            regressed = line.startswith("verdict: REGRESSED")
            tr.write_line(line, bold=regressed, red=regressed)
    if session.gate_error:
        tr.write_line(session.gate_error, red=True)
    if session.saved_baseline:
        tr.write_line(f"baseline saved: {session.saved_baseline}")
    for message in session.messages:
        tr.write_line(message, red=message.startswith(("ERROR", "WARNING")))
    tr.write_line(next_step(session, run))


def next_step(session: VerdryxSession, run: EvalRun) -> str:
    """The one thing to do now, as the summary's last line."""
    if not run.complete:
        return "next: fix what stopped the session, then re-run it whole to get a gated run"
    result = session.result
    if result is not None and result.regressed:
        return (
            "next: look at the worst cases above; if the drop is intended, save a new "
            "baseline with --verdryx-save-baseline=LABEL and commit .verdryx/baselines/"
        )
    if session.saved_baseline:
        label = session.settings.save_baseline
        return (
            f"next: commit .verdryx/baselines/{label}.json, then gate CI with "
            f"--verdryx-baseline={label}"
        )
    if session.baseline is None:
        return (
            "next: save this run as a baseline with --verdryx-save-baseline=v1, commit "
            ".verdryx/baselines/v1.json, then gate CI with --verdryx-baseline=v1"
        )
    report = result.report if result is not None else None
    if report is not None and report.inconclusive:
        return "next: add cases or use --verdryx-repeat N until the drop is decided"
    failed = sum(
        1 for score in run.scores if score.passed is False and not session.below_in_baseline(score)
    )
    if failed:
        return f"next: the gate is on track, but {failed} case(s) failed: see the reports above"
    if report is not None:
        return f"next: nothing to do: quality is on track against {session.baseline_name}"
    return f"mean {fmt_score(run.mean_score)}"


class TerminalStream:
    """A text stream onto pytest's terminal writer, for the prefetch progress line."""

    def __init__(self, config: pytest.Config) -> None:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        self._writer = getattr(reporter, "_tw", None)
        self._fallback = sys.stderr

    def write(self, text: str) -> int:
        if self._writer is not None:
            self._writer.write(text, flush=True)
        else:
            self._fallback.write(text)
        return len(text)

    def flush(self) -> None:
        if self._writer is None:
            self._fallback.flush()

    def isatty(self) -> bool:
        # The file, not `hasmarkup`: `--color=yes` in a CI log must still get plain lines.
        file = getattr(self._writer, "_file", None) if self._writer is not None else None
        target = file if file is not None else self._fallback
        return bool(getattr(target, "isatty", lambda: False)())
