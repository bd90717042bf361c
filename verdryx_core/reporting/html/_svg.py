"""Hand-built inline SVG for the report: score over runs, per-grader histograms, spend bars.

No plotting dependency, and no namespace URL on the `<svg>` element: inline SVG inside HTML
needs none, and the report promises to carry no URL at all. Every piece of text that
reaches the markup goes through `esc`, so the charts are also well-formed XML (the tests
parse them with `xml.etree`).
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from verdryx_core.untrusted.text import printable

__all__ = [
    "AMBER",
    "BLUE",
    "GREEN",
    "GREY",
    "ORANGE",
    "RED",
    "CostBar",
    "TimelinePoint",
    "cost_svg",
    "esc",
    "histogram_svg",
    "timeline_svg",
]

GREEN: Final = "#1a7f37"
AMBER: Final = "#9a6700"
RED: Final = "#cf222e"
GREY: Final = "#57606a"
BLUE: Final = "#0969da"
ORANGE: Final = "#bc4c00"
_INK: Final = "#24292f"
_RULE: Final = "#d0d7de"
_PAPER: Final = "#f6f8fa"

#: Characters XML 1.0 forbids even as references; model output can carry them (ANSI escapes).
_NOT_XML: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def esc(text: object) -> str:
    """Text made safe for HTML and for XML: shown by the printable rule that terminals and CI
    logs use (a control or bidi character reads as its escape, `\\x1b`, `\\u202e`, so the
    page shows what the model wrote rather than what it hides), escaped, and without the
    characters XML rejects (a stray escape byte in a model's output must not break the
    page)."""
    return html.escape(_NOT_XML.sub("\ufffd", printable(str(text))), quote=True)


def _num(value: float) -> str:
    return f"{value:.1f}"


@dataclass(frozen=True, slots=True, kw_only=True)
class TimelinePoint:
    when: datetime
    mean: float | None
    complete: bool
    #: The tooltip: which run, when, what it scored.
    label: str
    #: The run's short commit, when it recorded one: the x-axis names commits then.
    commit: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CostBar:
    when: datetime
    model_usd: float
    judge_usd: float
    label: str


@dataclass(frozen=True, slots=True)
class _Frame:
    """A plot area inside an SVG of `width` x `height`."""

    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int

    @property
    def inner_width(self) -> int:
        return self.width - self.left - self.right

    @property
    def inner_height(self) -> int:
        return self.height - self.top - self.bottom

    def x_at(self, index: int, count: int) -> float:
        if count <= 1:
            return self.left + self.inner_width / 2
        return self.left + self.inner_width * index / (count - 1)

    def y_at(self, value: float, low: float, high: float) -> float:
        share = (value - low) / (high - low) if high > low else 0.5
        return self.top + self.inner_height * (1 - share)


def _open(frame: _Frame, label: str) -> list[str]:
    return [
        f'<svg class="chart" viewBox="0 0 {frame.width} {frame.height}" '
        f'width="{frame.width}" height="{frame.height}" role="img" aria-label="{esc(label)}" '
        'font-family="system-ui, sans-serif" font-size="12">',
        f"<title>{esc(label)}</title>",
        f'<rect x="{frame.left}" y="{frame.top}" width="{frame.inner_width}" '
        f'height="{frame.inner_height}" fill="{_PAPER}"/>',
    ]


def _nice_step(span: float, target: int) -> float:
    """A 1-2-2.5-5 step giving about `target` ticks over `span`."""
    raw = span / max(target, 1)
    power = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * power:
            return factor * power
    return 10 * power


def _ticks(low: float, high: float, target: int = 5) -> list[float]:
    step = _nice_step(high - low, target)
    first = math.ceil(low / step - 1e-9) * step
    ticks = []
    value = first
    while value <= high + 1e-9:
        ticks.append(round(value, 10))
        value += step
    return ticks


def _tick_text(value: float, step: float) -> str:
    """As many decimals as the step needs: 0.05 -> 2, 0.025 -> 3, 2 -> 0."""
    power = math.floor(math.log10(step))
    half_step = abs(step / 10**power - 2.5) < 1e-9
    decimals = max(0, min(6, -power + (1 if half_step else 0)))
    return f"{value:.{decimals}f}"


def _score_range(values: Sequence[float]) -> tuple[float, float]:
    """The y range: the data padded by a tenth, at least 0.1 tall, inside [0, 1]; a fixed
    0-1 axis would flatten the few hundredths that matter into one line."""
    low, high = min(values), max(values)
    span = max(high - low, 0.1)
    low, high = low - span * 0.1, high + span * 0.1
    if high > 1:
        low, high = low - (high - 1), 1.0
    if low < 0:
        high, low = min(1.0, high - low), 0.0
    return max(0.0, low), min(1.0, high)


def _time_labels(
    whens: Sequence[datetime],
    frame: _Frame,
    slots: int = 6,
    commits: Sequence[str | None] | None = None,
) -> list[str]:
    """Tick labels under the plot: the runs' commits when every ticked run has one (what a
    CI reader knows a run by), else the shortest time format that tells the ticks apart."""
    count = len(whens)
    if not count:
        return []
    shown = sorted({round(i * (count - 1) / max(slots - 1, 1)) for i in range(slots)})
    if count == 1:
        shown = [0]
    named = [commits[index] for index in shown] if commits is not None else []
    if named and all(named):
        labels = [str(commit) for commit in named]
    else:
        labels = _distinct_labels([whens[index] for index in shown], [index + 1 for index in shown])
    parts = []
    baseline_y = frame.height - frame.bottom + 16
    for index, label in zip(shown, labels, strict=True):
        x = frame.x_at(index, count)
        parts.append(
            f'<line x1="{_num(x)}" y1="{frame.height - frame.bottom}" x2="{_num(x)}" '
            f'y2="{frame.height - frame.bottom + 4}" stroke="{GREY}"/>'
            f'<text x="{_num(x)}" y="{baseline_y}" text-anchor="middle" fill="{GREY}">'
            f"{esc(label)}</text>"
        )
    return parts


def _distinct_labels(whens: Sequence[datetime], numbers: Sequence[int]) -> list[str]:
    """The shortest time format that tells the ticks apart; run numbers when none does
    (a burst of runs within one second)."""
    if whens and whens[0].date() != whens[-1].date():
        formats = ("%Y-%m-%d", "%Y-%m-%d %H:%M")
    else:
        formats = ("%H:%M", "%H:%M:%S")
    for fmt in formats:
        labels = [moment.strftime(fmt) for moment in whens]
        if len(set(labels)) == len(labels):
            return labels
    return [f"run {number}" for number in numbers]


def _y_axis(frame: _Frame, low: float, high: float, fmt: str = "") -> list[str]:
    ticks = _ticks(low, high)
    step = ticks[1] - ticks[0] if len(ticks) > 1 else max(high - low, 0.01)
    parts = []
    for tick in ticks:
        y = frame.y_at(tick, low, high)
        text = f"{fmt}{_tick_text(tick, step)}"
        parts.append(
            f'<line x1="{frame.left}" y1="{_num(y)}" x2="{frame.width - frame.right}" '
            f'y2="{_num(y)}" stroke="{_RULE}"/>'
            f'<text x="{frame.left - 6}" y="{_num(y + 4)}" text-anchor="end" fill="{GREY}">'
            f"{esc(text)}</text>"
        )
    return parts


def timeline_svg(
    points: Sequence[TimelinePoint],
    *,
    baseline_mean: float | None = None,
    baseline_name: str = "baseline",
    band: tuple[float, float] | None = None,
    whisker: tuple[float, float] | None = None,
    baseline_at: int | None = None,
    current_at: int | None = None,
    current_colour: str = BLUE,
) -> str:
    """Mean score per run, oldest left; the baseline as a dashed line over its band; the
    current run ringed in its verdict's colour with the drift interval as a whisker."""
    frame = _Frame(width=960, height=320, left=52, right=150, top=14, bottom=34)
    measured = [point.mean for point in points if point.mean is not None]
    extent = list(measured)
    for pair in (band, whisker):
        if pair is not None:
            extent.extend(pair)
    if baseline_mean is not None:
        extent.append(baseline_mean)
    low, high = _score_range(extent or [0.0, 1.0])
    count = len(points)
    out = _open(frame, "mean score per run")
    out += _y_axis(frame, low, high)

    def y(value: float) -> str:
        return _num(frame.y_at(min(max(value, low), high), low, high))

    if band is not None:
        top = frame.y_at(min(band[1], high), low, high)
        bottom = frame.y_at(max(band[0], low), low, high)
        out.append(
            f'<rect class="band" x="{frame.left}" y="{_num(top)}" width="{frame.inner_width}" '
            f'height="{_num(max(bottom - top, 1.0))}" fill="{GREEN}" fill-opacity="0.14"/>'
        )
    if baseline_at is not None and 0 <= baseline_at < count:
        x = _num(frame.x_at(baseline_at, count))
        out.append(
            f'<line x1="{x}" y1="{frame.top}" x2="{x}" y2="{frame.height - frame.bottom}" '
            f'stroke="{GREEN}" stroke-dasharray="2 3"/>'
            f'<text x="{x}" y="{frame.top + 11}" dx="4" fill="{GREEN}">baseline run</text>'
        )
    if baseline_mean is not None:
        yb = y(baseline_mean)
        out.append(
            f'<line class="baseline" x1="{frame.left}" y1="{yb}" '
            f'x2="{frame.width - frame.right}" y2="{yb}" stroke="{GREEN}" stroke-width="1.5" '
            'stroke-dasharray="6 4"/>'
            f'<text x="{frame.width - frame.right + 6}" y="{_num(float(yb) + 4)}" fill="{GREEN}">'
            f"{esc(baseline_name)} {baseline_mean:.3f}</text>"
        )
    # A run without a measured case breaks the line: joining across it would invent a trend.
    segment: list[str] = []
    segments: list[list[str]] = []
    for index, point in enumerate(points):
        if point.mean is None:
            if segment:
                segments.append(segment)
            segment = []
            continue
        segment.append(f"{_num(frame.x_at(index, count))},{y(point.mean)}")
    if segment:
        segments.append(segment)
    for part in segments:
        if len(part) > 1:
            out.append(
                f'<polyline class="series" points="{" ".join(part)}" fill="none" '
                f'stroke="{BLUE}" stroke-width="1.5" stroke-linejoin="round"/>'
            )
    radius = 3.5 if count <= 120 else (2.0 if count <= 400 else 1.2)
    for index, point in enumerate(points):
        if point.mean is None or index == current_at:
            continue
        fill = BLUE if point.complete else "#ffffff"
        out.append(
            f'<circle cx="{_num(frame.x_at(index, count))}" cy="{y(point.mean)}" r="{radius}" '
            f'fill="{fill}" stroke="{BLUE}"><title>{esc(point.label)}</title></circle>'
        )
    if current_at is not None and 0 <= current_at < count:
        cx = frame.x_at(current_at, count)
        if whisker is not None:
            y_low, y_high = y(whisker[0]), y(whisker[1])
            out.append(
                f'<g class="whisker" stroke="{current_colour}" stroke-width="2">'
                f'<line x1="{_num(cx)}" y1="{y_low}" x2="{_num(cx)}" y2="{y_high}"/>'
                f'<line x1="{_num(cx - 5)}" y1="{y_low}" x2="{_num(cx + 5)}" y2="{y_low}"/>'
                f'<line x1="{_num(cx - 5)}" y1="{y_high}" x2="{_num(cx + 5)}" y2="{y_high}"/></g>'
            )
        current = points[current_at]
        if current.mean is not None:
            out.append(
                f'<circle class="current" cx="{_num(cx)}" cy="{y(current.mean)}" r="6" '
                f'fill="{current_colour}" stroke="#ffffff" stroke-width="2">'
                f"<title>{esc(current.label)}</title></circle>"
            )
    out += _time_labels(
        [point.when for point in points], frame, commits=[point.commit for point in points]
    )
    out.append("</svg>")
    return "".join(out)


