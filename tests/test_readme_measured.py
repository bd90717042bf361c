"""README's "Measured" is a table a user reads: at most 10 rows of one figure each, every row
linking the section of benchmarks/README.md that holds its conditions, load averages and
history; and every `verdryx` command is named once in the README."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _section(text: str, title: str) -> str:
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    return re.sub(r"[^a-z0-9 \-]", "", heading.strip().lower()).replace(" ", "-")


def test_measured_is_ten_rows_of_one_figure_each_linking_their_details() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = [
        line
        for line in _section(readme, "Measured").splitlines()
        if line.startswith("| ") and not line.startswith(("| what", "|---"))
    ]
    assert 1 <= len(rows) <= 10
    details = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    anchors = {_slug(line[3:]) for line in details.splitlines() if line.startswith("## ")}
    for row in rows:
        what, figure, link = (cell.strip() for cell in row.strip("|").split(" | "))
        assert what and len(figure) <= 60, row  # one figure, not a paragraph
        found = re.fullmatch(r"\[[^\]]+\]\(benchmarks/README\.md#([a-z0-9-]+)\)", link)
        assert found is not None and found.group(1) in anchors, row


def test_every_command_is_named_once() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "verdryx_core.cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    listing = done.stdout.split("positional arguments:", 1)[1].split("options:", 1)[0]
    commands = re.findall(r"^    ([a-z][a-z-]+)", listing, flags=re.MULTILINE)
    assert len(commands) >= 15
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    [bullet] = [part for part in readme.split("\n- ") if part.startswith("**The CLI**")]
    for command in commands:
        named = "events verify" if command == "events" else command
        assert bullet.count(f"`{named}`") == 1, command
