"""Each face words a core error's hint with its own flags: `verdryx runs --db x` never tells
the user to pass `--verdryx-db`, and a pytest session never says `--cache`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.anthropic_server import FakeAnthropic
from plugin_support import stored_runs, write_evalset

from pytest_verdryx.options import FLAGS, worded
from verdryx_core.cli import main
from verdryx_core.errors import CLI_FLAGS, UsageError, VerdryxError
from verdryx_core.store import Store


def _error_line(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    err = capsys.readouterr().err
    assert code == 2, err
    (line,) = [line for line in err.splitlines() if line.startswith("error: ")]
    return line


def test_a_hint_is_worded_by_each_face() -> None:
    error = UsageError("cache mode 'x' is not known", hint="pass {cache} with one of on, off")
    assert str(error) == "cache mode 'x' is not known; pass --cache with one of on, off"
    assert worded(error) == "cache mode 'x' is not known; pass --verdryx-cache with one of on, off"
    assert VerdryxError("no hint").worded(FLAGS) == "no hint"


def test_every_setting_a_hint_names_has_a_flag_in_both_faces() -> None:
    assert set(CLI_FLAGS) <= set(FLAGS)
    assert all(flag.startswith("--verdryx-") for flag in FLAGS.values())
    assert not any("verdryx-" in flag for flag in CLI_FLAGS.values())


def test_a_missing_store_directory_names_the_cli_flag(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    line = _error_line(capsys, "runs", "--db", str(tmp_path / "nowhere" / "v.db"))
    assert "does not exist" in line and "pass another path with --db" in line
    assert "--verdryx" not in line


def test_a_replay_miss_names_each_faces_cache_flag(
    capsys: pytest.CaptureFixture[str],
    pytester: pytest.Pytester,
    anthropic_env: FakeAnthropic,
) -> None:
    sets = write_evalset(
        pytester.path, "live", "live", [{"id": "c", "prompt": "p", "expected": "x"}]
    )
    db = pytester.path / "s.db"
    Store.open(db).close()
    code = main(["eval", str(sets), "--model", "claude-x-1", "--cache", "replay", "--db", str(db)])
    err = capsys.readouterr().err
    assert code == 1  # a case that could not be scored: the run is stored as incomplete
    assert "record it first with --cache=on" in err and "--verdryx" not in err
    result = pytester.runpytest(
        "--verdryx-model=claude-x-1", "--verdryx-cache=replay", f"--verdryx-db={db}"
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*record it first with --verdryx-cache=on*"])
    assert anthropic_env.requests == []


def test_an_unjudged_case_names_each_faces_judge_flag(
    capsys: pytest.CaptureFixture[str], pytester: pytest.Pytester, anthropic_env: FakeAnthropic
) -> None:
    case = {"id": "j", "prompt": "p", "grader": "llm_judge", "rubric": "r", "output": "o"}
    sets = write_evalset(pytester.path, "judged", "judged", [case])
    cli_db, plugin_db = pytester.path / "cli.db", pytester.path / "plugin.db"
    # Its one case unmeasured: the run measured nothing and is refused (exit 2), and still
    # says why, in the CLI's flags.
    assert main(["eval", str(sets), "--model", "claude-x-1", "--db", str(cli_db), "--json"]) == 2
    document = json.loads(capsys.readouterr().out)
    (unmeasured,) = document["unmeasured"]
    assert "pass --judge MODEL (--judge stub names" in unmeasured["reason"]
    pytester.runpytest("--verdryx-model=claude-x-1", f"--verdryx-db={plugin_db}")
    (score,) = stored_runs(plugin_db)[0].scores
    assert score.unmeasured is not None
    assert "pass --verdryx-judge MODEL (--verdryx-judge stub names" in score.unmeasured
