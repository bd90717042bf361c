"""The HTML report: one self-contained file, inline CSS and SVG, no URL."""

from __future__ import annotations

from verdryx_core.reporting.html._challenger import ChallengerView
from verdryx_core.reporting.html._collect import ReportData, collect_report, default_baseline
from verdryx_core.reporting.html._html import build_report_html
from verdryx_core.reporting.html._write import write_report

__all__ = [
    "ChallengerView",
    "ReportData",
    "build_report_html",
    "collect_report",
    "default_baseline",
    "write_report",
]
