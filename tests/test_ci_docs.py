"""docs/ci.md lists every JUnit property verdryx writes, and only those: a real session (with
and without xdist) writes them, junitparser reads them back, the docs' tables are compared."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from junitparser import JUnitXml, Properties
from plugin_support import exact_case, write_evalset

ROOT = Path(__file__).resolve().parent.parent


def _documented() -> set[str]:
    """The property names in the tables of the docs' JUnit section, but for the challenger's:
    they need a second agent, and test_plugin_challenger reads them from its sessions."""
    section = (ROOT / "docs" / "ci.md").read_text().split("## JUnit properties", 1)[1]
    return {
        name
        for row in re.findall(r"^\|([^|]+)\|([^|]*)\|", section, re.M)
        if not row[1].strip().startswith("with `--verdryx-challenger`")
        for name in re.findall(r"`(verdryx\.[a-z_]+)`", row[0])
    }


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]])
def test_every_junit_property_written_is_documented(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    db = pytester.path / "store.db"
    cases = [
        exact_case("pass", "yes"),
        exact_case("fail", "no"),
        # No recorded output: the stub model answers, sampled twice (stability label).
        {"id": "model", "prompt": "say yes", "expected": "stub output"},
        # A typed case with no typed service configured is unmeasured.
        {"id": "typed", "prompt": "p", "grader": "typed", "output": "o"},
    ]
    write_evalset(pytester.path, "s", "s", cases)
    # Sampled twice on both sides, the model case gets a drop test (`verdryx.case_p`, `_q`).
    pytester.runpytest(f"--verdryx-db={db}", "--verdryx-save-baseline=v1", "--verdryx-repeat=2")
    result = pytester.runpytest(
        f"--verdryx-db={db}",
        "--verdryx-baseline=v1",
        "--verdryx-repeat=2",
        "--junitxml=out.xml",
        *xdist,
    )
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    xml = JUnitXml.fromfile(str(pytester.path / "out.xml"))
    written: set[str] = set()
    for suite in xml:
        written |= {prop.name for prop in suite.properties() if prop.name.startswith("verdryx.")}
        for case in suite:
            written |= {
                prop.name
                for group in case.iterchildren(Properties)
                for prop in group
                if prop.name.startswith("verdryx.")
            }
    documented = _documented()
    assert written - documented == set(), "written but not in docs/ci.md"
    assert documented - written == set(), "documented in docs/ci.md but never written"
