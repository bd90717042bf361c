"""`verdryx plan` (docs/cli.md, docs/statistics.md "Planning a run"): through `main()` against
real stores, made by `verdryx eval` on the examples and by `evaluate()` with a noisy target;
the numbers are recomputed here from the stored scores with numpy and scipy."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from json_document_keys import PLAN_KEYS
from scipy import stats

from verdryx_core import EvalSettings, evaluate
from verdryx_core.cli import main
from verdryx_core.store import Store

ROOT = Path(__file__).resolve().parent.parent
SUPPORT = ROOT / "examples" / "support" / "support-agent.evalset.json"
Z_SUM = float(stats.norm.ppf(0.975) + stats.norm.ppf(0.8))


@pytest.fixture(autouse=True)
def _hermetic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("VERDRYX_DB", "TAIPAN_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.taipan store of the developer's


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's own usage errors exit from the parser
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def _support_baseline(capsys: pytest.CaptureFixture[str], db: Path) -> str:
    code, out, err = run_cli(
        capsys, "eval", str(SUPPORT), "--model", "stub", "--db", str(db), "--json"
    )
    assert code == 1, err  # its one case below the bar fails the run, as under pytest
    run_id = json.loads(out)["run_id"]
    code, _, err = run_cli(
        capsys, "baseline", run_id, "--label", "v1", "--db", str(db), "--write-file", "."
    )
    assert code == 0, err
    return run_id


def _w(v: float, m: float, drop: float) -> float:
    """The pair variance of docs/statistics.md, "Planning a run"."""
    k = min(1.0, v / (m * (1 - m)))
    return 2 * v + k * (drop * (2 * m - 1) - drop**2)


def test_plan_of_the_examples_baseline_in_text_and_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "v.db"
    run_id = _support_baseline(capsys, db)
    code, out, err = run_cli(capsys, "plan", "--baseline", "v1", "--db", str(db), "--json")
    assert code == 0, err
    document = json.loads(out)
    assert document.keys() >= PLAN_KEYS
    with Store.open(db) as store:
        run = store.load_run(run_id)
    assert run is not None
    values = np.array([score.value for score in run.scores if score.value is not None])
    # One sample per case: the spread between cases bounds the within-case variance.
    v, m = float(np.var(values, ddof=1)), float(values.mean())
    assert document["variance_source"] == "bound"
    assert document["variance"] == pytest.approx(v)
    assert document["cases"] == values.size and document["samples"] == 1
    needed = math.ceil(Z_SUM**2 * _w(v, m, 0.05) / 0.05**2)
    assert document["cases_needed"] == needed
    assert document["repeats_needed"] == math.ceil(needed / values.size)
    assert document["calls_needed"] == {
        "cases": needed,
        "repeats": values.size * document["repeats_needed"],
    }
    assert document["calls_now"] == values.size
    se = math.sqrt(_w(v, m, 0.05) / values.size)
    assert document["power_now"] == pytest.approx(stats.norm.cdf(0.05 / se - 1.96), abs=1e-3)
    # The text: the same numbers, in words.
    code, out, err = run_cli(capsys, "plan", "--baseline", "v1", "--db", str(db))
    assert code == 0, err
    assert f"more cases:   {needed:,} cases x 1 sample ({needed:,} calls a run)" in out
    assert "upper bound" in out
    assert f"MDE {document['mde']:.3f}" in out


def test_a_committed_baseline_plans_without_a_store(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _support_baseline(capsys, tmp_path / "elsewhere.db")
    assert not (tmp_path / "verdryx.db").exists()
    code, out, err = run_cli(capsys, "plan", "--baseline", "v1", "--json")
    assert code == 0, err
    document = json.loads(out)
    values = [
        case["value"]
        for case in json.loads(Path(".verdryx/baselines/v1.json").read_text())["cases"]
    ]
    m = sum(values) / len(values)
    # Scores that may be means of repeats: m (1 - m), the most they can vary.
    assert document["variance"] == pytest.approx(m * (1 - m))
    assert "not in this store" in document["note"]
    assert not (tmp_path / "verdryx.db").exists()  # planning created no store


def _noisy(case: Any) -> str:
    """Passes case i with its own probability (in its metadata); seeded per sample."""
    draw = random.Random(f"{case.id}:{case.repeat}").random()
    return "yes" if draw < case.metadata["p"] else "no"


def test_plan_of_a_run_with_repeats_uses_the_per_case_variances(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    p = np.round(np.random.default_rng(3).beta(4, 1, 60), 4)
    evalset = tmp_path / "noisy.evalset.json"
    evalset.write_text(
        json.dumps(
            {
                "id": "noisy",
                "cases": [
                    {"id": f"c{i}", "prompt": "q", "expected": "yes", "metadata": {"p": x}}
                    for i, x in enumerate(p.tolist())
                ],
            }
        )
    )
    db = tmp_path / "v.db"
    run = evaluate([evalset], EvalSettings(model="stub", repeat=4), target=_noisy, store=db)
    samples = np.array([score.samples for score in run.scores])
    assert samples.shape == (60, 4)
    v, m = float(np.var(samples, axis=1, ddof=1).mean()), float(samples.mean())
    code, out, err = run_cli(
        capsys, "plan", "--run", run.id[:8], "--db", str(db), "--detect", "0.1", "--power", "0.9",
        "--json",
    )  # fmt: skip
    assert code == 0, err
    document = json.loads(out)
    assert document["variance_source"] == "repeats" and document["samples"] == 4
    assert document["variance"] == pytest.approx(v)
    z_sum = float(stats.norm.ppf(0.975) + stats.norm.ppf(0.9))
    total = z_sum**2 * _w(v, m, 0.1) / 0.1**2
    assert document["cases_needed"] == math.ceil(total)
    assert document["repeats_needed"] == math.ceil(total / 60)
    assert document["calls_now"] == 240
    assert document["detect"] == 0.1 and document["power"] == 0.9 and document["alpha"] == 0.05


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (("--baseline", "nope"), "unknown baseline 'nope'; known baselines: v1"),
        (("--run", "zzzz"), "no such eval run: 'zzzz'"),
        (("--baseline", "v1", "--detect", "0"), "detect 0.0 is not a drop in (0, 1]"),
        (("--baseline", "v1", "--detect", "nan"), "--detect: 'nan' is not a finite number"),
        (("--baseline", "v1", "--power", "1"), "power 1.0 is not in [0.5, 1)"),
        (("--baseline", "v1", "--power", "high"), "argument --power: invalid float value"),
        # Both: the run's paired differences against the baseline (an unknown run refused).
        (("--baseline", "v1", "--run", "x"), "no such eval run: 'x'"),
        ((), "plan from what: pass --baseline LABEL, --run ID, or both"),
    ],
)
def test_bad_input_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: tuple[str, ...], expected: str
) -> None:
    db = tmp_path / "v.db"
    _support_baseline(capsys, db)
    code, _, err = run_cli(capsys, "plan", "--db", str(db), *argv)
    assert code == 2
    assert expected in one_error_line(err)


def test_a_run_with_nothing_measured_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    evalset = tmp_path / "judged.evalset.json"
    # An llm_judge case without a judge is unmeasured: the run has nothing to plan from.
    evalset.write_text(
        json.dumps(
            {
                "id": "j",
                "cases": [
                    {
                        "id": "a",
                        "prompt": "q",
                        "grader": "llm_judge",
                        "rubric": "good",
                        "output": "x",
                    }
                ],
            }
        )
    )
    db = tmp_path / "v.db"
    code, out, err = run_cli(
        capsys, "eval", str(evalset), "--model", "stub", "--db", str(db), "--json"
    )
    run_id = json.loads(out)["run_id"]
    code, _, err = run_cli(capsys, "plan", "--run", run_id, "--db", str(db))
    assert code == 2
    assert "nothing measured" in one_error_line(err)
