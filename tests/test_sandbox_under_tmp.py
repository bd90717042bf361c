"""A Python that lives under /tmp (a venv of a checkout in /tmp, as CI jobs often make) still
runs in the sandbox: the code's private /tmp is mounted first and the running Python's
folders under it are shown after, in both kinds of isolation (docs/graders.md, "exec")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from test_exec_grader import needs_isolation

from verdryx_core.sandbox import ISOLATION_ENV

#: Run by the venv's Python: the sandbox's own probe, then a run that reports its prefix.
_SCRIPT = """
import json, sys, tempfile
from pathlib import Path
from verdryx_core.sandbox import Limits, detect_isolation, run_sandboxed
isolation = detect_isolation()
work = Path(tempfile.mkdtemp())
done = run_sandboxed([sys.executable, "-c", "import sys; print(sys.prefix)"], workdir=work,
                     isolation=isolation, limits=Limits(wall_s=60))
print(json.dumps([isolation.name, done.exit_code, done.output.strip()]))
"""


@pytest.fixture(scope="module")
def python_under_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("venv")
    assert str(folder).startswith("/tmp/"), "pytest's temporary folders are not under /tmp here"
    # As a checkout's venv is: readable by the sandbox's own user (mktemp's folder is not).
    folder.chmod(0o755)
    venv.create(folder, with_pip=False)
    # This interpreter's import path (the project and its dependencies) for the new venv.
    found = subprocess.run(
        [folder / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    )
    entries = [entry for entry in sys.path if entry and os.path.isdir(entry)]
    (Path(found.stdout.strip()) / "host.pth").write_text("\n".join(entries) + "\n")
    return folder


@needs_isolation
@pytest.mark.parametrize("kind", ["bwrap", "unshare"])
def test_a_python_under_tmp_runs_in_the_sandbox(python_under_tmp: Path, kind: str) -> None:
    env = {**os.environ, ISOLATION_ENV: kind}
    ran = subprocess.run(
        [python_under_tmp / "bin" / "python", "-c", _SCRIPT],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    if f"{kind} cannot create namespaces" in ran.stderr and kind == "unshare":
        pytest.skip("unshare's namespaces are not offered here")
    assert ran.returncode == 0, ran.stderr[-2000:]
    name, code, output = json.loads(ran.stdout.splitlines()[-1])
    assert (name, code, output) == (kind, 0, str(python_under_tmp)), ran.stdout
