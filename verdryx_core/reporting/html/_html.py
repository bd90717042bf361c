"""The report page: one self-contained HTML file (inline CSS and SVG, no script, no URL).

Read top to bottom it answers, in order: is quality slipping (the verdict line), since when
(score per run against the baseline band), where (the latest run per grader, then the cases
that moved most), and at what price (spend per run, cost per outcome).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from verdryx_core.reporting.html._breakdown import breakdown_section
from verdryx_core.reporting.html._challenger import CHALLENGER_CSS, challenger_section
from verdryx_core.reporting.html._collect import ReportData
from verdryx_core.reporting.html._dialogue import DIALOGUE_CSS, dialogue_html
from verdryx_core.reporting.html._svg import (
    AMBER,
    BLUE,
    GREEN,
    GREY,
    RED,
    CostBar,
    TimelinePoint,
    cost_svg,
    esc,
    histogram_svg,
    timeline_svg,
)
from verdryx_core.reporting.naturalsort import score_order
from verdryx_core.reporting.summary import fmt_score, fmt_usd
from verdryx_core.runs import Score
from verdryx_core.version import __version__

__all__ = ["build_report_html"]

#: Long outputs are cut in the expandable view: the report is for looking, the store keeps all.
_TEXT_LIMIT: Final = 4000
#: Rows of the runs table (the chart shows every run).
_RUN_ROWS: Final = 20
#: The z of a two-sided 95% interval, for the band around the baseline mean.
_Z95: Final = 1.959963984540054

_CSS: Final = """
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; background: #ffffff; color: #24292f;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", sans-serif; }
main { max-width: 1010px; margin: 0 auto; padding: 24px 20px 48px; }
h1 { font-size: 28px; margin: 0 0 4px; letter-spacing: 0.01em; }
h1 .word { font-weight: 800; }
h2 { font-size: 19px; margin: 36px 0 8px; padding-bottom: 4px; border-bottom: 1px solid #d0d7de; }
h3 { font-size: 15px; margin: 0 0 4px; }
.verdict { border-left: 8px solid; padding: 14px 18px; border-radius: 6px; margin: 8px 0 16px; }
.verdict p { margin: 4px 0 0; }
.meta { color: #57606a; font-size: 13px; }
.meta code, td code { font-size: 12px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 12px 0; }
.card { flex: 1 1 150px; border: 1px solid #d0d7de; border-radius: 6px; padding: 10px 14px; }
.card .label { color: #57606a; font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.card .value { font-size: 22px; font-weight: 700; font-variant-numeric: tabular-nums; }
.card .sub { color: #57606a; font-size: 12px; }
figure { margin: 8px 0 0; }
figcaption { color: #57606a; font-size: 13px; margin-top: 4px; max-width: 900px; }
svg.chart { max-width: 100%; height: auto; display: block; }
.graders { display: flex; flex-wrap: wrap; gap: 14px; }
.grader { border: 1px solid #d0d7de; border-radius: 6px; padding: 10px 12px; width: 314px; }
.grader .sub { color: #57606a; font-size: 12px; }
table { border-collapse: collapse; width: 100%; font-size: 13px; margin-top: 6px; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid #eaeef2;
  vertical-align: top; }
th { background: #f6f8fa; font-weight: 600; position: sticky; top: 0; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td .set { color: #57606a; font-size: 12px; }
tr.current td { background: #ddf4ff; }
.down { color: #cf222e; font-weight: 600; }
.up { color: #1a7f37; font-weight: 600; }
.flat { color: #57606a; }
.tag { display: inline-block; font-size: 11px; padding: 0 6px; border-radius: 10px;
  border: 1px solid #d0d7de; color: #57606a; }
details > summary { cursor: pointer; color: #0969da; }
details.more { margin-top: 12px; }
details.more > summary { font-weight: 600; }
dl { margin: 6px 0; }
dt { font-weight: 600; font-size: 12px; color: #57606a; margin-top: 6px; }
dd { margin: 0; }
pre { margin: 2px 0; padding: 6px 8px; background: #f6f8fa; border-radius: 4px;
  white-space: pre-wrap; word-break: break-word; max-height: 320px; overflow: auto;
  font-size: 12px; }
.note { color: #57606a; font-size: 13px; }
footer { margin-top: 40px; color: #57606a; font-size: 12px; }
"""


@dataclass(frozen=True, slots=True)
class _Row:
    score: Score
    baseline: float | None
    current: float | None
    delta: float | None
    #: drop, gain, same, unmeasured, edited (content changed since the baseline), new.
    status: str


def build_report_html(data: ReportData) -> str:
    """The whole page as a string; pure (no store, no clock, no file)."""
    word, colour, lines = _verdict(data)
    body = [
        "<main>",
        f'<h1>verdryx report: <span class="word" style="color:{colour}">{esc(word)}</span></h1>',
        _meta(data),
        f'<section class="verdict" style="border-color:{colour};background:{colour}12">'
        f'<strong style="color:{colour}">{esc(word)}</strong>'
        + "".join(f"<p>{line}</p>" for line in lines)
        + "</section>",
        _cards(data),
        _timeline_section(data),
        _graders_section(data),
        breakdown_section(data),
        _cases_section(data),
        challenger_section(data.current, data.challenger) if data.challenger else "",
        _cost_section(data),
        _outcomes_section(data),
        f"<footer>verdryx {esc(__version__)} &middot; generated "
        f"{esc(_when(data.generated_at))} &middot; store <code>{esc(data.store_path)}</code>"
        "</footer>",
        "</main>",
    ]
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>verdryx: {esc(word)} &middot; {esc(_run_name(data))}</title>"
        f"<style>{_CSS}{DIALOGUE_CSS}{CHALLENGER_CSS}</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


# -- the verdict --------------------------------------------------------------------------


def _verdict(data: ReportData) -> tuple[str, str, list[str]]:
    """The word, its colour, and the sentences under it (already escaped)."""
    result = data.result
    report = result.stats if result else None
    lines: list[str] = []
    if result is not None and result.model_change:
        lines.append(f"<strong>Warning:</strong> {esc(result.model_change)}.")
    if report is None:
        word = "NO BASELINE" if data.baseline is None else "NOT COMPARED"
        mean = data.current.mean_score
        lines.insert(
            0,
            f"Mean score {esc(fmt_score(mean))} over {len(data.current.measured)} measured "
            f"case{_s(len(data.current.measured))}.",
        )
        if data.gate_note:
            lines.append(esc(_sentence(data.gate_note)))
        return word, GREY, lines
    regressed = report.verdict == "regressed"
    word = "REGRESSED" if regressed else "ON-TRACK"
    name = _baseline_name(data)
    assert result is not None
    lines.insert(
        0,
        f"Mean score <strong>{report.mean_score:.3f}</strong> against baseline "
        f"<strong>{esc(name)}</strong> at {report.baseline_mean:.3f}, over "
        f"{result.matched} matched case{_s(result.matched)}: "
        f'<strong class="{_trend(report.delta)}">{_signed(report.delta)}</strong>'
        f"{esc(_interval_words(report))}.",
    )
    rule = (
        "regressed when the whole 95% interval lies below zero"
        + (f" and the drop is at least {report.min_effect:g}" if report.min_effect else "")
        if report.gate == "significant"
        else f"regressed when the drop reaches {report.threshold:g} or the interval lies below zero"
    )
    lines.append(f"Gate <code>{esc(report.gate)}</code>: {esc(rule)}.")
    sentence = report.inconclusive_sentence()
    if sentence:
        lines.append(esc(_sentence(sentence)))
    if report.mde is not None:
        lines.append(
            f"The smallest drop these {result.matched} cases can detect (80% power): "
            f"{report.mde:.3f}."
        )
    if report.underpowered:
        # On track, but blind to the drop the user asked to see: amber, with the reason.
        return report.verdict_label(), AMBER, lines
    if sentence and not regressed:
        # Not regressed, yet a drop it cannot tell from chance: amber, so nobody reads it as
        # all clear.
        return "ON-TRACK (inconclusive drop)", AMBER, lines
    return word, RED if regressed else GREEN, lines


def _interval_words(report: Any) -> str:
    interval = _interval(report)
    if interval is None:
        return " (no interval: fewer than 2 scores on a side)"
    low, high, kind = interval
    return f" (95% interval {_signed(low)} to {_signed(high)}, {kind})"


def _interval(report: Any) -> tuple[float, float, str] | None:
    """The interval the verdict rests on: paired over matched cases when there is one."""
    paired = report.paired
    if paired is not None and paired.ci_low is not None and paired.ci_high is not None:
        return paired.ci_low, paired.ci_high, f"paired over {paired.n} cases"
    if report.ci_low is not None and report.ci_high is not None:
        return report.ci_low, report.ci_high, "two-sample"
    return None


# -- header ---------------------------------------------------------------------------------


def _meta(data: ReportData) -> str:
    run = data.current
    sets = ", ".join(run.eval_set_ids) or "(none)"
    parts = [
        f"run <code>{esc(run.id)}</code>",
        (
            f"target <code>{esc(run.target)}</code>"
            + (f" version <code>{esc(run.target_version)}</code>" if run.target_version else "")
            if run.target
            else f"model <code>{esc(run.model)}</code>"
        )
        + (f" judged by <code>{esc(run.judge_model)}</code>" if run.judge_model else ""),
        f"eval set{_s(len(run.eval_set_ids))} {esc(sets)}",
        f"started {esc(_when(run.started_at))}",
    ]
    # Where the run came from (docs/ci.md): what a CI reader finds the run by.
    if run.label:
        parts.append(f"label <code>{esc(run.label)}</code>")
    if run.commit:
        parts.append(f'commit <code title="{esc(run.commit)}">{esc(_sha(run.commit))}</code>')
    if run.branch:
        parts.append(f"branch <code>{esc(run.branch)}</code>")
    if run.agent_id:
        parts.append(f"agent <code>{esc(run.agent_id)}</code>")
    if not run.complete:
        parts.append("<strong>incomplete run</strong> (interrupted)")
    if data.baseline is not None:
        parts.append(
            f"baseline <code>{esc(_baseline_name(data))}</code> of run "
            f"<code>{esc(_short(data.baseline.run_id))}</code>"
            + (f" ({esc(data.baseline_source)})" if data.baseline_source != "given" else "")
        )
    return f'<p class="meta">{" &middot; ".join(parts)}</p>'


def _cards(data: ReportData) -> str:
    run = data.current
    report = data.result.stats if data.result else None
    cards = [
        (
            "mean score",
            fmt_score(run.mean_score),
            f"{len(run.measured)} measured, {len(run.unmeasured)} unmeasured",
        ),
    ]
    matched = data.result.matched if data.result is not None and report is not None else 0
    if report is not None and matched != len(run.measured):
        # The delta is over the matched cases: say what the run scored on those.
        label, value, sub = cards[0]
        cards[0] = (label, value, f"{sub}; {report.mean_score:.3f} on the {matched} matched")
    if data.baseline is not None:
        total = len(data.baseline.cases)
        if report is not None and matched != total:
            # Mean, baseline and delta cards must add up: show the baseline on the same cases.
            cards.append(
                (
                    "baseline",
                    f"{report.baseline_mean:.3f}",
                    f"on the {matched} matched of its {total} cases "
                    f"(all {total}: {data.baseline.mean:.3f})",
                )
            )
        else:
            cards.append(("baseline", f"{data.baseline.mean:.3f}", f"{total} cases"))
    if report is not None:
        interval = _interval(report)
        cards.append(
            (
                "delta",
                _signed(report.delta),
                f"95%: {_signed(interval[0])} to {_signed(interval[1])}"
                if interval
                else "no interval: fewer than 2 scores a side",
            )
        )
    passed = sum(1 for score in run.scores if score.passed)
    below = [score for score in run.scores if score.passed is False]
    # As the pytest summary counts them: below the bar in the baseline too is xfailed.
    base = data.baseline.case_map() if data.baseline is not None else {}
    known = sum(1 for score in below if score.key in base and base[score.key].passed is False)
    sub = f"{len(below) - known} below their bar"
    if known:
        sub += f", {known} below it as in the baseline"
    cards.append(("cases passed", f"{passed}", sub))
    cards.append(
        (
            "cost",
            fmt_usd(run.total_cost_usd),
            f"model {fmt_usd(run.model_cost_usd)}, judge {fmt_usd(run.judge_cost_usd)}; "
            f"{run.total_tokens:,} tokens",
        )
    )
    return (
        '<div class="cards">'
        + "".join(
            f'<div class="card"><div class="label">{esc(label)}</div>'
            f'<div class="value">{esc(value)}</div><div class="sub">{esc(sub)}</div></div>'
            for label, value, sub in cards
        )
        + "</div>"
    )


# -- score over runs --------------------------------------------------------------------------


def _timeline_section(data: ReportData) -> str:
    series = data.series
    points = [
        TimelinePoint(
            when=run.started_at,
            mean=run.mean_score,
            complete=run.complete,
            label=f"run {_short(run.id)} · {_when(run.started_at)} · mean "
            f"{fmt_score(run.mean_score)} over {run.cases} cases"
            + (f" · commit {_sha(run.commit)}" if run.commit else "")
            + ("" if run.complete else " · incomplete"),
            commit=_sha(run.commit) if run.commit else None,
        )
        for run in series
    ]
    index = {run.id: position for position, run in enumerate(series)}
    baseline = data.baseline
    report = data.result.stats if data.result else None
    band = _baseline_band(baseline.cases if baseline else ())
    whisker = None
    interval = _interval(report) if report is not None else None
    if baseline is not None and interval is not None:
        whisker = (baseline.mean + interval[0], baseline.mean + interval[1])
    colour = BLUE if report is None else _verdict(data)[1]
    svg = timeline_svg(
        points,
        baseline_mean=baseline.mean if baseline else None,
        baseline_name=_baseline_name(data),
        band=band,
        whisker=whisker,
        baseline_at=index.get(baseline.run_id) if baseline else None,
        current_at=index.get(data.current.id),
        current_colour=colour,
    )
    sets = ", ".join(data.current.eval_set_ids)
    caption = [
        f"{len(series)} run{_s(len(series))} of model {esc(data.current.model)} on "
        f"{esc(sets)}, oldest on the left, evenly spaced; hover a point for its run. Hollow "
        "points are interrupted runs; a gap is a run with nothing measured."
    ]
    if data.mixed_sets:
        caption.append(
            "Some of these runs covered other eval sets as well: a point is the mean over "
            "every case of its run."
        )
    if baseline is not None:
        caption.append(
            f"The dashed line is the baseline mean ({baseline.mean:.3f})"
            + (
                f"; the shaded band is its 95% confidence interval, ±{_Z95:.2f} standard "
                f"errors over its {len(baseline.cases)} case scores (how precisely the "
                "baseline itself is known)"
                if band
                else ""
            )
            + "."
        )
    if whisker is not None and interval is not None:
        caption.append(
            "The whisker on the ringed latest run is the 95% interval of its drift "
            f"(current minus baseline, {esc(interval[2])}) drawn from the baseline line: when "
            "the whole whisker sits below the line, the drop is more than chance."
        )
    return (
        '<h2 id="timeline">Mean score per run</h2>'
        f"<figure>{svg}<figcaption>{' '.join(caption)}</figcaption></figure>"
    )


def _baseline_band(cases: Sequence[Any]) -> tuple[float, float] | None:
    values = [case.value for case in cases]
    if len(values) < 2:
        return None
    mean = math.fsum(values) / len(values)
    half = _Z95 * statistics.stdev(values) / math.sqrt(len(values))
    return max(0.0, mean - half), min(1.0, mean + half)


# -- per grader -------------------------------------------------------------------------------


def _graders_section(data: ReportData) -> str:
    by_grader: dict[str, list[Score]] = defaultdict(list)
    for score in data.current.scores:
        by_grader[score.grader].append(score)
    if not by_grader:
        return (
            '<h2 id="graders">Score distribution per grader</h2>'
            "<p class=note>The run has no cases.</p>"
        )
    cards = []
    for grader in sorted(by_grader):
        scores = by_grader[grader]
        values = [score.value for score in scores if score.value is not None]
        unmeasured = len(scores) - len(values)
        mean = math.fsum(values) / len(values) if values else None
        svg = (
            histogram_svg(values)
            if values
            else '<p class="note">Nothing measured by this grader.</p>'
        )
        cards.append(
            f'<div class="grader"><h3>{esc(grader)}</h3>'
            f'<div class="sub">{len(values)} measured, mean {esc(fmt_score(mean))}'
            + (f", {unmeasured} unmeasured" if unmeasured else "")
            + f"</div>{svg}</div>"
        )
    return (
        '<h2 id="graders">Score distribution per grader (latest run)</h2>'
        f'<div class="graders">{"".join(cards)}</div>'
        "<figcaption>Cases per score bin of width 0.1 (a score of 1.0 counts in the last "
        "bin); the dotted line is the grader's mean. Unmeasured cases are counted apart, "
        "never as 0.</figcaption>"
    )


# -- cases ------------------------------------------------------------------------------------


def _rows(data: ReportData) -> list[_Row]:
    base = data.baseline.case_map() if data.baseline else {}
    result = data.result
    deltas = {item.key: item for item in result.deltas} if result else {}
    changed = set(result.changed) if result else set()
    rows = []
    for score in data.current.scores:
        key = score.key
        known = base.get(key)
        base_value = known.value if known else None
        if score.value is None:
            rows.append(_Row(score, base_value, None, None, "unmeasured"))
        elif known is None:
            rows.append(_Row(score, None, score.value, None, "new"))
        elif key in changed or (
            known.fingerprint and score.fingerprint and known.fingerprint != score.fingerprint
        ):
            rows.append(_Row(score, base_value, score.value, None, "edited"))
        else:
            item = deltas.get(key)
            current = item.current if item else score.value
            delta = current - known.value
            status = "drop" if delta < -1e-12 else ("gain" if delta > 1e-12 else "same")
            rows.append(_Row(score, known.value, current, delta, status))
    return rows


def _order(row: _Row) -> tuple[object, ...]:
    # Natural order: HumanEval/18 before HumanEval/106.
    return score_order(row.score.eval_set_id, row.score.case_id)


def _cases_section(data: ReportData) -> str:
    rows = _rows(data)
    if not rows:
        return '<h2 id="cases">Cases</h2><p class=note>The run has no cases.</p>'
    if data.baseline is None:
        # Nothing to change against: the lowest scores are what to read first.
        ordered = sorted(
            rows, key=lambda row: (row.current is not None, row.current or 0.0, _order(row))
        )
        return (
            '<h2 id="cases">Cases, lowest score first</h2>'
            "<p class=note>No baseline, so no change to sort by.</p>" + _table(ordered)
        )
    group = {"drop": 0, "unmeasured": 1, "edited": 2, "gain": 3}
    result = data.result
    # Significant drops first (docs/statistics.md, "Which cases regressed").
    marks = (
        {
            row.score.key: result.drop_words(row.score.key)
            for row in rows
            if row.status == "drop" and row.score.key in result.case_drops
        }
        if result is not None
        else {}
    )
    moved = sorted(
        (row for row in rows if row.status in group),
        key=lambda row: (
            group[row.status],
            not marks.get(row.score.key, "").startswith("significant"),
            row.delta if row.status == "drop" else -(row.delta or 0.0),
            _order(row),
        ),
    )
    new = sorted((row for row in rows if row.status == "new"), key=_order)
    same = sorted((row for row in rows if row.status == "same"), key=_order)
    counts: defaultdict[str, int] = defaultdict(int)
    for row in rows:
        counts[row.status] += 1
    summary = (
        f"{counts['drop']} dropped, {counts['gain']} rose, {counts['same']} unchanged, "
        f"{counts['unmeasured']} unmeasured now, {counts['edited']} edited since the baseline "
        f"(not compared), {counts['new']} not in the baseline."
    )
    parts = [
        '<h2 id="cases">Cases by change against the baseline</h2>',
        f"<p>{esc(summary)}</p>",
    ]
    removed = data.result.removed if data.result else ()
    if removed:
        more = f" and {len(removed) - 20} more" if len(removed) > 20 else ""
        shown = ", ".join(removed[:20]) + more
        parts.append(f"<p class=note>In the baseline but not in this run: {esc(shown)}.</p>")
    if moved:
        parts.append(
            "<p class=note>Significant drops first, then the other drops, biggest first, "
            "then cases no longer measured, cases edited since the baseline, and gains, "
            "biggest first.</p>" + _table(moved, marks)
        )
    else:
        parts.append("<p class=note>No case moved.</p>")
    for title, group_rows in (
        ("Not in the baseline", new),
        ("Unchanged", same),
    ):
        if group_rows:
            parts.append(
                f'<details class="more"><summary>{esc(title)} ({len(group_rows)})</summary>'
                + _table(group_rows)
                + "</details>"
            )
    return "".join(parts)


def _table(rows: Iterable[_Row], marks: Mapping[str, str] | None = None) -> str:
    """`marks`: a drop test's words by case key (`significant drop`, `within noise`)."""
    body = []
    marks = marks or {}
    for row in rows:
        score = row.score
        if row.delta is None:
            delta = {
                "unmeasured": '<span class="tag">unmeasured</span>',
                "edited": '<span class="tag">edited</span>',
                "new": '<span class="tag">new</span>',
            }.get(row.status, "")
        else:
            delta = f'<span class="{_trend(row.delta)}">{_signed(row.delta)}</span>'
            mark = marks.get(score.key)
            if mark is not None:
                delta += f'<div class="tag">{esc(mark)}</div>'
        body.append(
            f"<tr><td>{esc(score.case_id)}<div class=set>{esc(score.eval_set_id)}</div></td>"
            f'<td class="num">{_cell(row.baseline)}</td>'
            f'<td class="num">{_cell(row.current)}</td>'
            f'<td class="num">{delta}</td>'
            f"<td>{esc(score.grader)}</td><td>{_details(score)}</td></tr>"
        )
    return (
        '<table class="cases"><thead><tr><th>case</th><th class="num">baseline</th>'
        '<th class="num">current</th><th class="num">delta</th><th>grader</th>'
        "<th>output / expected / reason</th></tr></thead><tbody>"
        + "".join(body)
        + "</tbody></table>"
    )


def _details(score: Score) -> str:
    parts = []
    for title, text in (
        ("unmeasured", score.unmeasured),
        ("output", score.output),
        ("expected", score.expected),
        ("reason", score.reason),
    ):
        turns = dialogue_html(_cut(text)) if text and title == "output" else None
        if turns is not None:
            parts.append(f"<dt>transcript</dt><dd>{turns}</dd>")
        elif text:
            parts.append(f"<dt>{title}</dt><dd><pre>{esc(_cut(text))}</pre></dd>")
    if score.samples:
        samples = ", ".join(f"{value:.2f}" for value in score.samples)
        parts.append(f"<dt>samples</dt><dd>{esc(samples)}</dd>")
    if score.checks:
        parts.append(f"<dt>checks</dt><dd>{_checks_table(score)}</dd>")
    if not parts:
        return '<span class="note">nothing recorded</span>'
    return f"<details><summary>view</summary><dl>{''.join(parts)}</dl></details>"


def _checks_table(score: Score) -> str:
    """A multi-check case's checks: what each read, its score and weight, and why."""
    rows = []
    for number, check in enumerate(score.checks, start=1):
        shown = "unmeasured" if check.value is None else f"{check.value:.3f}"
        why = check.unmeasured or check.reason or ""
        rows.append(
            f'<tr><td class="num">{number}</td><td>{esc(check.grader)}</td>'
            f'<td>{esc(check.on or "")}</td><td class="num">{esc(shown)}</td>'
            f'<td class="num">{esc(f"{check.weight:g}")}</td>'
            f"<td><pre>{esc(_cut(why))}</pre></td></tr>"
        )
    return (
        '<table class="checks"><thead><tr><th class="num">#</th><th>grader</th><th>on</th>'
        '<th class="num">score</th><th class="num">weight</th><th>reason</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _cut(text: str) -> str:
    if len(text) <= _TEXT_LIMIT:
        return text
    return f"{text[:_TEXT_LIMIT]}\n… ({len(text) - _TEXT_LIMIT:,} more characters in the store)"


# -- spend ------------------------------------------------------------------------------------


def _cost_section(data: ReportData) -> str:
    series = data.series
    spent = any(run.model_cost_usd or run.judge_cost_usd for run in series)
    parts = ['<h2 id="cost">Cost and tokens per run</h2>']
    if spent:
        bars = [
            CostBar(
                when=run.started_at,
                model_usd=run.model_cost_usd,
                judge_usd=run.judge_cost_usd,
                label=f"run {_short(run.id)} · {_when(run.started_at)} · model "
                f"{fmt_usd(run.model_cost_usd)}, judge {fmt_usd(run.judge_cost_usd)}, "
                f"{run.total_tokens:,} tokens",
            )
            for run in series
        ]
        total = math.fsum(run.model_cost_usd + run.judge_cost_usd for run in series)
        parts.append(
            f"<figure>{cost_svg(bars)}<figcaption>Dollars per run, model spend (blue) with "
            f"judge spend (orange) stacked on top; {fmt_usd(total)} over the "
            f"{len(series)} run{_s(len(series))} shown.</figcaption></figure>"
        )
    else:
        parts.append(
            "<p class=note>No spend recorded in these runs (the stub model, recorded outputs "
            "and cached answers cost nothing).</p>"
        )
    recent = list(reversed(series))[:_RUN_ROWS]
    # Provenance columns only when some run recorded where it came from.
    provenance = any(run.label or run.commit or run.branch for run in recent)
    rows = []
    for run in recent:
        css = ' class="current"' if run.id == data.current.id else ""
        origin = ""
        if provenance:
            origin = "".join(
                f"<td>{value}</td>"
                for value in (
                    esc(run.label or ""),
                    f'<code title="{esc(run.commit)}">{esc(_sha(run.commit))}</code>'
                    if run.commit
                    else "",
                    esc(run.branch or ""),
                )
            )
        rows.append(
            f"<tr{css}><td>{esc(_when(run.started_at))}</td><td><code>{esc(_short(run.id))}"
            f"</code>{'' if run.complete else ' <span class=tag>incomplete</span>'}</td>"
            + origin
            + f'<td class="num">{run.cases}</td><td class="num">{run.unmeasured}</td>'
            f'<td class="num">{esc(fmt_score(run.mean_score))}</td>'
            f'<td class="num">{run.total_tokens:,}</td>'
            f'<td class="num">{esc(fmt_usd(run.model_cost_usd))}</td>'
            f'<td class="num">{esc(fmt_usd(run.judge_cost_usd))}</td>'
            f'<td class="num">{esc(fmt_usd(run.model_cost_usd + run.judge_cost_usd))}</td></tr>'
        )
    more = len(series) - len(recent)
    parts.append(
        "<table><thead><tr><th>started</th><th>run</th>"
        + ("<th>label</th><th>commit</th><th>branch</th>" if provenance else "")
        + '<th class="num">measured</th>'
        '<th class="num">unmeasured</th><th class="num">mean</th><th class="num">tokens</th>'
        '<th class="num">model</th><th class="num">judge</th><th class="num">total</th>'
        "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )
    if more > 0:
        parts.append(
            f"<p class=note>The {len(recent)} newest runs; {more} older ones are in the chart "
            "and in <code>verdryx runs</code>.</p>"
        )
    return "".join(parts)


def _outcomes_section(data: ReportData) -> str:
    if data.traces is None:
        return ""
    parts = ['<h2 id="outcomes">Cost per outcome</h2>']
    if data.costs is None:
        parts.append(f"<p class=note>{esc(_sentence(data.traces_note or 'no traces read'))}</p>")
        return "".join(parts)
    costs = data.costs
    rows = [
        f"<tr><td>{esc(row.outcome)}</td><td class=num>{row.count:,}</td>"
        f"<td class=num>{esc(fmt_usd(row.total_cost_usd))}</td>"
        f"<td class=num>{esc(fmt_usd(row.mean_cost_usd))}</td></tr>"
        for row in costs.ordered()
    ]
    overall = costs.overall
    rows.append(
        f"<tr><td><strong>overall</strong></td><td class=num>{overall.count:,}</td>"
        f"<td class=num>{esc(fmt_usd(overall.total_cost_usd))}</td>"
        f"<td class=num>{esc(fmt_usd(overall.mean_cost_usd))}</td></tr>"
    )
    headline = costs.headline()
    if headline.usd_per_resolved is not None:
        parts.append(
            f"<p>Every resolved case costs <strong>{esc(fmt_usd(headline.usd_per_resolved))}"
            "</strong> once all spend is paid for, failures included"
            + (
                f"; {headline.abandoned_share:.0%} of spend went to abandoned runs"
                if headline.abandoned_share is not None
                else ""
            )
            + ".</p>"
        )
    parts.append(
        '<table><thead><tr><th>outcome</th><th class="num">runs</th>'
        '<th class="num">total</th><th class="num">mean</th></tr></thead><tbody>'
        + "".join(rows)
        + "</tbody></table>"
        f"<p class=note>From <code>{esc(data.traces)}</code>: the last non-empty outcome tag "
        "of each run wins; untagged runs are kept as (untagged).</p>"
    )
    return "".join(parts)


# -- words ------------------------------------------------------------------------------------


def _baseline_name(data: ReportData) -> str:
    if data.baseline is None:
        return "baseline"
    return data.baseline.label or _short(data.baseline.id)


def _run_name(data: ReportData) -> str:
    return f"run {_short(data.current.id)} of {data.current.model}"


def _short(run_id: str) -> str:
    return run_id[:8]


def _sha(commit: str) -> str:
    """A commit as git shows it short: its first 7 characters."""
    return commit[:7]


def _when(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _signed(value: float) -> str:
    # A true minus sign: a hyphen next to a digit reads as a dash.
    return f"{value:+.3f}".replace("-", "\u2212")


def _trend(delta: float) -> str:
    return "down" if delta < -1e-12 else ("up" if delta > 1e-12 else "flat")


def _cell(value: float | None) -> str:
    return "&ndash;" if value is None else f"{value:.3f}"


def _s(count: int) -> str:
    return "" if count == 1 else "s"


def _sentence(text: str) -> str:
    text = text.strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else f"{text}."