def histogram_svg(values: Sequence[float], *, bins: int = 10, colour: str = BLUE) -> str:
    """Counts of scores in `bins` equal bins over [0, 1] (1.0 falls in the last), with the
    mean marked."""
    frame = _Frame(width=300, height=120, left=8, right=8, top=16, bottom=20)
    counts = [0] * bins
    for value in values:
        # The epsilon keeps 0.7 in the 0.7-0.8 bin although 0.7 * 10 may land an ulp short.
        counts[min(int(value * bins + 1e-9), bins - 1)] += 1
    tallest = max(counts) if values else 0
    out = _open(frame, "score distribution")
    width = frame.inner_width / bins
    for index, count in enumerate(counts):
        if not count:
            continue
        height = frame.inner_height * count / tallest
        x = frame.left + index * width
        y = frame.top + frame.inner_height - height
        start, stop = index / bins, (index + 1) / bins
        out.append(
            f'<rect x="{_num(x + 1)}" y="{_num(y)}" width="{_num(width - 2)}" '
            f'height="{_num(height)}" fill="{colour}" fill-opacity="0.8">'
            f"<title>{start:.1f} to {stop:.1f}: {count} case{'s' if count != 1 else ''}</title>"
            f'</rect><text x="{_num(x + width / 2)}" y="{_num(y - 3)}" text-anchor="middle" '
            f'font-size="10" fill="{_INK}">{count}</text>'
        )
    if values:
        mean = math.fsum(values) / len(values)
        x = frame.left + frame.inner_width * mean
        out.append(
            f'<line x1="{_num(x)}" y1="{frame.top - 4}" x2="{_num(x)}" '
            f'y2="{frame.height - frame.bottom}" stroke="{_INK}" stroke-dasharray="3 2">'
            f"<title>mean {mean:.3f}</title></line>"
        )
    base = frame.height - frame.bottom
    for tick in (0.0, 0.5, 1.0):
        x = frame.left + frame.inner_width * tick
        anchor = "start" if tick == 0 else ("end" if tick == 1 else "middle")
        out.append(
            f'<text x="{_num(x)}" y="{base + 14}" text-anchor="{anchor}" font-size="10" '
            f'fill="{GREY}">{tick:.1f}</text>'
        )
    out.append(
        f'<line x1="{frame.left}" y1="{base}" x2="{frame.width - frame.right}" y2="{base}" '
        f'stroke="{GREY}"/>'
    )
    out.append("</svg>")
    return "".join(out)


