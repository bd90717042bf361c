"""Regenerate the module map of docs/architecture.md from the code: every module of
`verdryx_core` and `pytest_verdryx`, by package, with the first sentence of its docstring.

    python scripts/architecture_doc.py          # rewrite the map in place
    python scripts/architecture_doc.py --check  # exit 1 when the page is out of date

The map sits between the `<!-- modules:begin -->` and `<!-- modules:end -->` lines; the rest
of the page is written by hand. tests/test_architecture_doc.py runs `--check`.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parent.parent
PAGE: Final = ROOT / "docs" / "architecture.md"
PACKAGES: Final = ("verdryx_core", "pytest_verdryx")
BEGIN: Final = "<!-- modules:begin -->"
END: Final = "<!-- modules:end -->"
#: A sentence ends at `.`, `!` or `?` before a space, never inside `code` (`verdryx eval
#: SET... --model M`) nor at an ellipsis's dots (`0, 1, 2, ... in order`).
_SENTENCE: Final = re.compile(r"^((?:`[^`]*`|[^`])*?(?<!\.)[.!?])(?!\.)(\s|$)", re.DOTALL)


def first_sentence(path: Path) -> str:
    """The first sentence of the module's docstring, on one line ("" when it has none)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    doc = ast.get_docstring(tree) or ""
    paragraph = " ".join(doc.split("\n\n", 1)[0].split())
    found = _SENTENCE.match(paragraph)
    sentence = found.group(1) if found else paragraph
    return sentence.rstrip(":").replace("|", "\\|")


def module_map(root: Path = ROOT) -> str:
    """The map: one table per package folder, a row per module."""
    lines: list[str] = []
    for package in PACKAGES:
        folders: dict[Path, list[Path]] = {}
        for path in sorted((root / package).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            folders.setdefault(path.parent, []).append(path)
        for folder in sorted(folders):
            relative = folder.relative_to(root).as_posix()
            lines += ["", f"**`{relative}/`**", "", "| module | what it is |", "|---|---|"]
            for path in folders[folder]:
                lines.append(f"| `{path.name}` | {first_sentence(path)} |")
    return "\n".join(lines).strip("\n")


def render(page: str, root: Path = ROOT) -> str:
    head, _, rest = page.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{module_map(root)}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when out of date")
    args = parser.parse_args(argv)
    page = PAGE.read_text(encoding="utf-8")
    if BEGIN not in page or END not in page:
        print(f"{PAGE}: no {BEGIN} ... {END} section", file=sys.stderr)
        return 1
    fresh = render(page)
    if args.check:
        if fresh != page:
            print(f"{PAGE} is out of date: run python scripts/architecture_doc.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
