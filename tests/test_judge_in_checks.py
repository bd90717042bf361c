"""A judge used by a check inside `checks` is the run's judge (docs/models-and-judges.md,
"The judge of a run"): recorded with the run and its baseline, named on the summary line,
and compared like an `llm_judge` case's, so a run that forgot the judge, or switched judge
model, is refused instead of gated over the cases that needed none. Both faces: pytest
sessions, and `verdryx eval` / `baseline` / `drift`; the judges are the stub and real
Anthropic model ids answered by the fake server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# Imported once, here: pytester's in-process sessions drop what each of them imported, and
# importing the SDK again is most of what a judged session costs.
import anthropic  # noqa: F401
import pytest
from fakes.anthropic_server import FakeAnthropic
from plugin_support import exact_case, stored_runs, write_evalset

from verdryx_core.cli import main


def _cases() -> list[dict[str, Any]]:
    """Ten plain cases and four whose checks include the judge's: a third of the cases."""
    plain = [exact_case(f"p{i}", "yes") for i in range(10)]
    judged = [
        {
            "id": f"j{i}",
            "prompt": f"reply to customer {i}",
            "output": f"Dear customer {i}, your refund is on its way.",
            "checks": [
                {"grader": "contains", "expected": "refund"},
                {"grader": "llm_judge", "rubric": "polite and says when the refund arrives"},
            ],
        }
        for i in range(4)
    ]
    return plain + judged


def _set(folder: Path) -> Path:
    return write_evalset(folder, "support", "support", _cases())


def test_plugin_a_judge_inside_checks_is_the_runs_judge_and_its_absence_is_refused(
    pytester: pytest.Pytester,
) -> None:
    _set(pytester.path)
    db = pytester.path / "s.db"
    saved = pytester.runpytest(
        f"--verdryx-db={db}", "--verdryx-judge=stub", "--verdryx-save-baseline=v1"
    )
    assert saved.ret == 0, saved.stdout.str()
    saved.stdout.fnmatch_lines(["run *  model=stub  judge=stub"])
    [run] = stored_runs(db)
    assert run.judge_model == "stub"
    baseline = json.loads((pytester.path / ".verdryx" / "baselines" / "v1.json").read_text())
    assert baseline["judge_model"] == "stub"

    forgot = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1")
    out = forgot.stdout.str()
    assert forgot.ret == pytest.ExitCode.USAGE_ERROR, out
    forgot.stdout.fnmatch_lines(
        ["*gate refused*judged by 'stub'*4 llm_judge case(s) had no judge*--verdryx-judge stub*"]
    )
    assert "ON-TRACK" not in out


@pytest.mark.usefixtures("anthropic_env")
def test_plugin_a_judge_model_change_inside_checks_is_refused_at_start(
    pytester: pytest.Pytester, server: FakeAnthropic
) -> None:
    _set(pytester.path)
    db = pytester.path / "s.db"
    first = pytester.runpytest(
        f"--verdryx-db={db}", "--verdryx-judge=claude-haiku-4-5", "--verdryx-save-baseline=v1"
    )
    assert first.ret == 0, first.stdout.str()
    first.stdout.fnmatch_lines(["run *  judge=claude-haiku-4-5"])
    server.reset()
    switched = pytester.runpytest(
        f"--verdryx-db={db}", "--verdryx-judge=claude-sonnet-4-5", "--verdryx-baseline=v1"
    )
    assert switched.ret == pytest.ExitCode.USAGE_ERROR, switched.stdout.str()
    text = switched.stdout.str() + switched.stderr.str()
    assert "judge 'claude-sonnet-4-5' (baseline: 'claude-haiku-4-5')" in text
    assert server.requests == []  # refused before the new judge was paid


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def _eval(capsys: pytest.CaptureFixture[str], path: Path, db: Path, *judge: str) -> str:
    code, out, err = _cli(capsys, "eval", str(path), "--db", str(db), "--json", *judge)
    assert code in (0, 1), err
    return str(json.loads(out)["run_id"])


def test_cli_a_judge_inside_checks_is_recorded_and_its_absence_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path, db = _set(tmp_path), tmp_path / "s.db"
    first = _eval(capsys, path, db, "--judge", "stub")
    code, out, _ = _cli(capsys, "eval", str(path), "--db", str(db), "--judge", "stub")
    assert code == 0 and "judge=stub" in out
    assert _cli(capsys, "baseline", first, "--label", "v1", "--db", str(db))[0] == 0
    _eval(capsys, path, db)  # the judge forgotten
    code, out, err = _cli(
        capsys, "drift", "--baseline", "v1", "--db", str(db), "--root", str(tmp_path)
    )
    assert code == 2, out
    assert "judged by 'stub'" in err and "4 llm_judge case(s) had no judge" in err


def test_cli_a_judge_model_change_inside_checks_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, anthropic_env: FakeAnthropic
) -> None:
    path, db = _set(tmp_path), tmp_path / "s.db"
    first = _eval(capsys, path, db, "--judge", "claude-haiku-4-5")
    assert _cli(capsys, "baseline", first, "--label", "v1", "--db", str(db))[0] == 0
    _eval(capsys, path, db, "--judge", "claude-sonnet-4-5")
    code, _, err = _cli(
        capsys, "drift", "--baseline", "v1", "--db", str(db), "--root", str(tmp_path)
    )
    assert code == 2
    assert "judge 'claude-sonnet-4-5' (baseline: 'claude-haiku-4-5')" in err
