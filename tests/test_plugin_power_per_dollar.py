"""`--verdryx-repeat=auto`, clustered cases and the per-case drop tests through real pytest
sessions (pytester, in-process) with a seeded stochastic target (docs/statistics.md): the
summary, the stored run, the baseline file, JUnit XML read back by a parser, the job summary
and the HTML report."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from typing import Any

import numpy as np
import pytest
from plugin_support import stored_runs
from scipy import stats

import pytest_verdryx.items
import pytest_verdryx.session  # noqa: F401

# Imported before any in-process session: pytester forgets what a session imported, and
# numpy's C extension cannot be loaded twice in one process.

RUN_VAR = "VERDRYX_POWER_TEST_RUN"
AGENT = f"""
import os
import random


def answer(case):
    run = os.environ.get({RUN_VAR!r}, "0")
    p = case.metadata["p"]
    if run == "now" and case.id == "c0":
        p = 0.0  # the one real regression
    draw = random.Random(f"{{run}}:{{case.id}}:{{case.repeat}}").random()
    return "yes" if draw < p else "no"
"""


def _cases() -> list[dict[str, Any]]:
    # Four flaky cases, seventeen that always pass; clusters of two, one case alone: eleven
    # clusters, enough for the cluster bootstrap (fewer than 10 refuse the gate).
    cases: list[dict[str, Any]] = []
    for i in range(21):
        case: dict[str, Any] = {
            "id": f"c{i}",
            "prompt": f"q{i}",
            "expected": "yes",
            "metadata": {"p": 0.7 if i < 4 else 1.0},
        }
        if i != 20:
            case["cluster"] = f"g{i // 2}"
        cases.append(case)
    return cases


def test_auto_repeats_clusters_and_significant_drops_reach_every_output(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(power_agent=AGENT)
    (pytester.path / "agent.evalset.json").write_text(json.dumps({"id": "a", "cases": _cases()}))
    db = pytester.path / "v.db"
    common = (f"--verdryx-db={db}", "--verdryx-target=power_agent:answer")
    monkeypatch.setenv(RUN_VAR, "base")
    saved = pytester.runpytest(*common, "--verdryx-repeat=10", "--verdryx-save-baseline=v1")
    assert saved.ret in (0, 1), saved.stdout.str()
    baseline_file = pytester.path / ".verdryx" / "baselines" / "v1.json"
    frozen = json.loads(baseline_file.read_text())
    assert all(len(case["samples"]) == 10 for case in frozen["cases"])
    assert {case.get("cluster") for case in frozen["cases"]} == {None} | {
        f"g{i}" for i in range(10)
    }

    monkeypatch.setenv(RUN_VAR, "now")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / "step.md"))
    junit = pytester.path / "j.xml"
    report = pytester.path / "report.html"
    result = pytester.runpytest(
        *common,
        "--verdryx-repeat=auto",
        "--verdryx-max-samples=100",
        "--verdryx-baseline=v1",
        f"--junitxml={junit}",
        f"--verdryx-report={report}",
    )
    out = result.stdout.str()
    assert result.ret in (0, 1), out

    # The allocation line is what the stored run sampled.
    run = max(stored_runs(db), key=lambda r: r.started_at)
    counts = {score.case_id: max(1, len(score.samples)) for score in run.scores}
    found = re.search(r"^samples: (.+)$", out, re.M)
    assert found is not None, out
    shown = {
        int(samples): int(cases.split()[0])
        for samples, cases in (part.split(" x ") for part in found[1].split(", "))
    }
    assert shown == {n: list(counts.values()).count(n) for n in set(counts.values())}
    assert sum(counts.values()) <= 100
    # Flaky cases (the baseline saw them vary) get more samples than the stable ones.
    assert min(counts[f"c{i}"] for i in range(4)) > max(counts[f"c{i}"] for i in range(4, 21))
    assert all(
        score.cluster == (f"g{int(score.case_id[1:]) // 2}" if score.case_id != "c20" else None)
        for score in run.scores
    )

    # The clusters line: 11 clusters (ten pairs, one alone); the ICC of the paired
    # differences by the one-way ANOVA estimator, recomputed here.
    base = {case["case_id"]: case["value"] for case in frozen["cases"]}
    diffs = np.array([score.value - base[score.case_id] for score in run.scores])
    labels = [score.cluster or score.case_id for score in run.scores]
    groups = [diffs[[i for i, x in enumerate(labels) if x == g]] for g in dict.fromkeys(labels)]
    n, k = diffs.size, len(groups)
    msb = sum(g.size * (g.mean() - diffs.mean()) ** 2 for g in groups) / (k - 1)
    msw = sum(((g - g.mean()) ** 2).sum() for g in groups) / (n - k)
    n0 = (n - sum(g.size**2 for g in groups) / n) / (k - 1)
    icc = min(1.0, max(0.0, (msb - msw) / (msb + (n0 - 1) * msw)))
    assert f"clusters: 11 (mean size 1.91, ICC {icc:.2f})" in out, out

    # c0's drop is significant (Fisher's exact test, Benjamini-Hochberg), listed first.
    c0 = next(score for score in run.scores if score.case_id == "c0")
    base_c0 = frozen["cases"][0]["samples"]
    p = stats.fisher_exact(
        [[0, len(c0.samples)], [sum(base_c0), len(base_c0) - sum(base_c0)]], alternative="less"
    ).pvalue
    assert p < 0.01
    lines = out.splitlines()
    title = next(i for i, line in enumerate(lines) if line.startswith("regressed cases ("))
    assert lines[title + 1].startswith("  a::c0: ") and "significant drop (q " in lines[title + 1]

    # JUnit: the property on every compared case, true on c0 alone.
    tree = ET.parse(junit)
    flags = {
        case.get("name"): prop.get("value")
        for case in tree.iter("testcase")
        for prop in case.iter("property")
        if prop.get("name") == "verdryx.case_regressed"
    }
    assert len(flags) == 21 and flags.pop("c0") == "true", flags
    assert set(flags.values()) == {"false"}
    # Beside it, the drop test's p and q (docs/ci.md): c0's p is the Fisher p above.
    numbers = {
        (case.get("name"), prop.get("name")): prop.get("value")
        for case in tree.iter("testcase")
        for prop in case.iter("property")
        if prop.get("name") in ("verdryx.case_p", "verdryx.case_q")
    }
    assert float(numbers[("c0", "verdryx.case_p")]) == pytest.approx(p, rel=1e-5)
    assert float(numbers[("c0", "verdryx.case_q")]) <= 0.1

    # The job summary and the report mark it and list it first.
    step = (pytester.path / "step.md").read_text()
    rows = [line for line in step.splitlines() if line.startswith("| `a::")]
    assert rows[0].startswith("| `a::c0` |") and "**significant drop" in rows[0], step
    html = report.read_text()
    assert "significant drop" in html

    # A baseline file without samples (saved before they were kept) still loads: uniform.
    for case in frozen["cases"]:
        case.pop("samples")
    baseline_file.write_text(json.dumps(frozen))
    old = pytester.runpytest(
        f"--verdryx-db={pytester.path / 'fresh.db'}",
        "--verdryx-target=power_agent:answer",
        "--verdryx-repeat=auto",
        "--verdryx-max-samples=63",
        "--verdryx-baseline=v1",
    )
    old_out = old.stdout.str()
    assert old.ret in (0, 1), old_out
    assert "samples: 3 x 21 cases" in old_out
    assert "--verdryx-repeat=auto: the baseline keeps no per-case variance" in old_out
    assert "regressed cases (" not in old_out  # nothing to test a case's drop against


def test_a_repeat_that_is_neither_a_number_nor_auto_is_one_line(
    pytester: pytest.Pytester,
) -> None:
    (pytester.path / "agent.evalset.json").write_text(json.dumps({"id": "a", "cases": _cases()}))
    result = pytester.runpytest("--verdryx-repeat=often")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--verdryx-repeat: 'often' is not a whole number or auto*"])
