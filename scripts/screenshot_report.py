"""Render the HTML report of the examples in headless Chromium and save screenshots.

    .venv/bin/python scripts/screenshot_report.py                 # screenshots in a temp dir
    .venv/bin/python scripts/screenshot_report.py --out shots/    # ... or in shots/

Two pages, each screenshotted at 1280x2000:

1. `report-examples.png`: the real path. The example eval sets (copied to a temp dir) run
   through `pytest --verdryx-db=...` six times: a baseline run saved as `v1`, two unchanged
   runs, then three runs whose recorded outputs get progressively worse (some regex answers
   lose the phrase they must contain, some tool traces skip a call). The last run gates on
   `v1` and writes the report with `--verdryx-report`, as a user would.
2. `report-history.png`: a longer synthetic history built directly with `Store.save_run`
   (90 runs over three months, with model and judge spend), so the cost chart has bars.

Needs Debian's `chromium` (`apt-get install -y chromium`); the report itself needs nothing.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from verdryx_core.reporting.html import write_report
from verdryx_core.runs import Baseline, EvalRun, Score
from verdryx_core.store import Store

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")

#: Recorded outputs replaced from the fourth run on; each step keeps the earlier ones.
DEGRADE: tuple[Mapping[tuple[str, str], Any], ...] = (
    {
        ("support", "order-status-late"): "Order 55120 is on its way. Sorry for the wait!",
    },
    {
        ("tools", "lookup-then-refund"): ["issue_refund"],
        ("support", "refund-id-format"): "Done: your refund is on its way.",
    },
    {
        ("support", "refund-window"): "I'm not able to help with refunds, sorry.",
        ("support", "no-refund-after-window"): "Sorry, that order can't be refunded.",
        ("tools", "status-only"): [],
    },
)
FILES = {
    "support": "support/support-agent.evalset.json",
    "tools": "tools/tool-agent.evalset.json",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="where to put the PNGs (default: a temp dir)")
    parser.add_argument("--chromium", type=Path, default=CHROMIUM)
    parser.add_argument(
        "--height", type=int, default=2000, help="window height in pixels (default 2000)"
    )
    args = parser.parse_args()
    if not args.chromium.exists():
        print(
            f"{args.chromium} not found: install Debian's chromium (apt-get install -y chromium)",
            file=sys.stderr,
        )
        return 2
    out = args.out or Path(tempfile.mkdtemp(prefix="verdryx-shots-"))
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="verdryx-report-") as scratch:
        work = Path(scratch)
        examples_html = run_examples(work / "examples-run")
        history_html = synthetic_history(work / "history")
        for html_path, name in (
            (examples_html, "report-examples"),
            (history_html, "report-history"),
        ):
            shutil.copy(html_path, out / f"{name}.html")
            problems, quoted = external_references(html_path.read_text(encoding="utf-8"))
            if problems:
                print(f"{name}: NOT self-contained: {'; '.join(problems)}", file=sys.stderr)
                return 1
            png = out / f"{name}.png"
            screenshot(args.chromium, html_path, png, work / f"profile-{name}", args.height)
            print(f"{name}: {png} ({png.stat().st_size:,} bytes), page {out / (name + '.html')}")
            print(
                f"  self-contained: no script, link, src, href, url() or URL outside the recorded "
                f"outputs ({quoted} URL-like string{'s' if quoted != 1 else ''} inside them, "
                "escaped text)"
            )
    return 0


#: What would make a browser fetch something, or a reader follow a link.
_FETCHES = re.compile(
    r"<script|<link|<img|<iframe|<object|<embed|\bsrc\s*=|\bhref\s*=|url\(|@import|"
    r"https?:|ftp:|//[a-z0-9]",
    re.IGNORECASE,
)
#: Stored text (outputs, expected values, reasons) is shown escaped inside <pre>.
_QUOTED = re.compile(r"<pre>.*?</pre>", re.DOTALL)


def external_references(html: str) -> tuple[list[str], int]:
    """What in the page could reach the network (should be nothing), and how many URL-like
    strings sit inside recorded text, where they are escaped and inert."""
    outside = _QUOTED.sub("", html)
    problems = sorted({match.group(0) for match in _FETCHES.finditer(outside)})
    quoted = sum(len(re.findall(r"https?://", block)) for block in _QUOTED.findall(html))
    return problems, quoted


def run_examples(work: Path) -> Path:
    """Six pytest sessions over a copy of examples/, the last one writing the report."""
    examples = work / "examples"
    shutil.copytree(ROOT / "examples", examples)
    db = work / "verdryx.db"
    report = work / "report.html"
    sessions = 6
    for number in range(1, sessions + 1):
        step = number - 3  # runs 4, 5, 6 apply DEGRADE[0], [0:2], [0:3]
        for changes in DEGRADE[: max(step, 0)]:
            for (name, case_id), output in changes.items():
                set_output(examples / FILES[name], case_id, output)
        extra = ["--verdryx-save-baseline=v1"] if number == 1 else []
        if number == sessions:
            extra = ["--verdryx-baseline=v1", f"--verdryx-report={report}"]
        command = [
            sys.executable,
            "-m",
            "pytest",
            str(examples),
            f"--verdryx-db={db}",
            "-q",
            "-p",
            "no:cacheprovider",
            *extra,
        ]
        done = subprocess.run(command, cwd=work, capture_output=True, text=True, check=False)
        # Exit 1 is expected: the known-bad case fails every run, and the last run regresses.
        if done.returncode not in (0, 1) or (number == sessions and not report.exists()):
            sys.stderr.write(done.stdout + done.stderr)
            raise SystemExit(f"pytest session {number} failed with exit {done.returncode}")
        verdict = [line for line in done.stdout.splitlines() if line.startswith("verdict:")]
        print(f"session {number}: exit {done.returncode} {' '.join(verdict)}".rstrip())
    return report


def set_output(path: Path, case_id: str, output: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    for case in data["cases"]:
        if case["id"] == case_id:
            case["output"] = output
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def synthetic_history(work: Path) -> Path:
    """90 runs of 120 cases over three months: a plateau, a dip after a prompt change, a fix."""
    work.mkdir(parents=True)
    rng = random.Random(7)
    graders = ("exact", "regex", "llm_judge", "tool_trace")
    start = datetime(2026, 9, 1, 9, 0, tzinfo=UTC)
    report = work / "report.html"
    with Store.open(work / "verdryx.db") as store:
        baseline_run = dip_run = None
        for index in range(90):
            quality = 0.86 if index < 55 else (0.74 if index < 75 else 0.84)
            scores = []
            for case in range(120):
                grader = graders[case % len(graders)]
                if grader == "llm_judge":
                    value = min(1.0, max(0.0, rng.gauss(quality, 0.15)))
                    value = round(value * 4) / 4
                else:
                    value = 1.0 if rng.random() < quality else 0.0
                unmeasured = grader == "llm_judge" and rng.random() < 0.01
                scores.append(
                    Score(
                        case_id=f"case-{case:03d}",
                        eval_set_id="support-agent",
                        value=None if unmeasured else value,
                        unmeasured="judge answered 'maybe', not a number" if unmeasured else None,
                        grader=grader,
                        tokens=rng.randint(300, 900),
                        cost_usd=rng.uniform(0.0008, 0.0016),
                        judge_cost_usd=rng.uniform(0.0003, 0.0006) if grader == "llm_judge" else 0,
                        passed=None if unmeasured else value >= 0.5,
                        output=f"answer to case {case} <b>not bold</b> & escaped",
                        expected="(?i)refund" if grader == "regex" else None,
                        reason="the answer names a next step" if grader == "llm_judge" else None,
                    )
                )
            run = EvalRun(
                id=f"{rng.getrandbits(128):032x}",
                model="claude-sonnet-4-5",
                judge_model="claude-haiku-4-5",
                started_at=start + timedelta(days=index, hours=rng.randint(0, 8)),
                eval_set_ids=("support-agent",),
                scores=tuple(scores),
            )
            store.save_run(run)
            if index == 40:
                baseline_run = run
            if index == 70:  # inside the dip: the report about a run that regressed
                dip_run = run
        assert baseline_run is not None and dip_run is not None
        baseline = Baseline.from_run(baseline_run, id="b-synthetic", label="v2.3")
        store.save_baseline(baseline)
        return write_report(store, report, run_id=dip_run.id, baseline=baseline)


def screenshot(
    chromium: Path, page: Path, png: Path, profile: Path, height: int = 2000, width: int = 1280
) -> None:
    command = [
        str(chromium),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        f"--screenshot={png}",
        f"--window-size={width},{height}",
        page.resolve().as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0 or not png.exists():
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"chromium failed with exit {done.returncode}")


if __name__ == "__main__":
    sys.exit(main())
