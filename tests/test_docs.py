"""The docs are part of the product: every option the plugin registers and every eval set
field is documented, and the README links the docs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_verdryx.options import OPTIONS
from verdryx_core.evalsets.load import evalset_schema

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def test_every_plugin_option_and_ini_key_is_documented(pytestconfig: pytest.Config) -> None:
    text = (DOCS / "options.md").read_text()
    group = pytestconfig._parser.getgroup("verdryx")  # the registered group, not our list
    flags = [name for option in group.options for name in option.names()]
    assert len(flags) == len(OPTIONS)
    for flag in flags:
        assert f"`{flag}`" in text, f"{flag} is not documented in docs/options.md"
    for option in OPTIONS:
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
