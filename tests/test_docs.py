"""The docs are part of the product: every option the plugin registers and every eval set
field is documented, and the README links the docs."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_verdryx.options import all_options
from verdryx_core.evalsets.load import evalset_schema

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def test_every_plugin_option_and_ini_key_is_documented(pytestconfig: pytest.Config) -> None:
    text = (DOCS / "options.md").read_text()
    group = pytestconfig._parser.getgroup("verdryx")  # the registered group, not our list
    flags = [name for option in group.options for name in option.names()]
    # verdryx's own options and its add-ons' (--verdryx-events, --verdryx-typed-url...).
    assert len(flags) == len(all_options())
    for flag in flags:
        assert f"`{flag}`" in text, f"{flag} is not documented in docs/options.md"
    for option in all_options():
        assert f"`{option.name}`" in text, f"ini key {option.name} is not documented"
    for ini in ("verdryx_evalset_patterns", "verdryx_prices"):
        assert f"`{ini}`" in text


def test_the_evalset_reference_matches_the_schema() -> None:
    text = (DOCS / "evalset-reference.md").read_text()
    schema = evalset_schema()
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", text, flags=re.MULTILINE))
    fields = set(schema["properties"])
    for name in ("case", "defaults", "check", "tool_call", "message"):
        fields |= set(schema["$defs"][name]["properties"])
    assert documented == fields
    for kind in schema["$defs"]["grader"]["examples"]:
        assert f"`{kind}`" in text


def test_the_readme_links_existing_docs() -> None:
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert "docs/getting-started.md" in links
    missing = [link for link in links if not (ROOT / link).is_file()]
    assert not missing, f"README links missing docs: {missing}"


def test_the_python_api_page_runs_as_written(tmp_path: Path) -> None:
    """docs/python-api.md's example, run as a user would from a checkout: it prints the
    verdict against the committed baseline, and the run it printed is the one it stored."""
    text = (DOCS / "python-api.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert blocks, "docs/python-api.md has no python example"
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    shutil.copytree(ROOT / ".verdryx", tmp_path / ".verdryx")
    done = subprocess.run(
        [sys.executable, "-c", blocks[0]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "verdict: on-track" in done.stdout
    assert "fails CI: no" in done.stdout
    found = re.search(r"^run (\S+): mean ([0-9.]+) over (\d+) cases$", done.stdout, re.M)
    assert found is not None, done.stdout
    from verdryx_core import Store

    with Store.open(tmp_path / "verdryx.db") as store:
        run = store.load_run(found.group(1))
    assert run is not None and run.complete
    values = [score.value for score in run.scores if score.value is not None]
    assert len(values) == int(found.group(3))
    assert f"{sum(values) / len(values):.3f}" == found.group(2)
    # The conclusion it printed last: the same verdict, and CI would pass.
    assert "gate vs v1: on-track" in done.stdout and "exit: ok" in done.stdout
