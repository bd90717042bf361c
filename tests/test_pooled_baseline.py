"""Baselines from several runs (docs/statistics.md, "Baselines from several runs";
docs/options.md, `--verdryx-baseline-runs`): real pytest sessions (pytester) of a target whose
every answer is set by a table, a real SQLite store, the committed file read back, and
`verdryx baseline --runs` and `verdryx plan` through `main()`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from plugin_support import stored_runs, write_evalset

from verdryx_core.cli import main
from verdryx_core.store import Store

# Run -> which of the six cases the target answers right. Every answer is known, so the
# pooled samples are too.
TABLE = {
    "a0": (1, 1, 0, 1, 0, 1),
    "a1": (1, 0, 0, 1, 1, 1),
    "other": (0, 0, 0, 0, 0, 0),
    "d": (1, 1, 1, 0, 0, 1),
    "e": (1, 1, 1, 1, 1, 1),
}

AGENT = f"""
import os

TABLE = {TABLE!r}


def answer(case):
    return "yes" if TABLE[os.environ["VX_RUN"]][int(case.id[1:])] else "no"
"""


@pytest.fixture(autouse=True)
def _hermetic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("VERDRYX_DB", "TAIPAN_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


def _cases(edited: bool = False) -> list[dict[str, Any]]:
    cases = [{"id": f"c{i}", "prompt": f"q{i}", "expected": "yes"} for i in range(6)]
    if edited:  # a new fingerprint: the earlier runs' scores of c5 are of another case
        cases[5]["prompt"] = "q5, edited"
    return cases


def _session(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, run: str, *args: str
) -> pytest.RunResult:
    monkeypatch.setenv("VX_RUN", run)
    db = pytester.path / "store.db"
    return pytester.runpytest(
        "-p", "no:cacheprovider", "--verdryx-target=agent:answer", f"--verdryx-db={db}", *args
    )


def _store_earlier_runs(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """a0 and a1 (comparable), then a run of another target version (never pooled)."""
    pytester.makepyfile(agent=AGENT)
    write_evalset(pytester.path, "s", "s", _cases())
    for run in ("a0", "a1"):
        assert _session(pytester, monkeypatch, run).ret in (0, 1)
    # Its results are cached under the version: it never answers for the others.
    other = _session(pytester, monkeypatch, "other", "--verdryx-target-version=v9")
    assert other.ret == 1


def test_a_baseline_of_three_runs_pools_each_cases_samples_and_the_gate_uses_them(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _store_earlier_runs(pytester, monkeypatch)
    write_evalset(pytester.path, "s", "s", _cases(edited=True))
    saved = _session(
        pytester, monkeypatch, "d", "--verdryx-save-baseline=v1", "--verdryx-baseline-runs=3"
    )
    assert saved.ret == 1  # c3 and c4 fail this run: no baseline to excuse them
    out = saved.stdout.str()
    ids = [run.id for run in stored_runs(pytester.path / "store.db")]  # newest first
    assert len(ids) == 4
    # Pooled with a1 and a0; the other version's run was passed over.
    assert f"pooled with 2 earlier runs ({ids[2][:8]}, {ids[3][:8]})" in out
    assert "1 earlier not comparable, not pooled" in out
    assert "WARNING" not in out  # five of six cases hold three samples

    # This run's sample first, then a1's, then a0's; c5 was edited: this run's alone.
    expected = {
        "c0": ((1.0, 1.0, 1.0), 1.0),
        "c1": ((1.0, 0.0, 1.0), 2 / 3),
        "c2": ((1.0, 0.0, 0.0), 1 / 3),
        "c3": ((0.0, 1.0, 1.0), 2 / 3),
        "c4": ((0.0, 1.0, 0.0), 1 / 3),
        "c5": ((), 1.0),
    }
    committed = json.loads((pytester.path / ".verdryx" / "baselines" / "v1.json").read_text())
    with Store.open(pytester.path / "store.db") as store:
        stored = store.get_baseline("v1")
    assert stored is not None
    assert stored.run_id == ids[0]
    for cases in (committed["cases"], [case.to_dict() for case in stored.cases]):
        got = {case["case_id"]: (tuple(case.get("samples", ())), case["value"]) for case in cases}
        assert got.keys() == expected.keys()
        for key, (samples, value) in expected.items():
            assert got[key][0] == samples, key
            assert got[key][1] == pytest.approx(value, abs=1e-12), key
    # A case passed when it passed in most of the pooled runs.
    passed = {case["case_id"]: case["passed"] for case in committed["cases"]}
    assert passed == {"c0": True, "c1": True, "c2": False, "c3": True, "c4": False, "c5": True}
    assert committed["mean"] == pytest.approx(4 / 6, abs=1e-12)
    assert stored.mean == pytest.approx(4 / 6, abs=1e-12)

    # The gate compares each case with its pooled mean: +1/3 over the six cases.
    gated = _session(pytester, monkeypatch, "e", "--verdryx-baseline=v1", "--no-verdryx-store")
    assert gated.ret == 0, gated.stdout.str()
    gated.stdout.fnmatch_lines(["*delta: +0.333*", "*verdict: ON-TRACK*"])

    # `verdryx plan` reads the pooled samples' variance, each gated run at one sample.
    capsys.readouterr()
    db = str(pytester.path / "store.db")
    assert (
        main(["plan", "--baseline", "v1", "--db", db, "--root", str(pytester.path), "--json"]) == 0
    )
    planned = json.loads(capsys.readouterr().out)
    variances = [np.var(samples, ddof=1) for samples, _ in expected.values() if samples]
    assert planned["variance_source"] == "repeats"
    assert planned["variance"] == pytest.approx(np.mean(variances), rel=1e-12)
    assert planned["samples"] == 1

    _cli_pools_the_stored_runs(pytester, capsys, newest_first=ids)


def _cli_pools_the_stored_runs(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], *, newest_first: list[str]
) -> None:
    """`verdryx baseline RUN --runs K` on the same store: a1 pooled with the run before it."""
    db = str(pytester.path / "store.db")
    a1 = newest_first[2]
    capsys.readouterr()  # the sessions' own output
    code = main(
        ["baseline", a1, "--label", "two", "--runs", "2", "--db", db, "--write-file",
         str(pytester.path), "--json"]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    document = json.loads(out)
    # a1 with a0, the one run before it (d and the other version's run are newer).
    assert document["pooled_runs"] == [newest_first[3]]
    samples = {case["case_id"]: case["samples"] for case in document["cases"]}
    assert samples == {f"c{i}": [float(TABLE["a1"][i]), float(TABLE["a0"][i])] for i in range(6)}
    committed = json.loads((pytester.path / ".verdryx" / "baselines" / "two.json").read_text())
    assert [case["samples"] for case in committed["cases"]] == list(samples.values())
    assert "WARNING" not in err

    # Asked for more than the store holds: what was found, said so.
    code = main(["baseline", a1, "--label", "five", "--runs", "5", "--db", db])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "pooled with 1 earlier run" in out
    assert "5 runs were asked for, 2 found" in out

    # The range of --verdryx-baseline-runs, read by the same rule (1 to 100).
    for runs, words in (("0", "0 is below the minimum 1"), ("101", "101 is above the maximum 100")):
        with pytest.raises(SystemExit) as exit_:
            main(["baseline", a1, "--label", "bad", "--runs", runs, "--db", db])
        assert exit_.value.code == 2
        assert f"argument --runs: {words}" in capsys.readouterr().err


def test_a_one_sample_baseline_of_a_target_warns_with_what_plan_predicts(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(agent=AGENT)
    write_evalset(pytester.path, "s", "s", _cases())
    saved = _session(pytester, monkeypatch, "a0", "--verdryx-save-baseline=v1")
    out = saved.stdout.str()
    (line,) = [line for line in out.splitlines() if line.startswith("WARNING: baseline 'v1'")]
    assert "every case holds one sample and its cases vary (a target answers: agent:answer)" in line
    assert "--verdryx-baseline-runs=3 (the baseline pools 3 runs" in line
    assert "--verdryx-repeat=" in line

    # The "as saved" figures are `verdryx plan`'s own for the run.
    (run,) = stored_runs(pytester.path / "store.db")
    capsys.readouterr()  # the session's own output
    code = main(["plan", "--run", run.id, "--db", str(pytester.path / "store.db"), "--json"])
    assert code == 0
    planned = json.loads(capsys.readouterr().out)
    assert f"6 cases x 1 sample: MDE {planned['mde']:.3f}" in line
    assert f"--verdryx-repeat={planned['repeats_needed']} (the baseline and every" in line


def test_a_baseline_that_cannot_vary_does_not_warn(pytester: pytest.Pytester) -> None:
    # Recorded outputs graded exactly by the stub model's run: the same every time.
    cases = [
        {"id": f"c{i}", "prompt": "p", "expected": "yes", "output": "yes" if i % 2 else "no"}
        for i in range(6)
    ]
    write_evalset(pytester.path, "s", "s", cases)
    saved = pytester.runpytest(
        f"--verdryx-db={pytester.path / 'store.db'}", "--verdryx-save-baseline=v1"
    )
    assert "baseline saved: v1" in saved.stdout.str()
    assert "WARNING" not in saved.stdout.str()


def test_the_option_refuses_a_bad_value(pytester: pytest.Pytester) -> None:
    write_evalset(pytester.path, "s", "s", _cases())
    result = pytester.runpytest("--verdryx-baseline-runs=0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--verdryx-baseline-runs: 0 is below the minimum 1*"])


def test_power_apart_is_plans_own_when_both_sides_hold_as_many_samples() -> None:
    from verdryx_core.gating.planning import Noise, plan, power_apart

    noise = Noise(variance=0.12, cases=40, samples=2.0, source="repeats", mean=0.8)
    planned = plan(noise, detect=0.05)
    apart = power_apart(noise, baseline_samples=2.0, detect=0.05)
    assert apart.power == pytest.approx(planned.power_now, rel=1e-12)
    assert apart.mde == pytest.approx(planned.mde, rel=1e-9)
    # More baseline samples: a smaller MDE, never below that of a baseline without noise.
    pooled = power_apart(noise, baseline_samples=6.0, detect=0.05)
    exact = power_apart(noise, baseline_samples=1e12, detect=0.05)
    assert exact.mde < pooled.mde < apart.mde
    assert exact.power > pooled.power > apart.power
