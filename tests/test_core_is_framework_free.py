"""verdryx_core never imports pytest (README.md, docs/architecture.md): proven in a clean
subprocess."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import verdryx_core


def test_core_imports_with_pytest_blocked() -> None:
    modules = [
        info.name
        for info in pkgutil.walk_packages(verdryx_core.__path__, prefix="verdryx_core.")
        if not info.name.endswith(".__main__")  # `python -m` entry points run on import
    ]
    assert "verdryx_core.store" in modules
    code = (
        "import sys, importlib\n"
        "sys.modules['pytest'] = None\n"
        "sys.modules['_pytest'] = None\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print('ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
