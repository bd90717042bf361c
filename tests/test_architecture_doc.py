"""docs/architecture.md is true: its module map is the code's (regenerated from the module
docstrings), and every module or folder it names exists."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "architecture.md"


def test_the_module_map_is_up_to_date() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "architecture_doc.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_the_map_lists_every_module() -> None:
    text = PAGE.read_text(encoding="utf-8")
    listed = set(re.findall(r"^\*\*`([\w/]+)/`\*\*$", text, re.M))
    folders = {
        path.parent.relative_to(ROOT).as_posix()
        for package in ("verdryx_core", "pytest_verdryx")
        for path in (ROOT / package).rglob("*.py")
        if "__pycache__" not in path.parts
    }
    assert listed == folders


def test_every_path_and_module_the_page_names_exists() -> None:
    text = PAGE.read_text(encoding="utf-8")
    paths = set(re.findall(r"`((?:verdryx_core|pytest_verdryx)/[\w/.]*)`", text))
    assert len(paths) > 20
    missing = sorted(path for path in paths if not (ROOT / path.rstrip("/")).exists())
    assert missing == []
    dotted = set(re.findall(r"`((?:verdryx_core|pytest_verdryx)(?:\.\w+)*)`", text))
    for name in dotted:
        base = ROOT / name.replace(".", "/")
        assert base.with_suffix(".py").exists() or base.is_dir(), name