def cost_svg(bars: Sequence[CostBar]) -> str:
    """Spend per run, oldest left: model spend below, judge spend stacked on top."""
    frame = _Frame(width=960, height=220, left=64, right=150, top=14, bottom=34)
    count = len(bars)
    high = max((bar.model_usd + bar.judge_usd for bar in bars), default=0.0) or 1.0
    high *= 1.1
    out = _open(frame, "cost per run")
    out += _y_axis(frame, 0.0, high, fmt="$")
    slot = frame.inner_width / max(count, 1)
    width = max(min(slot * 0.7, 24.0), 0.8)
    for index, bar in enumerate(bars):
        centre = frame.left + slot * (index + 0.5)
        floor = frame.y_at(0.0, 0.0, high)
        model_top = frame.y_at(bar.model_usd, 0.0, high)
        judge_top = frame.y_at(bar.model_usd + bar.judge_usd, 0.0, high)
        title = f"<title>{esc(bar.label)}</title>"
        if bar.model_usd > 0:
            out.append(
                f'<rect x="{_num(centre - width / 2)}" y="{_num(model_top)}" '
                f'width="{_num(width)}" height="{_num(floor - model_top)}" fill="{BLUE}">'
                f"{title}</rect>"
            )
        if bar.judge_usd > 0:
            out.append(
                f'<rect x="{_num(centre - width / 2)}" y="{_num(judge_top)}" '
                f'width="{_num(width)}" height="{_num(model_top - judge_top)}" fill="{ORANGE}">'
                f"{title}</rect>"
            )
    legend_x = frame.width - frame.right + 10
    out.append(
        f'<rect x="{legend_x}" y="{frame.top + 4}" width="10" height="10" fill="{BLUE}"/>'
        f'<text x="{legend_x + 16}" y="{frame.top + 13}" fill="{_INK}">model</text>'
        f'<rect x="{legend_x}" y="{frame.top + 22}" width="10" height="10" fill="{ORANGE}"/>'
        f'<text x="{legend_x + 16}" y="{frame.top + 31}" fill="{_INK}">judge</text>'
    )
    # Bars sit in slots, not on the timeline's points: label the slot centres.
    shifted = _Frame(
        width=frame.width,
        height=frame.height,
        left=int(frame.left + slot / 2),
        right=int(frame.right + slot / 2),
        top=frame.top,
        bottom=frame.bottom,
    )
    out += _time_labels([bar.when for bar in bars], shifted)
    out.append("</svg>")
    return "".join(out)
