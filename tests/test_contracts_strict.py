"""Strict contracts and bundles: hostile JSON is one line (never a traceback), a bundle is
validated against its published schema, and what the caps imply is checked (docs/contracts.md)."""

from __future__ import annotations

import copy
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import fastjsonschema
import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verdryx_core.addons.contracts import (
    BundleError,
    ContractError,
    bundle_hash,
    bundle_schema,
    collect_evidence,
    contract_from_data,
    load_bundle,
    load_contract,
    parse_bundle,
    verify_bundle,
)
from verdryx_core.cli import main
from verdryx_core.untrusted.json_input import StrictJSONError, parse_json_strict

VERDRYX = Path(sys.executable).parent / "verdryx"

CONTRACT = {
    "task_id": "t",
    "agent_id": "a",
    "success_criteria": [
        {"id": "r", "type": "file_contains", "path": "out/r.md", "pattern": "ok"},
        {"id": "d", "type": "dir_exists", "path": "out"},
    ],
}


@pytest.fixture
def sealed(tmp_path: Path) -> dict[str, Any]:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "r.md").write_text("all ok\n")
    return collect_evidence(contract_from_data(CONTRACT), tmp_path)


def reseal(bundle: dict[str, Any]) -> dict[str, Any]:
    bundle["bundle_hash"] = bundle_hash(bundle)
    return bundle


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[" * 100_000, "nests deeper than the JSON parser allows"),
        ("[" * 40 + "]" * 40, "nests more than 32 levels deep"),
        ('{"a": 1, "a": 2}', "the key 'a' appears twice"),
        ("[1e400]", "overflows to infinity"),
        ("[NaN]", "NaN is not a JSON value"),
        ("[9007199254740993]", "outside the exactly representable range"),
        ("[" + "9" * 5000 + "]", "not acceptable JSON"),
        ('["\\ud800"]', "lone surrogate (\\ud800)"),
        ("{", "not valid JSON at line 1, column 2"),
    ],
    ids=["deep", "depth-33", "dup-key", "inf", "nan", "big-int", "huge-int", "surrogate", "bad"],
)
def test_hostile_json_is_one_clear_error(text: str, words: str) -> None:
    with pytest.raises(StrictJSONError) as caught:
        parse_json_strict(text)
    assert words in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("which", ["contract", "bundle"])
def test_deep_nesting_on_the_command_line_is_one_line_exit_3(
    tmp_path: Path, sealed: dict[str, Any], which: str
) -> None:
    contract = tmp_path / "c.json"
    contract.write_text(json.dumps(CONTRACT))
    bundle = tmp_path / "b.json"
    bundle.write_text(json.dumps(sealed))
    (contract if which == "contract" else bundle).write_text("[" * 100_000)
    done = subprocess.run(
        [str(VERDRYX), "verify", str(contract), "--bundle", str(bundle)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3, done.stderr
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert "nests deeper than the JSON parser allows" in done.stderr
    assert "Traceback" not in done.stderr


def test_contract_ranges_are_validated(tmp_path: Path) -> None:
    too_big = copy.deepcopy(CONTRACT)
    too_big["success_criteria"].append(
        {"id": "n", "type": "line_count_gte", "path": "x", "min_lines": 2**53}
    )
    path = tmp_path / "c.json"
    path.write_text(json.dumps(too_big))
    with pytest.raises(ContractError, match="9007199254740992 is outside the exactly repr"):
        load_contract(path)
    too_big["success_criteria"][2] = {
        "id": "n",
        "type": "sqlite_table_has_rows",
        "path": "x",
        "table": "t",
        "min_rows": 0,
    }
    path.write_text(json.dumps(too_big))
    with pytest.raises(ContractError, match=r"criterion 'n' \(#3\): field 'min_rows'"):
        load_contract(path)
    many = {**CONTRACT, "success_criteria": [CONTRACT["success_criteria"][1]] * 1001}
    with pytest.raises(ContractError, match="more than the 1000 items allowed"):
        contract_from_data(many)


def test_a_collected_bundle_matches_the_published_schema(sealed: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator.check_schema(bundle_schema())
    jsonschema.validate(sealed, bundle_schema())
    assert parse_bundle(json.dumps(sealed)) == sealed


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda b: b.update(extra=1), "Additional properties are not allowed ('extra'"),
        (
            lambda b: b.update(contract_sha256="xyz"),
            "field 'contract_sha256': 'xyz' is not a sha256",
        ),
        (lambda b: b["limits"].update(max_file_bytes=0), "field 'limits.max_file_bytes'"),
        (
            lambda b: b["artifacts"][1]["content"].update(bytes=-1),
            "artifact 'out/r.md': field 'content.bytes': -1 is less than the minimum of 0",
        ),
        (lambda b: b["artifacts"][1].update(kind="socket"), "artifact 'out/r.md': field 'kind'"),
        (lambda b: b["artifacts"][0].update(path="./out"), "is not in its normalized spelling"),
        (lambda b: b["artifacts"][0].update(path="../etc"), "climbs out with '..'"),
        (lambda b: b.pop("agent_id"), "'agent_id' is a required property"),
    ],
    ids=["extra", "sha", "limits", "negative", "kind", "spelling", "escape", "missing"],
)
def test_a_malformed_bundle_is_a_bundle_error_naming_the_place(
    sealed: dict[str, Any], edit: Any, words: str
) -> None:
    edit(sealed)
    with pytest.raises(BundleError) as caught:
        verify_bundle(contract_from_data(CONTRACT), reseal(sealed))
    assert words in str(caught.value)


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (
            lambda a: a["content"].update(truncated=True),
            "artifact 'out/r.md': content inconsistent with the caps",
        ),
        (
            lambda a: a["listing"].update(count=9, truncated=False),
            "artifact 'out': listing inconsistent with the caps",
        ),
    ],
    ids=["content", "listing"],
)
def test_claims_the_caps_contradict_are_fail_naming_the_artifact(
    sealed: dict[str, Any], edit: Any, words: str
) -> None:
    by_path = {artifact["path"]: artifact for artifact in sealed["artifacts"]}
    edit(by_path["out/r.md" if "content" in words else "out"])
    # Recompute every hash: only the caps can tell the bundle lies.
    from verdryx_core.addons.contracts.evidence import _section_digests

    for artifact in sealed["artifacts"]:
        for section, digest in _section_digests(artifact).items():
            artifact[section]["sha256"] = digest
    verdict = verify_bundle(contract_from_data(CONTRACT), reseal(sealed))
    assert verdict.verdict == "FAIL"
    assert any(problem.startswith(words) for problem in verdict.integrity_problems)


