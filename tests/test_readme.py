"""README's two commands are the front door: CI must run exactly the test command it gives."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```bash\n(.+?)\n```", text)


def test_readme_starts_with_the_main_job_and_the_test_command() -> None:
    main_job, tests = _commands()[:2]
    assert "pip install" in main_job and "pytest examples/" in main_job
    assert "--verdryx-baseline=v1" in main_job
    assert "pip install" in tests and "-m pytest" in tests


def test_ci_runs_exactly_the_readme_test_command() -> None:
    tests = _commands()[1]
    ci = (ROOT / ".ci" / "run").read_text()
    assert ci.splitlines()[-1] == tests  # it ends with it: nothing after can change the verdict
    # The browser test skips without chromium: CI installs it rather than skip it.
    assert "command -v chromium || (apt-get update && apt-get install -y chromium)" in ci


def test_the_examples_baseline_is_committed() -> None:
    assert (ROOT / ".verdryx" / "baselines" / "v1.json").is_file()
