"""The GitHub Actions workflow of docs/ci.md: the same YAML as examples/ci/github-actions.yml,
valid against GitHub's workflow schema (the copy check-jsonschema vendors, offline), and its
verdryx/pytest steps run for real in a copy of the examples, twice, as two CI runs sharing
the cached store."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from junitparser import JUnitXml
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / "examples" / "ci" / "github-actions.yml"
BIN = Path(sys.executable).parent


def _schema() -> Path:
    vendored = resources.files("check_jsonschema.builtin_schemas.vendor")
    return Path(str(vendored.joinpath("github-workflows.json")))


def _check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "check-jsonschema"), "--schemafile", str(_schema()), str(path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def _workflow() -> dict[str, Any]:
    data: dict[str, Any] = YAML(typ="safe").load(WORKFLOW.read_text())
    return data


def test_the_docs_show_exactly_the_example_workflow() -> None:
    docs = (ROOT / "docs" / "ci.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", docs, re.S)
    assert WORKFLOW.read_text() in blocks


def test_the_workflow_is_valid_against_githubs_schema(tmp_path: Path) -> None:
    done = _check(WORKFLOW)
    assert done.returncode == 0, done.stdout + done.stderr
    # The check can fail: a step that both uses an action and runs a command is invalid.
    broken = WORKFLOW.read_text().replace(
        "      - uses: actions/checkout@v4\n",
        "      - uses: actions/checkout@v4\n        run: echo both\n",
    )
    assert broken != WORKFLOW.read_text()
    (tmp_path / "broken.yml").write_text(broken)
    assert _check(tmp_path / "broken.yml").returncode == 1


def test_the_history_cache_is_per_branch_and_saved_even_when_the_gate_fails() -> None:
    steps = _workflow()["jobs"]["evals"]["steps"]
    by_action = {step.get("uses", "").split("@")[0]: step for step in steps}
    restore, save = by_action["actions/cache/restore"], by_action["actions/cache/save"]
    store = _workflow()["env"]["VERDRYX_DB"]
    assert restore["with"]["path"] == save["with"]["path"] == store
    assert restore["with"]["key"] == save["with"]["key"]
    assert "github.head_ref || github.ref_name" in restore["with"]["key"]
    assert restore["with"]["restore-keys"].splitlines()[0] in restore["with"]["key"]
    assert save["if"] == "always()"
    upload = by_action["actions/upload-artifact"]
    assert upload["if"] == "always()"
    assert set(upload["with"]["path"].split()) == {"quality.xml", "report.html"}
    order = [step.get("uses", step.get("run", "")).split("@")[0] for step in steps]
    gate = next(i for i, text in enumerate(order) if text.startswith("pytest "))
    assert order.index("actions/cache/restore") < gate < order.index("actions/cache/save")


def _commands() -> list[str]:
    """The steps' verdryx and pytest commands, in order (installs and actions are GitHub's)."""
    runs = [step["run"] for step in _workflow()["jobs"]["evals"]["steps"] if "run" in step]
    return [run for run in runs if run.split()[0] in ("pytest", "verdryx")]


@pytest.mark.slow
def test_the_steps_run_in_a_copy_of_the_examples(tmp_path: Path) -> None:
    commands = _commands()
    assert any("--verdryx-baseline=v1" in command for command in commands)
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "examples", repo / "evals", ignore=shutil.ignore_patterns("ci"))
    shutil.copytree(ROOT / ".verdryx", repo / ".verdryx", ignore=shutil.ignore_patterns("*.db*"))
    # A project's pytest configuration marks its root: where .verdryx/baselines/ is read.
    (repo / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "VERDRYX_"))},
        **_workflow()["env"],
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp_path / "home"),  # no ~/.taipan: the workflow's store, nowhere else
    }
    for attempt in (1, 2):  # two CI runs; the cache carries the store from one to the next
        for command in commands:
            done = subprocess.run(
                ["bash", "-c", command],
                cwd=repo,
                env=env,
                capture_output=True,
                text=True,
                check=False,
                timeout=300,
            )
            assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}{done.stderr}"
        suite = next(iter(JUnitXml.fromfile(str(repo / "quality.xml"))))
        properties = {prop.name: prop.value for prop in suite.properties()}
        assert properties["verdryx.baseline"] == "v1"
        assert properties["verdryx.verdict"] == "on-track"
        assert suite.tests >= 20 and suite.failures == 0 and suite.errors == 0
        assert "<html" in (repo / "report.html").read_text()[:500].lower()
        assert (repo / _workflow()["env"]["VERDRYX_DB"]).is_file()
        # `verdryx runs` lists this run and every one before it: the history is kept. A run
        # with an agent under test is listed by it (JUnit's `verdryx.target`).
        listed_as = properties["verdryx.target"] or properties["verdryx.model"]
        assert done.stdout.count(listed_as) >= attempt, done.stdout


@pytest.mark.parametrize("name", ["quality.xml", "report.html"])
def test_the_uploaded_files_are_the_ones_the_gate_writes(name: str) -> None:
    gate = next(command for command in _commands() if command.startswith("pytest "))
    assert name in gate
