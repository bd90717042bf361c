"""The HTML report names where runs came from: the run header carries the current run's label,
short commit and branch, the history table has them per run, and the score chart's x-axis
names commits when the runs recorded them (docs/ci.md)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

from tests.history_support import GOOD, make_run
from verdryx_core.reporting.html import write_report
from verdryx_core.store import Store

SHAS = ["1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d", "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432"]


def _page(tmp_path: Path, *, with_commits: bool) -> str:
    db = tmp_path / "verdryx.db"
    with Store.open(db) as store:
        for day, run_id in enumerate(["a1111111-run", "b2222222-run"]):
            run = make_run(run_id, GOOD, day=day)
            if with_commits:
                run = replace(run, label=f"nightly-{day}", commit=SHAS[day], branch="main")
            store.save_run(run)
        path = write_report(store, tmp_path / "report.html")
    return path.read_text(encoding="utf-8")


def _axis_labels(page: str) -> list[str]:
    svgs = [ET.fromstring(text) for text in re.findall(r"<svg\b.*?</svg>", page, re.S)]
    (chart,) = [svg for svg in svgs if svg.get("aria-label") == "mean score per run"]
    # The x-axis ticks are the text elements centred under the plot.
    return [
        "".join(text.itertext())
        for text in chart.iter()
        if text.tag.rsplit("}", 1)[-1] == "text" and text.get("text-anchor") == "middle"
    ]


def test_the_header_and_history_table_show_label_commit_and_branch(tmp_path: Path) -> None:
    page = _page(tmp_path, with_commits=True)
    meta = re.search(r'<p class="meta">(.*?)</p>', page, re.S)
    assert meta is not None
    header = meta.group(1)
    # The header is about the newest run: its label, short commit (full one on hover), branch.
    assert "label <code>nightly-1</code>" in header
    assert f'commit <code title="{SHAS[1]}">9f8e7d6</code>' in header
    assert "branch <code>main</code>" in header
    assert "nightly-0" not in header

    table = page.split("<th>started</th>", 1)[1].split("</table>", 1)[0]
    assert "<th>label</th><th>commit</th><th>branch</th>" in table
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", table.split("<tbody>", 1)[1], re.S)
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S) for row in rows]
    # Newest first: run, label, commit, branch after the start time.
    assert [row[2] for row in cells] == ["nightly-1", "nightly-0"]
    assert [re.sub(r"<[^>]+>", "", row[3]) for row in cells] == ["9f8e7d6", "1a2b3c4"]
    assert [row[4] for row in cells] == ["main", "main"]


def test_the_chart_axis_names_commits_when_runs_have_them(tmp_path: Path) -> None:
    assert _axis_labels(_page(tmp_path, with_commits=True)) == ["1a2b3c4", "9f8e7d6"]


def test_without_provenance_the_axis_shows_times_and_no_columns(tmp_path: Path) -> None:
    page = _page(tmp_path, with_commits=False)
    labels = _axis_labels(page)
    assert len(labels) == 2 and all(re.fullmatch(r"\d{4}-\d\d-\d\d", label) for label in labels)
    assert "<th>commit</th>" not in page
    assert "commit <code" not in page
