"""The plugin's `plan:` line (docs/statistics.md, "Planning a run"): real pytest sessions
(pytester, in-process) against a real store; the numbers it prints are recomputed here from
the stored runs with numpy and scipy."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from plugin_support import exact_case, stored_runs, write_evalset
from scipy import stats

import pytest_verdryx.items
import pytest_verdryx.session  # noqa: F401

# Imported before any in-process session: pytester forgets what a session imported, and
# numpy's C extension cannot be loaded twice in one process.

PLAN = re.compile(
    r"plan: to see a drop of 0\.050 at 80% power, measure (?P<cases>[\d,]+) cases x 1 sample "
    r"\((?P<calls>[\d,]+) calls a run\)(?: or (?P<n>[\d,]+) cases x (?P<r>\d+) samples "
    r"\((?P<rcalls>[\d,]+) calls a run\))?, in the baseline and in each gated run "
    r"\(now .*: (?P<power>\d+)% power\)$",
    re.MULTILINE,
)

RUN_VAR = "VERDRYX_PLAN_TEST_RUN"
AGENT = f"""
import os
import random


def answer(case):
    # Case i passes with its own probability; each (run, case, sample) draw is seeded: every
    # run of this test sees the same outputs.
    run = os.environ.get({RUN_VAR!r}, "0")
    draw = random.Random(f"{{run}}:{{case.id}}:{{case.repeat}}").random()
    return "yes" if draw < case.metadata["p"] else "no"
"""


def _z_sum() -> float:
    return float(stats.norm.ppf(0.975) + stats.norm.ppf(0.8))


def _expected(
    measured: tuple[float, float], per_side: tuple[float, float], n: int
) -> tuple[int, int, float]:
    """Cases at one sample, repeats at n cases, and the power now, from the paired
    differences' variance and the baseline's mean, measured at (current, baseline) samples
    per case (docs/statistics.md, "Planning a run")."""
    var_d, m = measured
    v = var_d / (1 / per_side[0] + 1 / per_side[1])
    k = min(1.0, v / (m * (1 - m))) if 0 < m < 1 else 0.0
    w = 2 * v + k * (0.05 * (2 * m - 1) - 0.05**2)
    total = w * _z_sum() ** 2 / 0.05**2
    se_now = math.sqrt(w / (n * per_side[0]))
    power = float(stats.norm.cdf(0.05 / se_now - stats.norm.ppf(0.975)))
    return max(2, math.ceil(total)), max(1, math.ceil(total / n)), power


def _measured(db: Path) -> tuple[float, float]:
    """The variance of the paired differences of the first two stored runs, and the first's
    (the baseline's) mean."""
    runs = sorted(stored_runs(db), key=lambda run: run.started_at)
    base, current = ({s.key: s.value for s in run.scores} for run in runs[:2])
    diffs = np.array([current[key] - base[key] for key in base])
    return float(np.var(diffs, ddof=1)), float(np.mean(list(base.values())))


# The xdist variant runs in the slow step (README.md): the plan is the controller's, from the
# gathered run, the path test_plugin_gate.py's test_xdist_and_a_single_process_store_the_same_
# run_and_verdict checks in the default step.
@pytest.mark.parametrize(
    "mode",
    [
        pytest.param([], id="no-xdist"),
        pytest.param(["-n", "2"], id="xdist-2", marks=pytest.mark.slow),
    ],
)
def test_an_underpowered_run_of_recorded_outputs_plans_more_cases(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    db = pytester.path / "v.db"
    write_evalset(pytester.path, "s", "s", [exact_case(f"c{i}", "yes") for i in range(20)])
    saved = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-save-baseline=v1")
    assert saved.ret == 0, saved.stdout.str()
    write_evalset(
        pytester.path, "s", "s", [exact_case(f"c{i}", "no" if i == 0 else "yes") for i in range(20)]
    )
    result = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1", *mode)
    assert result.ret == 0, result.stdout.str()
    out = result.stdout.str()
    found = PLAN.search(out)
    assert found is not None, out
    cases, _, power = _expected(_measured(db), (1, 1), 20)
    assert int(found["cases"].replace(",", "")) == cases == 157
    assert found["calls"] == found["cases"]
    # Every output is recorded: repeats would grade the same output again, so none offered.
    assert found["n"] is None
    assert int(found["power"]) == round(power * 100)
    # The line follows the verdict it explains.
    lines = out.splitlines()
    verdict = next(i for i, line in enumerate(lines) if line.startswith("verdict: ON-TRACK"))
    assert lines[verdict + 1].startswith("plan: ")


def test_a_run_that_sees_the_drop_asked_for_has_no_plan_line(pytester: pytest.Pytester) -> None:
    db = pytester.path / "v.db"
    write_evalset(pytester.path, "s", "s", [exact_case(f"c{i}", "yes") for i in range(20)])
    assert pytester.runpytest(f"--verdryx-db={db}", "--verdryx-save-baseline=v1").ret == 0
    result = pytester.runpytest(
        f"--verdryx-db={db}", "--verdryx-baseline=v1", "--verdryx-detect=0.5"
    )
    assert result.ret == 0, result.stdout.str()
    assert "plan:" not in result.stdout.str()


def test_a_live_target_with_repeats_plans_cases_or_repeats(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(noisy_agent=AGENT)
    db = pytester.path / "v.db"
    p = np.round(np.random.default_rng(7).beta(4, 1, 40), 4)
    cases: list[dict[str, Any]] = [
        {"id": f"c{i}", "prompt": f"q{i}", "expected": "yes", "metadata": {"p": x}}
        for i, x in enumerate(p.tolist())
    ]
    (pytester.path / "agent.evalset.json").write_text(json.dumps({"id": "a", "cases": cases}))
    common = (f"--verdryx-db={db}", "--verdryx-target=noisy_agent:answer", "--verdryx-repeat=3")
    monkeypatch.setenv(RUN_VAR, "base")
    assert pytester.runpytest(*common, "--verdryx-save-baseline=v1").ret in (0, 1)
    monkeypatch.setenv(RUN_VAR, "now")
    result = pytester.runpytest(*common, "--verdryx-baseline=v1")
    out = result.stdout.str()
    found = PLAN.search(out)
    assert found is not None, out
    cases_needed, repeats, power = _expected(_measured(db), (3, 3), 40)
    assert int(found["cases"].replace(",", "")) == cases_needed
    assert int(found["n"]) == 40 and int(found["r"]) == repeats
    assert int(found["rcalls"].replace(",", "")) == 40 * repeats
    assert int(found["power"]) == round(power * 100)
