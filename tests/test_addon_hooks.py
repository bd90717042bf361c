"""A third-party add-on plugs in through the hooks alone (docs/add-ons.md): installed as a real
package would be (a `*.dist-info` folder with its entry point, on the path of a real pytest
session or `verdryx` process), it brings an option to both faces, a command, and sees the
concluded run; a name already taken and an add-on that cannot load are one clear line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.plugin_support import exact_case, write_evalset

ROOT = Path(__file__).resolve().parent.parent

ADDON = '''
"""A third-party add-on: one option, one command, and the concluded run written down."""

import json
from pathlib import Path

from verdryx_core.hooks import AddonCommand, AddonOption, hookimpl


@hookimpl
def verdryx_addoption():
    return [AddonOption("hello_file", "where the hello add-on writes", metavar="PATH",
                        env="HELLO_FILE")]


@hookimpl
def verdryx_cli_commands():
    return [AddonCommand("hello", "hello_command")]


@hookimpl
def verdryx_configure(session):
    if session.options.get("hello_file") == "refuse":
        from verdryx_core.errors import UsageError
        raise UsageError("--verdryx-hello-file refuse: refused by the hello add-on")
    session.state["hello"] = "configured"


@hookimpl
def verdryx_run_concluded(conclusion, session):
    path = session.options.get("hello_file")
    if path == "raise":
        raise RuntimeError("the hello add-on broke")
    if path:
        Path(path).write_text(json.dumps({
            "run": conclusion.run.id,
            "cases": len(conclusion.run.scores),
            "exit": conclusion.exit,
            "stored": conclusion.stored,
            "state": session.state.get("hello"),
        }))
    return [f"hello: told of run {conclusion.run.id[:8]}"]
'''

COMMAND = '''
"""`verdryx hello NAME`."""

NAME = "hello"
HELP = "say hello (the hello add-on)"


def add_arguments(parser):
    parser.add_argument("name")


def run(args):
    print(f"hello, {args.name}")
    return 0
'''


def _install(root: Path, module: str = "hello_addon", name: str = "hello") -> Path:
    """The add-on as pip leaves an installed package: its modules and a dist-info folder
    naming the entry point. Returns the folder to put on the path."""
    site = root / "site"
    (site / "hello_addon-1.0.dist-info").mkdir(parents=True, exist_ok=True)
    (site / "hello_addon.py").write_text(ADDON)
    (site / "hello_command.py").write_text(COMMAND)
    (site / "hello_addon-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: hello-addon\nVersion: 1.0\n"
    )
    (site / "hello_addon-1.0.dist-info" / "entry_points.txt").write_text(
        f"[verdryx.addons]\n{name} = {module}\n"
    )
    return site


def _env(site: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTEST_ADDOPTS"}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT)])
    return env


def _pytest(cwd: Path, site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env=_env(site),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _verdryx(cwd: Path, site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "verdryx_core.cli", *args],
        cwd=cwd,
        env=_env(site),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_an_add_on_brings_an_option_and_sees_the_concluded_run(tmp_path: Path) -> None:
    site = _install(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pytest.ini").write_text("[pytest]\n")
    write_evalset(project, "qa", "qa", [exact_case("c1", "yes"), exact_case("c2", "no")])
    told = tmp_path / "told.json"
    result = _pytest(project, site, "--no-verdryx-store", f"--verdryx-hello-file={told}")
    assert result.returncode == 1, result.stdout + result.stderr  # c2 fails its case
    seen = json.loads(told.read_text())
    assert seen["cases"] == 2 and seen["exit"] == "failed" and seen["stored"] is False
    # What configure kept, the end sees.
    assert seen["state"] == "configured"
    assert f"hello: told of run {seen['run'][:8]}" in result.stdout
    # The ini key and the environment variable are the same option.
    (project / "pytest.ini").write_text(f"[pytest]\nverdryx_hello_file = {told}.ini\n")
    assert _pytest(project, site, "--no-verdryx-store", "-k", "c1").returncode == 0
    assert json.loads(Path(f"{told}.ini").read_text())["exit"] == "ok"


def test_an_add_on_refusing_at_configure_is_a_usage_error_and_one_raising_is_a_line(
    tmp_path: Path,
) -> None:
    site = _install(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pytest.ini").write_text("[pytest]\n")
    write_evalset(project, "qa", "qa", [exact_case("c1", "yes")])
    refused = _pytest(project, site, "--no-verdryx-store", "--verdryx-hello-file=refuse")
    assert refused.returncode == 4, refused.stdout + refused.stderr
    assert "refused by the hello add-on" in refused.stdout + refused.stderr
    broken = _pytest(project, site, "--no-verdryx-store", "--verdryx-hello-file=raise")
    # The run is still what it was: its one case passed.
    assert broken.returncode == 0, broken.stdout + broken.stderr
    assert "add-on hello: RuntimeError: the hello add-on broke" in broken.stdout


def test_an_add_on_brings_a_command_and_an_option_of_verdryx_eval(tmp_path: Path) -> None:
    site = _install(tmp_path)
    said = _verdryx(tmp_path, site, "hello", "world")
    assert said.returncode == 0 and said.stdout == "hello, world\n", said.stderr
    listed = _verdryx(tmp_path, site, "--help")
    assert "say hello (the hello add-on)" in listed.stdout
    # The in-package add-ons' commands are listed beside it, in their places.
    names = re.findall(r"^ {4}([a-z][a-z_-]*)(?:\s|$)", listed.stdout, re.M)
    assert {"hello", "verify", "serve", "keys", "slo", "events", "cost-per-correct"} <= set(names)
    assert names == sorted(names, key=lambda name: name.replace("-", "_"))
    assert "--hello-file" in _verdryx(tmp_path, site, "eval", "--help").stdout
    # `verdryx eval` tells the add-on of its concluded run too, and lets it refuse one.
    write_evalset(tmp_path, "qa", "qa", [exact_case("c1", "yes")])
    told = tmp_path / "told.json"
    db = str(tmp_path / "v.db")
    evaluated = _verdryx(
        tmp_path, site, "eval", "qa.evalset.json", "--db", db, "--hello-file", str(told)
    )
    assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
    seen = json.loads(told.read_text())
    assert seen["exit"] == "ok" and seen["stored"] is True and seen["state"] == "configured"
    assert f"hello: told of run {seen['run'][:8]}" in evaluated.stdout
    refused = _verdryx(
        tmp_path, site, "eval", "qa.evalset.json", "--db", db, "--hello-file", "refuse"
    )
    assert refused.returncode == 2
    assert "refused by the hello add-on" in refused.stderr


@pytest.mark.parametrize(
    ("module", "name", "expected"),
    [
        # A command of a built-in's name would silently lose to it, or hide it.
        ("clash_addon", "clash", "add-on 'clash': command 'drift' is already verdryx itself's"),
        ("no_such_module", "ghost", "add-on 'ghost': loading entry point 'no_such_module'"),
    ],
)
def test_an_add_on_that_cannot_plug_in_is_one_line_naming_it(
    tmp_path: Path, module: str, name: str, expected: str
) -> None:
    site = _install(tmp_path, module=module, name=name)
    (site / "clash_addon.py").write_text(
        textwrap.dedent(
            """
            from verdryx_core.hooks import AddonCommand, hookimpl

            @hookimpl
            def verdryx_cli_commands():
                return [AddonCommand("drift", "hello_command")]
            """
        )
    )
    result = _verdryx(tmp_path, site, "--help")
    assert result.returncode == 2
    assert result.stderr.startswith("error: " + expected), result.stderr
    assert "(package hello-addon 1.0)" in result.stderr or module == "clash_addon"
    assert len(result.stderr.strip().splitlines()) == 1


def test_an_add_on_option_of_a_taken_name_is_refused_in_pytest(tmp_path: Path) -> None:
    site = _install(tmp_path, module="taken_addon")
    (site / "taken_addon.py").write_text(
        textwrap.dedent(
            """
            from verdryx_core.hooks import AddonOption, hookimpl

            @hookimpl
            def verdryx_addoption():
                return [AddonOption("model", "a second --verdryx-model")]
            """
        )
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    result = _pytest(tmp_path, site)
    assert result.returncode == 4, result.stdout + result.stderr
    assert "add-on 'hello': option 'model' is already verdryx itself's" in result.stderr
