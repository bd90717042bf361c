"""The fingerprint holds what changes the measurement, and a verdict needs footing
(docs/statistics.md, "Clustered cases" and "What the gate compares"): `cluster` and
`min_score` are part of a case's fingerprint; a pass bar of 0 is refused at load; a
comparison of fewer than 10 clusters is refused, never ON-TRACK (also under
`--verdryx-require-power` and in `verdryx gate`); a verdict with no interval is never on
track. Both faces: pytest sessions through pytester, and `verdryx eval` / `drift` / `gate`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from plugin_support import exact_case

from verdryx_core.cases import EvalCase
from verdryx_core.cli import main

# -- the fingerprint ------------------------------------------------------------------------


def test_cluster_and_min_score_change_the_fingerprint_and_nothing_else_does() -> None:
    plain = {"id": "a", "prompt": "p", "grader": "exact", "expected": "yes"}
    # The fingerprint a case without either had before they were part of it: kept, so its
    # stored baselines still compare.
    assert EvalCase.from_dict(plain).fingerprint() == (
        "5cb5f3d4af6fef4496e375de3c5793dc8b86a90ee082629beb2c32bfd58e4636"
    )
    prints = {
        EvalCase.from_dict({**plain, **extra}).fingerprint()
        for extra in (
            {},
            {"cluster": "manual"},
            {"cluster": "faq"},
            {"min_score": 0.5},
            {"min_score": 0.9},
            {"min_score": 0.5, "cluster": "manual"},
        )
    }
    assert len(prints) == 6
    # The same bar written as an int or a float is the same case.
    assert (
        EvalCase.from_dict({**plain, "min_score": 1}).fingerprint()
        == EvalCase.from_dict({**plain, "min_score": 1.0}).fingerprint()
    )


def _cases(answers: list[str], **extra: Any) -> list[dict[str, Any]]:
    return [exact_case(f"q{i:02d}", answer, **extra) for i, answer in enumerate(answers)]


#: Twenty cases the baseline passes; the run then fails eight (a 40-point drop).
GOOD = ["yes"] * 20
WORSE = ["no"] * 8 + ["yes"] * 12


def _baseline(pytester: pytest.Pytester, cases: list[dict[str, Any]], **defaults: Any) -> Path:
    db = pytester.path / "s.db"
    _write(pytester.path, cases, defaults)
    saved = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-save-baseline=v1")
    assert saved.ret == 0, saved.stdout.str()
    return db


def _write(folder: Path, cases: list[dict[str, Any]], defaults: dict[str, Any]) -> None:
    document: dict[str, Any] = {"id": "faq", "cases": cases}
    if defaults:
        document["defaults"] = defaults
    (folder / "faq.evalset.json").write_text(json.dumps(document))


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_plugin_a_shared_cluster_added_after_the_baseline_is_an_edit_not_a_pass(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _baseline(pytester, _cases(GOOD))
    # One line of `defaults` puts every case in one cluster, and the run got worse.
    _write(pytester.path, _cases(WORSE), {"cluster": "faq-page"})
    result = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stdout.fnmatch_lines(["*refused*nothing compared*20 edited since the baseline*"])
    assert "ON-TRACK" not in result.stdout.str()
    # The command line sees the same stored run the same way.
    code, _, err = _cli(
        capsys, "drift", "--baseline", "v1", "--db", str(db), "--root", str(pytester.path)
    )
    assert code == 2 and "20 edited since the baseline" in err


def test_plugin_a_bar_changed_after_the_baseline_is_an_edit(pytester: pytest.Pytester) -> None:
    db = _baseline(pytester, _cases(GOOD))
    _write(pytester.path, _cases(WORSE), {"min_score": 0.01})
    result = pytester.runpytest(
        f"--verdryx-db={db}", "--verdryx-baseline=v1", "--verdryx-gate-metric=pass"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stdout.fnmatch_lines(["*refused*20 edited since the baseline*"])


# -- a pass bar of 0 ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("defaults", "case_bar", "where"),
    [
        ({"min_score": 0}, None, "field 'defaults.min_score'"),
        ({}, 0.0, "case 'q00' (#1): field 'min_score'"),
    ],
)
def test_plugin_a_pass_bar_of_0_is_refused_at_load(
    pytester: pytest.Pytester, defaults: dict[str, Any], case_bar: float | None, where: str
) -> None:
    cases = _cases(["no", "yes"])
    if case_bar is not None:
        cases[0]["min_score"] = case_bar
    _write(pytester.path, cases, defaults)
    result = pytester.runpytest(f"--verdryx-db={pytester.path / 's.db'}")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    text = result.stdout.str()
    assert f"faq.evalset.json: {where}: a pass bar of 0" in text
    assert "passes every output" in text


def test_cli_a_pass_bar_of_0_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _write(tmp_path, _cases(["no"]), {"min_score": 0.0})
    code, _, err = _cli(
        capsys, "eval", str(tmp_path / "faq.evalset.json"), "--db", str(tmp_path / "s.db")
    )
    assert code == 2
    [line] = err.strip().splitlines()
    assert "field 'defaults.min_score': a pass bar of 0.0 passes every output" in line


# -- too few clusters -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "power", [(), ("--verdryx-require-power",)], ids=["plain", "require-power"]
)
def test_plugin_one_cluster_for_every_case_is_refused_never_on_track(
    pytester: pytest.Pytester, power: tuple[str, ...]
) -> None:
    db = _baseline(pytester, _cases(GOOD), cluster="faq-page")
    _write(pytester.path, _cases(WORSE), {"cluster": "faq-page"})
    result = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1", *power)
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out
    result.stdout.fnmatch_lines(
        ["*refused*too few clusters: the 20 matched cases fall in 1 cluster*at least 10*"]
    )
    assert "ON-TRACK" not in out


def test_plugin_a_few_clusters_are_refused_even_when_the_drop_shows(
    pytester: pytest.Pytester,
) -> None:
    # Four clusters of five: the cluster bootstrap has four values to resample.
    base = _cases(GOOD)
    worse = _cases(WORSE)
    for case in (*base, *worse):
        case["cluster"] = f"page-{int(case['id'][1:]) % 4}"
    db = _baseline(pytester, base)
    _write(pytester.path, worse, {})
    result = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["*too few clusters: the 20 matched cases fall in 4 clusters*"])


def test_plugin_ten_clusters_are_gated(pytester: pytest.Pytester) -> None:
    base = _cases(GOOD)
    worse = _cases(WORSE)
    for case in (*base, *worse):
        case["cluster"] = f"page-{int(case['id'][1:]) // 2}"
    db = _baseline(pytester, base)
    _write(pytester.path, worse, {})
    result = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1")
    result.stdout.fnmatch_lines(["*clusters: 10 (mean size 2*", "*verdict: REGRESSED*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_cli_drift_and_gate_refuse_one_cluster(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _baseline(pytester, _cases(GOOD), cluster="faq-page")
    _write(pytester.path, _cases(WORSE), {"cluster": "faq-page"})
    root = ("--db", str(db), "--root", str(pytester.path))
    assert pytester.runpytest(f"--verdryx-db={db}").ret == 1  # stored, not gated: 8 fail
    for argv in (
        ("drift", "--baseline", "v1", *root),
        ("drift", "--baseline", "v1", "--require-power", *root),
    ):
        code, out, err = _cli(capsys, *argv)
        assert code == 2, (argv, out, err)
        assert "too few clusters: the 20 matched cases fall in 1 cluster" in err, (argv, err)
    for shard in ("1/2", "2/2"):
        stored = pytester.runpytest(
            f"--verdryx-db={db}", f"--verdryx-shard={shard}", "--verdryx-run-group=ci-7"
        )
        assert stored.ret in (0, 1), stored.stdout.str()
    for argv in (
        ("gate", "--group", "ci-7", "--baseline", "v1", *root),
        ("gate", "--group", "ci-7", "--baseline", "v1", "--require-power", *root),
    ):
        code, out, err = _cli(capsys, *argv)
        assert code == 2, (argv, out, err)
        assert "too few clusters: the 20 matched cases fall in 1 cluster" in err, (argv, err)
        assert "on-track" not in out.lower()


# -- no interval ----------------------------------------------------------------------------


def test_plugin_a_verdict_without_an_interval_is_never_on_track(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    # One case, and it fell from 1 to 0: no interval can be drawn from one difference.
    db = _baseline(pytester, _cases(["yes"]))
    _write(pytester.path, _cases(["no"]), {})
    result = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out
    result.stdout.fnmatch_lines(["*refused*no interval: with fewer than 2 scores on a side*"])
    assert "ON-TRACK" not in out
    code, out, err = _cli(
        capsys, "drift", "--baseline", "v1", "--db", str(db), "--root", str(pytester.path), "--json"
    )
    assert code == 2 and "no interval" in err
