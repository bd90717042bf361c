"""The exit-code table of docs/cli.md (one table, a column per face) matches what the two
faces really return: real pytest sessions (pytester) for the plugin,
`verdryx_core.cli.main` in-process for the CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from plugin_support import exact_case, write_evalset

from verdryx_core.cli import main

ROOT = Path(__file__).resolve().parent.parent


def _tables() -> list[dict[str, str]]:
    """The exit-code table of docs/cli.md, as one {exit code: its text} per face (the
    plugin's column, then the CLI's); a face's empty cell is no code of that face."""
    section = (ROOT / "docs" / "cli.md").read_text().split("## Exit codes", 1)[1]
    section = section.split("\n## ", 1)[0]
    rows = re.findall(r"^\| ([0-9][0-9 /]*) \|(.*)\|(.*)\|$", section, re.M)
    assert rows, "no exit-code table in docs/cli.md"
    plugin = {code.strip(): text.strip() for code, text, _ in rows if text.strip()}
    cli = {code.strip(): text.strip() for code, _, text in rows if text.strip()}
    return [plugin, cli]


def _documented(table: dict[str, str], code: int, words: str) -> None:
    assert str(code) in table, f"exit {code} is not in the table"
    assert words in table[str(code)], f"exit {code}'s row does not say {words!r}"


def test_the_plugin_exits_as_its_table_says(pytester: pytest.Pytester) -> None:
    plugin, _ = _tables()
    db = pytester.path / "store.db"
    good = [exact_case(f"c{i}", "yes") for i in range(10)]
    write_evalset(pytester.path, "s", "s", good)
    assert pytester.runpytest(f"--verdryx-db={db}", "--verdryx-save-baseline=v1").ret == 0

    on_track = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1")
    assert on_track.ret == pytest.ExitCode.OK
    _documented(plugin, on_track.ret, "`on-track`")

    # Half the cases fell (reported as dropped, not failed): the verdict fails the run.
    worse = [exact_case(f"c{i}", "no" if i < 5 else "yes") for i in range(10)]
    write_evalset(pytester.path, "s", "s", worse)
    regressed = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1")
    assert regressed.ret == pytest.ExitCode.TESTS_FAILED
    regressed.stdout.fnmatch_lines(["*REGRESSED*"])
    _documented(plugin, regressed.ret, "`regressed`")

    write_evalset(pytester.path, "s", "s", good)
    refused = pytester.runpytest(
        f"--verdryx-db={db}", "--verdryx-baseline=v1", "--verdryx-model=claude-other"
    )
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    _documented(plugin, refused.ret, "a gate refused")

    unknown = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=nope")
    assert unknown.ret == pytest.ExitCode.USAGE_ERROR
    _documented(plugin, unknown.ret, "an unknown baseline label")

    (pytester.path / "s.evalset.json").unlink()
    empty = pytester.runpytest(f"--verdryx-db={db}")
    assert empty.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    _documented(plugin, empty.ret, "no test collected")


def test_drift_and_verify_exit_as_the_cli_table_says(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    _, cli = _tables()
    db = pytester.path / "store.db"
    write_evalset(pytester.path, "s", "s", [exact_case(f"c{i}", "yes") for i in range(10)])
    assert pytester.runpytest(f"--verdryx-db={db}", "--verdryx-save-baseline=v1").ret == 0
    drift = ["drift", "--baseline", "v1", "--db", str(db), "--root", str(pytester.path)]

    assert main(drift) == 0
    _documented(cli, 0, "`drift`, `gate`: `on-track`")

    worse = [exact_case(f"c{i}", "no" if i < 5 else "yes") for i in range(10)]
    write_evalset(pytester.path, "s", "s", worse)
    pytester.runpytest(f"--verdryx-db={db}")
    assert main(drift) == 1
    _documented(cli, 1, "`drift`, `gate`: `regressed`")

    assert main([*drift[:2], "nope", *drift[3:]]) == 2
    _documented(cli, 2, "an unknown run or baseline")
    capsys.readouterr()

    workspace = pytester.path / "ws"
    workspace.mkdir()
    (workspace / "report.md").write_text("done\n")
    verify_row = cli["0 / 1 / 2 / 3"]
    assert "`verify` only: PASS / FAIL / FLAG / error" in verify_row
    criteria = {
        "PASS": [{"id": "r", "type": "file_exists", "path": "report.md"}],
        "FAIL": [{"id": "n", "type": "file_exists", "path": "notes.md"}],
        "FLAG": [],  # nothing checked proves nothing
    }
    for code, verdict in enumerate(["PASS", "FAIL", "FLAG"]):
        contract = pytester.path / f"{verdict}.json"
        contract.write_text(json.dumps({"task_id": "t", "success_criteria": criteria[verdict]}))
        assert main(["verify", str(contract), "--base-path", str(workspace)]) == code
        assert capsys.readouterr().out.startswith(verdict)
    assert main(["verify", str(pytester.path / "missing.json"), "--base-path", "ws"]) == 3
