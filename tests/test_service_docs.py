"""docs/verification-service.md matches the OpenAPI document: every operation is in the API
reference table with every status it can answer, and every `verdryx serve` flag is documented."""

from __future__ import annotations

import re
from pathlib import Path

from verdryx_core.addons.service import openapi_document
from verdryx_core.cli import build_parser

DOC = Path(__file__).resolve().parent.parent / "docs" / "verification-service.md"


def test_the_api_reference_lists_every_operation_and_status() -> None:
    text = DOC.read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `([A-Z]+ /[^`]*)` \| (.*) \|$", text, flags=re.MULTILINE))
    document = openapi_document()
    operations = {
        f"{method.upper()} {path}": spec
        for path, methods in document["paths"].items()
        for method, spec in methods.items()
    }
    assert set(rows) == set(operations)
    for label, spec in operations.items():
        for status in spec["responses"]:
            assert f"`{status}`" in rows[label], f"{label}: status {status} is not documented"


def test_every_serve_option_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    parser = build_parser()
    serve = next(
        action.choices["serve"]
        for action in parser._subparsers._group_actions  # type: ignore[union-attr]
        if getattr(action, "choices", None) and "serve" in action.choices
    )
    flags = [
        flag
        for action in serve._actions
        for flag in action.option_strings
        if flag.startswith("--") and flag != "--help"
    ]
    assert flags
    for flag in flags:
        assert f"`{flag}" in text, f"verdryx serve {flag} is not documented"
