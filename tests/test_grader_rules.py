"""Each grader's load rules live with it (its class's `check_case` and `options`), built-in
graders as plugged-in ones (docs/graders.md, "Graders from add-ons"): loading a case asks only
the grader it names, and a check's grader reads it as a case of its own."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from verdryx_core import EvalCase, EvalSet, EvalSetError, evaluate
from verdryx_core.cases import GRADER_KINDS
from verdryx_core.evalsets.load import load_evalset
from verdryx_core.graders.registry import accepted_options, grader_rules


@pytest.mark.parametrize("kind", GRADER_KINDS)
def test_every_built_in_grader_declares_its_own_rules(kind: str) -> None:
    found = grader_rules(kind)
    assert found is not None
    assert found.kind == kind
    assert callable(found.check_case)


def test_the_options_each_grader_takes_are_its_own() -> None:
    assert accepted_options("exact") == {
        "ignore_case",
        "normalize_whitespace",
        "ignore_punctuation",
        "unicode_normalize",
    }
    assert accepted_options("numeric") == {"tolerance", "relative"}
    assert accepted_options("regex") == frozenset()
    assert accepted_options("some_plugged_in_grader") == {"options"}


def test_loading_a_case_imports_only_the_grader_it_names(tmp_path: Path) -> None:
    path = tmp_path / "one.evalset.json"
    path.write_text(
        json.dumps({"id": "one", "cases": [{"id": "a", "prompt": "p", "expected": "x"}]})
    )
    script = textwrap.dedent(
        f"""
        import sys
        from verdryx_core.evalsets.load import load_evalset
        load_evalset({str(path)!r})
        print(" ".join(sorted(sys.modules)))
        """
    )
    loaded = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "verdryx_core.graders.exact" in loaded
    for other in ("verdryx_core.graders.execution", "verdryx_core.judge.grader"):
        assert other not in loaded


def _load(tmp_path: Path, case: dict[str, Any]) -> EvalSetError:
    path = tmp_path / "s.evalset.json"
    path.write_text(json.dumps({"id": "s", "cases": [{"id": "c", "prompt": "p", **case}]}))
    with pytest.raises(EvalSetError) as caught:
        load_evalset(path)
    return caught.value


def test_an_exec_check_reads_its_test_file_from_the_case_workspace(tmp_path: Path) -> None:
    refused = _load(tmp_path, {"checks": [{"grader": "exec", "tests": "test_it.py"}]})
    assert refused.field == "checks[0].tests"
    assert refused.detail == (
        "'test_it.py' names a test file, and the case has no 'workspace' to read it from; "
        "give the test code itself, or a workspace holding the file"
    )
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "test_it.py").write_text("def test_it():\n    pass\n")
    path = tmp_path / "w.evalset.json"
    case = {"id": "c", "prompt": "p", "workspace": "work"}
    checks = [{"grader": "exec", "tests": "test_it.py"}]
    path.write_text(json.dumps({"id": "w", "cases": [{**case, "checks": checks}]}))
    assert load_evalset(path).cases[0].checks is not None


def test_an_outcome_tag_check_is_not_told_a_workspace_would_help(tmp_path: Path) -> None:
    refused = _load(tmp_path, {"checks": [{"grader": "outcome_tag"}]})
    assert refused.detail == (
        "grader 'outcome_tag' cannot be a check (checks grade parts of one output); give it "
        "a case of its own"
    )


@pytest.mark.parametrize(
    ("case", "field", "detail"),
    [
        (
            EvalCase(id="n", prompt="p", grader="numeric", expected="many", output="1"),
            "expected",
            "grader 'numeric' expects a number, got 'many'",
        ),
        (
            EvalCase(id="t", prompt="p", grader="tool_trace", output=[]),
            "expected_tools",
            "grader 'tool_trace' requires the field 'expected_tools' (names) or "
            "'expected_tool_calls' (names and arguments) or 'expected_tool_calls_any'",
        ),
        (
            EvalCase(
                id="e",
                prompt="p",
                grader="exec",
                output="x",
                options={"tests": "def test_it(): pass", "command": ["true"]},
            ),
            "command",
            "give one of 'tests' and 'command', not both",
        ),
    ],
)
def test_a_python_built_case_meets_its_graders_rules(
    case: EvalCase, field: str, detail: str
) -> None:
    with pytest.raises(EvalSetError) as caught:
        evaluate([EvalSet(id="nb", cases=(case,))])
    assert (caught.value.case, caught.value.field, caught.value.detail) == (
        f"'{case.id}' (#1)",
        field,
        detail,
    )
