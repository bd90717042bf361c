"""The report's breakdown section: the run by eval set and by grader, with each group's delta
against the baseline on its matched cases (`verdryx_core.reporting.breakdown`)."""

from __future__ import annotations

from verdryx_core.reporting.breakdown import Group, compute_breakdown
from verdryx_core.reporting.html._collect import ReportData
from verdryx_core.reporting.html._svg import esc
from verdryx_core.reporting.summary import fmt_score

__all__ = ["breakdown_section"]


def breakdown_section(data: ReportData) -> str:
    breakdown = compute_breakdown(data.current, data.result)
    if not breakdown.eval_sets:
        return ""
    gated = breakdown.gated
    parts = ['<h2 id="breakdown">By eval set and by grader</h2>']
    for title, groups in (("eval set", breakdown.eval_sets), ("grader", breakdown.graders)):
        head = (
            f"<tr><th>{title}</th><th class=num>mean</th><th class=num>passed</th>"
            "<th class=num>failed</th><th class=num>unmeasured</th>"
            + (
                "<th class=num>matched</th><th class=num>delta</th><th>paired 95% CI</th>"
                if gated
                else ""
            )
            + "</tr>"
        )
        rows = "".join(_row(group, gated=gated) for group in groups)
        parts.append(f'<table class="breakdown"><thead>{head}</thead><tbody>{rows}</tbody></table>')
    if gated:
        parts.append(
            "<figcaption>Delta: current minus baseline over each group's matched cases; the "
            "interval is the paired bootstrap the gate uses, shown from 2 matched cases on."
            "</figcaption>"
        )
    return "".join(parts)


def _row(group: Group, *, gated: bool) -> str:
    cells = [
        f"<td>{esc(group.name)}</td>",
        f"<td class=num>{esc(fmt_score(group.mean))}</td>",
        f"<td class=num>{group.passed}</td>",
        f"<td class=num>{group.failed}</td>",
        f"<td class=num>{group.unmeasured}</td>",
    ]
    if gated:
        delta = "&ndash;" if group.delta is None else f"{group.delta:+.3f}"
        interval = (
            "&ndash;"
            if group.ci_low is None or group.ci_high is None
            else f"[{group.ci_low:+.3f}, {group.ci_high:+.3f}]"
        )
        cells += [
            f"<td class=num>{group.matched}</td>",
            f"<td class=num>{delta}</td>",
            f"<td>{interval}</td>",
        ]
    return "<tr>" + "".join(cells) + "</tr>"