def test_verify_bundle_for_another_contract_exits_1_naming_it(
    tmp_path: Path, sealed: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**CONTRACT, "task_id": "another"}))
    bundle = tmp_path / "b.json"
    bundle.write_text(json.dumps(sealed))
    assert load_bundle(bundle) == sealed
    assert main(["verify", str(other), "--bundle", str(bundle)]) == 1
    out = capsys.readouterr().out
    assert "tampered  contract: the bundle was collected for task_id 't'" in out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    where=st.sampled_from(["top", "limits", "artifact", "content", "listing", "sqlite"]),
    key=st.sampled_from(
        [
            "format",
            "bundle_hash",
            "size",
            "bytes",
            "count",
            "entries",
            "kind",
            "tables",
            "x",
            "max_file_bytes",
            "truncated",
            "path",
            "rows",
            "sha256",
        ]
    ),
    value=st.recursive(
        st.none() | st.booleans() | st.integers(-3, 2**53) | st.text(max_size=70),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
        ),
        max_leaves=5,
    ),
)
def test_the_fast_validator_agrees_with_jsonschema(
    where: str, key: str, value: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The compiled fast path must accept exactly what the jsonschema validator accepts."""
    from verdryx_core.addons.contracts.evidence import _fast_validator, _validator

    bundle = copy.deepcopy(_sample_bundle(tmp_path_factory))
    by_path = {artifact["path"]: artifact for artifact in bundle["artifacts"]}
    target = {
        "top": bundle,
        "limits": bundle["limits"],
        "artifact": by_path["out/r.md"],
        "content": by_path["out/r.md"]["content"],
        "listing": by_path["out"]["listing"],
        "sqlite": by_path["db.sqlite"]["sqlite"]["tables"],
    }[where]
    target[key] = value
    try:
        _fast_validator()(bundle)
        fast = True
    except fastjsonschema.JsonSchemaException:
        fast = False
    assert fast == _validator().is_valid(bundle)


_SAMPLE: list[dict[str, Any]] = []


def _sample_bundle(factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not _SAMPLE:
        base = factory.mktemp("sample")
        (base / "out").mkdir()
        (base / "out" / "r.md").write_text("all ok\n")
        sqlite3.connect(base / "db.sqlite").execute("CREATE TABLE t (x)").connection.close()
        contract = contract_from_data(
            {
                **CONTRACT,
                "success_criteria": [
                    *CONTRACT["success_criteria"],
                    {"id": "s", "type": "sqlite_table_has_rows", "path": "db.sqlite", "table": "t"},
                ],
            }
        )
        _SAMPLE.append(collect_evidence(contract, base))
    return _SAMPLE[0]


def test_validating_a_bundle_leaves_the_published_schema_as_it_is(sealed: dict[str, Any]) -> None:
    published = json.loads(
        (
            Path(__file__).resolve().parent.parent
            / "verdryx_core"
            / "addons"
            / "contracts"
            / "bundle.schema.json"
        ).read_text(encoding="utf-8")
    )
    verify_bundle(contract_from_data(CONTRACT), sealed)
    assert bundle_schema() == published
