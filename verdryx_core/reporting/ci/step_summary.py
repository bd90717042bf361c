"""The Markdown a GitHub job page shows (`$GITHUB_STEP_SUMMARY`): verdict, delta and interval,
the cases that dropped most, the failed cases and the spend. See docs/ci.md."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from verdryx_core.reporting.ci.failures import CaseFailure
from verdryx_core.reporting.ci.verdict import verdict_interval, verdict_line
from verdryx_core.reporting.summary import fmt_score, fmt_usd
from verdryx_core.runs import EvalRun
from verdryx_core.untrusted.text import printable

if TYPE_CHECKING:
    # Types only: what CI sees is built without importing the gate (numpy) until it runs.
    from verdryx_core.gating.compare import GateOutcome
    from verdryx_core.gating.comparison import Comparison

__all__ = ["markdown_text", "step_summary"]

#: Rows per table: a job page is read, not searched; the HTML report has everything.
_ROWS = 10
_BADGE = {
    "regressed": "REGRESSED",
    "refused": "REFUSED",
    "on-track": "ON-TRACK",
    "not-compared": "NOT COMPARED",
}


def step_summary(
    run: EvalRun,
    gate: GateOutcome | None,
    failures: Sequence[CaseFailure] = (),
    *,
    passed: int | None = None,
    failed: int | None = None,
    xfailed: int = 0,
    dropped: int = 0,
    rows: int = _ROWS,
) -> str:
    """The summary of one run, ending with a newline (it is appended to a shared file)."""
    heading = (
        f"## verdryx: {_BADGE[gate.verdict]} against baseline {_text(gate.baseline)}"
        if gate is not None
        else "## verdryx: no baseline named"
    )
    lines = [heading, ""]
    if gate is not None:
        lines += [_text(verdict_line(gate)), ""]
    lines += ["| | |", "|---|---|"]
    lines.append(f"| run | {_code(run.id)} (model {_code(run.model)}) |")
    measured = len(run.measured)
    lines.append(f"| mean score | {fmt_score(run.mean_score)} over {measured} measured cases |")
    if passed is not None and failed is not None:
        gone = f"{dropped} dropped below their bar (the verdict decides), " if dropped else ""
        lines.append(
            f"| cases | {passed} passed, {failed} failed, {gone}{xfailed} below the bar as in "
            f"the baseline, {len(run.unmeasured)} unmeasured |"
        )
    elif run.unmeasured:
        lines.append(f"| unmeasured | {len(run.unmeasured)} (counted apart, never as 0) |")
    lines += _gate_rows(gate)
    lines.append(
        f"| spend | {fmt_usd(run.total_cost_usd)} (model {fmt_usd(run.model_cost_usd)}, "
        f"judge {fmt_usd(run.judge_cost_usd)}), {run.total_tokens} tokens |"
    )
    lines += _drops(gate, rows)
    lines += _failures(failures, rows)
    return "\n".join(lines) + "\n"


def _gate_rows(gate: GateOutcome | None) -> list[str]:
    if gate is None or gate.result is None or gate.result.stats is None:
        return []
    result = gate.result
    report = result.stats
    assert report is not None
    interval = verdict_interval(report)
    shown = (
        f"[{interval.low:+.3f}, {interval.high:+.3f}] "
        f"({'paired' if interval.paired else 'two-sample'}, n={interval.n})"
        if interval is not None
        else "n/a (fewer than 2 scores on a side)"
    )
    return [
        f"| baseline {_text(gate.baseline)} | {report.baseline_mean:.3f} over "
        f"{result.matched} matched cases |",
        f"| delta | {report.delta:+.3f} |",
        f"| 95% CI | {shown} |",
        f"| verdict | **{report.verdict}** (gate: {report.gate}) |",
    ]


def _drops(gate: GateOutcome | None, rows: int) -> list[str]:
    if gate is None or gate.result is None:
        return []
    result = gate.result
    # Significant drops first (docs/statistics.md, "Which cases regressed").
    drops = result.dropped_cases()
    if not drops:
        return []
    tested = bool(result.case_drops)
    lines = ["", f"### Cases that dropped most ({len(drops)} dropped)", ""]
    if tested:
        lines += [
            "| case | baseline | current | change | drop test |",
            "|---|---:|---:|---:|---|",
        ]
    else:
        lines += ["| case | baseline | current | change |", "|---|---:|---:|---:|"]
    lines += [
        f"| {_code(item.key)} | {item.baseline:.3f} | {item.current:.3f} | {item.delta:+.3f} |"
        + (f" {_drop_cell(result, item.key)} |" if tested else "")
        for item in drops[:rows]
    ]
    if len(drops) > rows:
        lines.append(f"| ... and {len(drops) - rows} more | | | |" + (" |" if tested else ""))
    return lines


def _drop_cell(result: Comparison, key: str) -> str:
    words = result.drop_words(key)
    return f"**{words}**" if result.significant(key) else words


def _failures(failures: Sequence[CaseFailure], rows: int) -> list[str]:
    if not failures:
        return []
    dropped = sum(1 for failure in failures if failure.dropped)
    title = (
        "Failed cases"
        if not dropped
        else ("Dropped cases" if dropped == len(failures) else "Failed and dropped cases")
    )
    lines = ["", f"### {title} ({len(failures)})", ""]
    for failure in failures[:rows]:
        where = failure.file or ""
        if where and failure.line is not None:
            where += f":{failure.line}"
        first = failure.message.splitlines()[0] if failure.message else ""
        at = f" ({_code(where)})" if where else ""
        lines.append(f"- {_code(failure.key)}{at}: {_text(first)}")
    if len(failures) > rows:
        lines.append(f"- ... and {len(failures) - rows} more")
    return lines


def _code(text: str) -> str:
    """An inline code span that survives backticks in the text, and pipes in a table; its
    text is made printable first (no control, format or bidi character reaches the page)."""
    text = printable(text, keep_newlines=False)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text.replace('|', chr(92) + '|')}{pad}{fence}"


def markdown_text(text: str) -> str:
    """Plain text in Markdown, on one line: no table breaks, no stray emphasis or HTML, and,
    by the text rule, no control, format or bidi character (shown escaped)."""
    text = printable(text.replace("\r", " ").replace("\n", " "), keep_newlines=False)
    for char in ("\\", "|", "*", "_", "<", ">", "[", "]", "`"):
        text = text.replace(char, "\\" + char)
    return text


_text = markdown_text
