"""The harness's code as the sandboxes see it: a folder of this process's own holding a copy
of `verdryx_core/sandbox/harness/` (under stub package files that import nothing, since
verdryx itself is not shown to the code) and the `sitecustomize` that installs the tests'
side of the harness (docs/workspaces-and-execution.md, "The harness").

Made once per process, read-only to the code, removed when the process exits.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Final

__all__ = ["HARNESS", "boot", "harness_folder"]

#: Where the folder is shown inside a sandbox.
HARNESS: Final = "/.verdryx/harness"
_MODULES: Final = ("__init__.py", "codec.py", "client.py", "server.py", "reaper.py")
_SITECUSTOMIZE: Final = (
    "# verdryx's harness: the tests' side loads the graded code's modules in its process.\n"
    "from verdryx_core.sandbox.harness.client import install\n\n"
    "install()\n"
)
_lock = threading.Lock()
_folder: list[Path] = []


def harness_folder() -> Path:
    """The folder (made on first use)."""
    with _lock:
        if not _folder:
            folder = Path(tempfile.mkdtemp(prefix="verdryx-harness-"))
            folder.chmod(0o755)
            package = folder / "verdryx_core" / "sandbox" / "harness"
            package.mkdir(parents=True)
            for stub in (folder / "verdryx_core", folder / "verdryx_core" / "sandbox"):
                (stub / "__init__.py").write_text('"""verdryx\'s harness only."""\n')
            source = Path(__file__).resolve().parent / "harness"
            for name in _MODULES:
                shutil.copyfile(source / name, package / name)
            (folder / "sitecustomize.py").write_text(_SITECUSTOMIZE)
            for path in folder.rglob("*"):
                path.chmod(0o755 if path.is_dir() else 0o644)
            atexit.register(shutil.rmtree, folder, ignore_errors=True)
            _folder.append(folder)
        return _folder[0]


def boot(where: str, module: str, call: str) -> str:
    """Python code (for `python -I -c`) that imports the harness `module` from the folder
    shown at `where` and runs `call` of it (`serve(3, '/work')`, say)."""
    return (
        f"import sys; sys.path.insert(0, {where!r}); "
        f"from verdryx_core.sandbox.harness.{module} import *; "
        f"sys.path.remove({where!r}); {call}"
    )
