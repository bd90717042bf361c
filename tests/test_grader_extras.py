"""A grader that needs an extra that is not installed is a collection error naming
`pip install 'verdryx[EXTRA]'`, never a FLAG or a skip (docs/outcomes.md, "What counts as
unmeasured"): a case that could never be graded here is not "unmeasured" case by case.

The `contract` grader keeps an evidence bundle of a workspace case's checks, sealed as
canonical JSON by the `rfc8785` package (the `contracts` extra). The package is made
unimportable for the test (`sys.modules[name] = None` is how Python spells "not installed"
to `import`), in both faces.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from verdryx_core.cli import main

_CONTRACT = {
    "success_criteria": [
        {"id": "greets", "type": "file_contains", "path": "hello.txt", "pattern": "hello"}
    ]
}
_INSTALL = "pip install 'verdryx[contracts]'"


@pytest.fixture
def no_rfc8785(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "rfc8785", None)


def _workspace_case(**extra: Any) -> dict[str, Any]:
    return {
        "id": "greet",
        "prompt": "write a greeting",
        "output": "written",
        "workspace": {"files": {"hello.txt": "hello there\n"}},
        "grader": "contract",
        "contract": _CONTRACT,
        **extra,
    }


def _checks_case() -> dict[str, Any]:
    case = _workspace_case()
    del case["grader"], case["contract"]
    case["checks"] = [
        {"grader": "contains", "expected": "written"},
        {"grader": "contract", "contract": _CONTRACT},
    ]
    return case


def _write(folder: Path, case: dict[str, Any]) -> Path:
    path = folder / "ws.evalset.json"
    path.write_text(json.dumps({"id": "ws", "cases": [case]}), encoding="utf-8")
    return path


@pytest.mark.usefixtures("no_rfc8785")
@pytest.mark.parametrize(
    ("case", "field"), [(_workspace_case(), "grader"), (_checks_case(), "checks[1].grader")]
)
def test_plugin_a_workspace_contract_case_without_the_extra_is_a_collection_error(
    pytester: pytest.Pytester, case: dict[str, Any], field: str
) -> None:
    _write(pytester.path, case)
    result = pytester.runpytest(f"--verdryx-db={pytester.path / 's.db'}", "-rA")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*ERROR collecting ws.evalset.json*"])
    text = result.stdout.str()
    assert f"case 'greet' (#1): field '{field}': grader 'contract' keeps" in text
    assert _INSTALL in text
    assert "FLAG" not in text and "skipped" not in text


@pytest.mark.usefixtures("no_rfc8785")
def test_cli_a_workspace_contract_case_without_the_extra_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = _write(tmp_path, _workspace_case())
    code = main(["eval", str(path), "--db", str(tmp_path / "s.db")])
    _, err = capsys.readouterr()
    assert code == 2
    [line] = err.strip().splitlines()
    assert "case 'greet' (#1): field 'grader'" in line and _INSTALL in line
    assert not (tmp_path / "s.db").exists()  # refused before anything ran


@pytest.mark.usefixtures("no_rfc8785")
def test_a_contract_case_without_a_workspace_needs_no_extra(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # It seals no bundle: the checks read the folder the output names (docs/graders.md).
    (tmp_path / "done").mkdir()
    (tmp_path / "done" / "hello.txt").write_text("hello\n")
    case = _workspace_case(output="done")
    del case["workspace"]
    code = main(["eval", str(_write(tmp_path, case)), "--db", str(tmp_path / "s.db"), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["mean_score"] == 1.0
