"""No import cycles inside `pytest_verdryx` or `verdryx_core`, read statically from the source.

Every import counts: module-level, inside a function, under `if TYPE_CHECKING:`. A cycle
broken by a function-level import is still a cycle: the two modules cannot be read, tested
or replaced one without the other. The picture the graph must keep is in
docs/architecture.md.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("pytest_verdryx", "verdryx_core")


def module_files(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Dotted module name -> source file, for every .py file of `packages` under `root`."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imports_of(name: str, path: Path, modules: Mapping[str, Path]) -> set[str]:
    """The modules of `modules` that the file imports, wherever the import statement is."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join([*base, node.module] if node.module else base)
            else:
                origin = node.module or ""
            for alias in node.names:
                submodule = f"{origin}.{alias.name}"
                targets.add(submodule if submodule in modules else origin)
    return {target for target in targets if target in modules and target != name}


def import_graph(root: Path, packages: Iterable[str]) -> dict[str, set[str]]:
    modules = module_files(root, packages)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


@functools.cache
def _whole_project() -> dict[str, frozenset[str]]:
    return {name: frozenset(targets) for name, targets in import_graph(ROOT, PACKAGES).items()}


def project_graph(packages: Iterable[str]) -> dict[str, set[str]]:
    """`import_graph(ROOT, packages)`, from one reading of the whole project (every file
    parsed once per process, not once per test): an import between the packages kept is the
    same edge whichever others were read."""
    kept = tuple(packages)

    def inside(module: str) -> bool:
        return module.partition(".")[0] in kept

    return {
        name: {target for target in targets if inside(target)}
        for name, targets in _whole_project().items()
        if inside(name)
    }


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycles(package: str) -> None:
    graph = project_graph([package])
    assert len(graph) > 5  # the walk found the package's modules
    found = cycles(graph)
    assert found == [], "import cycles (each group imports itself round): " + "; ".join(
        " <-> ".join(group) for group in found
    )


def test_core_never_imports_the_plugin() -> None:
    graph = project_graph(PACKAGES)
    wrong = sorted(
        f"{name} -> {target}"
        for name, targets in graph.items()
        if name.startswith("verdryx_core")
        for target in targets
        if target.startswith("pytest_verdryx")
    )
    assert wrong == []


def _write(root: Path, files: Mapping[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_a_cycle_through_a_function_level_import_is_found(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg.b import helper\n",
            "pkg/b.py": "def helper():\n    from pkg import a\n    return a\n",
            "pkg/c.py": "import pkg.a\n",
        },
    )
    assert cycles(import_graph(tmp_path, ["pkg"])) == [["pkg.a", "pkg.b"]]


def test_type_checking_and_relative_imports_count(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/sub/__init__.py": "from .x import X\n",
            "pkg/sub/x.py": "from typing import TYPE_CHECKING\nX = 1\n"
            "if TYPE_CHECKING:\n    from ..y import Y\n",
            "pkg/y.py": "from pkg.sub import x\nY = 2\n",
        },
    )
    graph = import_graph(tmp_path, ["pkg"])
    assert graph["pkg.sub"] == {"pkg.sub.x"}
    assert graph["pkg.sub.x"] == {"pkg.y"}
    assert cycles(graph) == [["pkg.sub.x", "pkg.y"]]


def test_an_acyclic_graph_has_no_cycles(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {"pkg/__init__.py": "", "pkg/a.py": "import pkg.b\n", "pkg/b.py": "import os\n"},
    )
    assert cycles(import_graph(tmp_path, ["pkg"])) == []


def _layers() -> list[list[str]]:
    """The layers docs/architecture.md states, lowest first (each a list of packages)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("<!-- layers:begin -->", 1)[1].split("<!-- layers:end -->", 1)[0]
    layers = []
    for line in section.strip().splitlines():
        names = re.findall(r"`([\w.]+)`", line)
        assert names, line
        layers.append(names)
    return layers


def _layer_of(module: str, layers: list[list[str]]) -> int:
    """The layer of the longest package named in `layers` that holds `module`."""
    best, found = -1, -1
    for index, names in enumerate(layers):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > best:
                best, found = len(name), index
    assert found >= 0, f"{module} is in no layer of docs/architecture.md"
    return found


def test_imports_only_point_down_the_layers() -> None:
    layers = _layers()
    assert len(layers) >= 10
    graph = project_graph(PACKAGES)
    upward = sorted(
        f"{name} (layer {_layer_of(name, layers) + 1}) -> {target} "
        f"(layer {_layer_of(target, layers) + 1})"
        for name, targets in graph.items()
        for target in targets
        if _layer_of(target, layers) > _layer_of(name, layers)
    )
    assert upward == [], "imports that point up docs/architecture.md's layers:\n" + "\n".join(
        upward
    )


def test_no_core_module_imports_an_add_on() -> None:
    graph = project_graph(PACKAGES)
    faces = ("verdryx_core.addons", "verdryx_core.cli")
    wrong = sorted(
        f"{name} -> {target}"
        for name, targets in graph.items()
        if name.startswith("verdryx_core") and not name.startswith(faces)
        for target in targets
        if target.startswith("verdryx_core.addons")
    )
    assert wrong == []


def test_no_face_imports_an_add_on() -> None:
    """The faces call the add-ons' hooks (verdryx_core/hooks.py) and never import one: an
    add-on's options, commands and exports plug in (docs/add-ons.md)."""
    graph = project_graph(PACKAGES)
    faces = ("pytest_verdryx", "verdryx_core.cli")
    assert any(name.startswith("verdryx_core.cli.") for name in graph)
    wrong = sorted(
        f"{name} -> {target}"
        for name, targets in graph.items()
        if name.startswith(faces)
        for target in targets
        if target.startswith("verdryx_core.addons")
    )
    assert wrong == []


def test_a_face_importing_an_add_on_is_found(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "verdryx_core/__init__.py": "",
            "verdryx_core/addons/__init__.py": "",
            "verdryx_core/addons/typed/__init__.py": "X = 1\n",
            "verdryx_core/cli/__init__.py": "",
            "verdryx_core/cli/eval.py": "def run():\n    from verdryx_core.addons.typed import X\n",
        },
    )
    graph = import_graph(tmp_path, ["verdryx_core"])
    assert graph["verdryx_core.cli.eval"] == {"verdryx_core.addons.typed"}


def test_add_ons_import_each_other_only_as_stated() -> None:
    graph = project_graph(["verdryx_core"])
    shared = {"verdryx_core.addons.errors", "verdryx_core.addons.canonical"}
    # `verdryx verify --server` submits the bundle with the service's client.
    allowed = {
        ("service", "contracts"),
        ("contracts", "service"),
        ("slo", "events"),
        ("slo", "traces"),
    }

    def addon(module: str) -> str | None:
        parts = module.split(".")
        return parts[2] if len(parts) > 3 and parts[1] == "addons" else None

    crossing = sorted(
        f"{name} -> {target}"
        for name, targets in graph.items()
        for target in targets
        if target not in shared
        and (pair := (addon(name), addon(target)))[0] is not None
        and pair[1] is not None
        and pair[0] != pair[1]
        and pair not in allowed
    )
    assert crossing == []
