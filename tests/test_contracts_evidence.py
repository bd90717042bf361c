"""Evidence bundles. Content-addressed, re-checked on the bundle alone; a tampered
artifact is FAIL naming it; a truncated artifact is FLAG, never PASS; round trips hold."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from verdryx_core.addons.contracts import (
    BUNDLE_FORMAT,
    BundleError,
    Contract,
    Limits,
    bundle_hash,
    collect_evidence,
    contract_from_data,
    load_bundle,
    verify_and_collect,
    verify_bundle,
    verify_workspace,
    write_bundle,
)

BINARY = bytes(range(256))


def contract(*criteria: dict[str, Any], claims: tuple[str, ...] = ()) -> Contract:
    return contract_from_data(
        {
            "task_id": "task",
            "agent_id": "agent",
            "success_criteria": list(criteria),
            "unverifiable_claims": list(claims),
        }
    )


def artifact(bundle: dict[str, Any], path: str) -> dict[str, Any]:
    return next(item for item in bundle["artifacts"] if item["path"] == path)


def reseal(bundle: dict[str, Any]) -> dict[str, Any]:
    """What a careless forger does: edit, then recompute the bundle hash (not the artifact's)."""
    bundle["bundle_hash"] = bundle_hash(bundle)
    return bundle


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "report.md").write_text("# Report\n## Summary\nall good\n")
    (tmp_path / "out" / "data.json").write_text('{"rows": 3}')
    (tmp_path / "blob.bin").write_bytes(BINARY)
    (tmp_path / "empty.txt").write_bytes(b"")
    connection = sqlite3.connect(tmp_path / "app.db")
    connection.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
    connection.executemany("INSERT INTO orders VALUES (?)", [(1,), (2,)])
    connection.commit()
    connection.close()
    return tmp_path


FULL = (
    {"id": "exists", "type": "file_exists", "path": "out/report.md"},
    {"id": "nonempty", "type": "file_nonempty", "path": "blob.bin"},
    {"id": "summary", "type": "file_contains", "path": "out/report.md", "pattern": "## Summary"},
    {
        "id": "lines-re",
        "type": "pattern_count_gte",
        "path": "out/report.md",
        "pattern": "^#",
        "min_count": 2,
    },
    {"id": "outdir", "type": "dir_exists", "path": "out"},
    {"id": "json", "type": "json_valid", "path": "out/data.json"},
    {"id": "lines", "type": "line_count_gte", "path": "blob.bin", "min_lines": 1},
    {"id": "rows", "type": "sqlite_table_has_rows", "path": "app.db", "table": "orders"},
    {"id": "no-env", "type": "path_absent", "path": ".env"},
)


def test_a_bundle_re_checks_to_the_same_verdict(workspace: Path) -> None:
    promise = contract(*FULL)
    live, bundle = verify_and_collect(promise, workspace)
    assert live.verdict == "PASS", live.reason
    assert bundle["format"] == BUNDLE_FORMAT
    assert (bundle["task_id"], bundle["agent_id"]) == ("task", "agent")
    assert bundle["contract_sha256"] == promise.sha256()
    assert live.bundle_hash == bundle["bundle_hash"] == bundle_hash(bundle)
    # The bundle hash is sha256 over RFC 8785 canonical JSON of everything but itself.
    body = {key: value for key, value in bundle.items() if key != "bundle_hash"}
    assert bundle["bundle_hash"] == hashlib.sha256(rfc8785.dumps(body)).hexdigest()
    again = verify_bundle(promise, json.loads(json.dumps(bundle)))
    assert again.verdict == "PASS"
    assert again.check_results == live.check_results
    assert again.integrity_problems == ()


def test_artifacts_carry_what_the_checks_need(workspace: Path) -> None:
    bundle = collect_evidence(contract(*FULL), workspace)
    assert [item["path"] for item in bundle["artifacts"]] == sorted(
        ["out/report.md", "blob.bin", "out", "out/data.json", "app.db", ".env"]
    )
    report = artifact(bundle, "out/report.md")
    raw = (workspace / "out" / "report.md").read_bytes()
    assert report["content"]["encoding"] == "utf-8"
    assert report["content"]["data"].encode() == raw
    assert report["content"]["sha256"] == hashlib.sha256(raw).hexdigest()  # as sha256sum says
    blob = artifact(bundle, "blob.bin")
    assert blob["content"]["encoding"] == "base64"
    assert base64.b64decode(blob["content"]["data"]) == BINARY
    assert blob["content"]["sha256"] == hashlib.sha256(BINARY).hexdigest()
    assert artifact(bundle, "out")["listing"]["entries"] == ["data.json", "report.md"]
    assert artifact(bundle, "app.db")["sqlite"]["tables"] == {"orders": {"rows": 2}}
    assert "content" not in artifact(bundle, "app.db")  # row counts, not the database bytes
    assert artifact(bundle, ".env") == {"path": ".env", "kind": "missing"}


def test_collection_is_deterministic(workspace: Path) -> None:
    promise = contract(*FULL)
    assert collect_evidence(promise, workspace) == collect_evidence(promise, workspace)


def test_errors_are_recorded_and_replayed(workspace: Path, tmp_path_factory: Any) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "secret.txt").write_text("hunter2")
    (workspace / "escape.txt").symlink_to(elsewhere / "secret.txt")
    promise = contract(
        {"id": "esc", "type": "file_contains", "path": "escape.txt", "pattern": "hunter2"},
        {"id": "bin", "type": "file_contains", "path": "blob.bin", "pattern": "A"},
    )
    live, bundle = verify_and_collect(promise, workspace)
    assert live.verdict == "FLAG"
    assert "hunter2" not in json.dumps(artifact(bundle, "escape.txt"))
    assert artifact(bundle, "escape.txt")["kind"] == "error"
    replay = verify_bundle(promise, bundle)
    assert replay.verdict == "FLAG"
    assert replay.check_results == live.check_results


# -- tampering -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["out/report.md", "blob.bin"])
def test_one_changed_byte_in_one_artifact_is_fail_naming_it(workspace: Path, path: str) -> None:
    promise = contract(*FULL)
    bundle = collect_evidence(promise, workspace)
    content = artifact(bundle, path)["content"]
    raw = bytearray(
        base64.b64decode(content["data"])
        if content["encoding"] == "base64"
        else content["data"].encode()
    )
    raw[0] ^= 0x01
    content["data"] = (
        base64.b64encode(raw).decode() if content["encoding"] == "base64" else raw.decode()
    )
    verdict = verify_bundle(promise, reseal(bundle))
    assert verdict.verdict == "FAIL"
    assert verdict.integrity_problems == (
        f"artifact {path!r}: content sha256 mismatch (recorded "
        f"{content['sha256']!r}, recomputed {hashlib.sha256(raw).hexdigest()!r})",
    )
    assert f"tampered: artifact {path!r}" in verdict.reason
    # Checks on the tampered artifact cannot be trusted: they err instead of passing.
    on_it = [r for r in verdict.check_results if r.evidence.find(path) >= 0 or r.status != "pass"]
    assert on_it and all(r.status == "error" for r in on_it)
    assert any(r.status == "pass" for r in verdict.check_results)  # the others still stand


def test_a_tampered_bundle_without_reseal_fails_on_both_hashes(workspace: Path) -> None:
    promise = contract(*FULL)
    bundle = collect_evidence(promise, workspace)
    artifact(bundle, "out/data.json")["content"]["data"] = '{"rows": 4}'
    verdict = verify_bundle(promise, bundle)
    assert verdict.verdict == "FAIL"
    assert verdict.integrity_problems[0].startswith("bundle_hash: recorded")
    assert "artifact 'out/data.json'" in verdict.integrity_problems[1]


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (
            lambda b: artifact(b, "app.db")["sqlite"]["tables"]["orders"].update(rows=0),
            "artifact 'app.db': sqlite sha256 mismatch",
        ),
        (
            lambda b: artifact(b, "out")["listing"]["entries"].append("forged.txt"),
            "artifact 'out': listing sha256 mismatch",
        ),
        (
            lambda b: artifact(b, "out/report.md")["content"].update(data="%%%", encoding="base64"),
            "artifact 'out/report.md': undecodable",
        ),
        (
            lambda b: artifact(b, "out/report.md")["content"].update(bytes=1),
            "artifact 'out/report.md': content length mismatch",
        ),
        (
            lambda b: b["artifacts"].append(copy.deepcopy(artifact(b, "out"))),
            "artifact 'out': listed twice",
        ),
    ],
    ids=["rows", "listing", "undecodable", "length", "duplicate"],
)
def test_every_hashed_section_names_its_artifact(workspace: Path, edit: Any, named: str) -> None:
    promise = contract(*FULL)
    bundle = collect_evidence(promise, workspace)
    edit(bundle)
    verdict = verify_bundle(promise, reseal(bundle))
    assert verdict.verdict == "FAIL"
    assert any(problem.startswith(named) for problem in verdict.integrity_problems), (
        verdict.integrity_problems
    )


def test_an_edit_outside_any_artifact_hash_is_caught_by_the_bundle_hash(workspace: Path) -> None:
    promise = contract({"id": "no-env", "type": "path_absent", "path": ".env"})
    bundle = collect_evidence(promise, workspace)
    artifact(bundle, ".env")["kind"] = "missing"  # unchanged: still PASS
    assert verify_bundle(promise, bundle).verdict == "PASS"
    bundle["task_id"] = "another task"
    verdict = verify_bundle(promise, bundle)
    assert verdict.verdict == "FAIL"
    assert verdict.integrity_problems[0].startswith("bundle_hash:")


# -- truncation ------------------------------------------------------------------------------


def test_a_truncated_artifact_is_flag_never_pass(tmp_path: Path) -> None:
    big = b"line\n" * 60_000 + b"THE END\n"  # 300 KiB: past the default 256 KiB cap
    (tmp_path / "big.log").write_bytes(big)
    promise = contract(
        {"id": "exists", "type": "file_exists", "path": "big.log"},
        {"id": "end", "type": "file_contains", "path": "big.log", "pattern": "THE END"},
        {"id": "lines", "type": "line_count_gte", "path": "big.log", "min_lines": 60_001},
    )
    live, bundle = verify_and_collect(promise, tmp_path)
    assert live.verdict == "PASS"  # the live checks read the whole file
    content = artifact(bundle, "big.log")["content"]
    assert (content["bytes"], content["size"], content["truncated"]) == (256 * 1024, len(big), True)
    assert content["sha256"] == hashlib.sha256(big[: 256 * 1024]).hexdigest()
    replay = verify_bundle(promise, bundle)
    assert replay.verdict == "FLAG"
    assert replay.integrity_problems == ()
    statuses = {r.check_id: r.status for r in replay.check_results}
    assert statuses == {"exists": "pass", "end": "error", "lines": "error"}
    assert "truncated" in replay.reason


def test_a_truncated_listing_still_answers_dir_exists(tmp_path: Path) -> None:
    (tmp_path / "many").mkdir()
    for i in range(12):
        (tmp_path / "many" / f"f{i:02}").write_bytes(b"")
    promise = contract({"id": "d", "type": "dir_exists", "path": "many"})
    limits = Limits(max_dir_entries=5)
    live, bundle = verify_and_collect(promise, tmp_path, limits=limits)
    listing = artifact(bundle, "many")["listing"]
    assert listing["entries"] == ["f00", "f01", "f02", "f03", "f04"]
    assert (listing["count"], listing["truncated"]) == (12, True)
    assert bundle["limits"]["max_dir_entries"] == 5
    assert live.verdict == verify_bundle(promise, bundle).verdict == "PASS"


def test_the_default_caps() -> None:
    assert (Limits().max_file_bytes, Limits().max_dir_entries) == (256 * 1024, 2000)


def test_a_bundle_for_another_contract_is_fail_naming_the_binding(workspace: Path) -> None:
    bundle = collect_evidence(contract(FULL[0]), workspace)
    other = contract(FULL[0], {"id": "new", "type": "file_exists", "path": "out/data.json"})
    verdict = verify_bundle(other, bundle)
    assert verdict.verdict == "FAIL"
    assert verdict.integrity_problems == (
        f"contract: the bundle was collected for contract_sha256 {bundle['contract_sha256']!r}, "
        f"this contract's is {other.sha256()!r} (a bundle for another contract)",
    )
    # The check the bundle never saw still errs rather than passing.
    assert "holds no evidence for 'out/data.json'" in verdict.reason


@pytest.mark.parametrize(
    ("change", "key"),
    [({"task_id": "other-task"}, "task_id"), ({"agent_id": "other-agent"}, "agent_id")],
)
def test_a_bundle_names_the_task_and_agent_it_was_collected_for(
    workspace: Path, change: dict[str, str], key: str
) -> None:
    promise = contract(*FULL)
    bundle = collect_evidence(promise, workspace)
    forged = contract_from_data({**promise.to_dict(), **change})
    verdict = verify_bundle(forged, bundle)
    assert verdict.verdict == "FAIL"
    assert any(
        problem.startswith(f"contract: the bundle was collected for {key} ")
        for problem in verdict.integrity_problems
    )
    assert verify_bundle(promise, bundle).verdict == "PASS"


# -- files -----------------------------------------------------------------------------------


def test_write_and_load_a_bundle(workspace: Path, tmp_path_factory: Any) -> None:
    out = tmp_path_factory.mktemp("b") / "bundle.json"
    bundle = collect_evidence(contract(*FULL), workspace)
    write_bundle(bundle, out)
    assert load_bundle(out) == bundle
    with pytest.raises(BundleError, match="cannot write"):
        write_bundle(bundle, out.parent / "no-such-dir" / "b.json")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("{", "not valid JSON"),
        ("[]", "not a verdryx evidence bundle"),
        ('{"format": "other/1"}', "format 'other/1'"),
        (json.dumps({"format": BUNDLE_FORMAT, "bundle_hash": "x"}), "no 'artifacts' list"),
        (json.dumps({"format": BUNDLE_FORMAT, "artifacts": []}), "no 'bundle_hash' string"),
    ],
)
def test_a_file_that_is_not_a_bundle(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "b.json"
    path.write_text(text)
    with pytest.raises(BundleError, match=words):
        load_bundle(path)
    with pytest.raises(BundleError):
        load_bundle(tmp_path / "missing.json")


# -- hypothesis round trips ------------------------------------------------------------------

_NAMES = ("a.txt", "b.bin", "d/c.json", "d/e/f.log")

_content = st.one_of(
    st.binary(max_size=96),
    st.text(alphabet=st.sampled_from('ab\n{}[]1"é'), max_size=96).map(str.encode),
)
_files = st.dictionaries(st.sampled_from(_NAMES), _content, min_size=1, max_size=len(_NAMES))
_CHECK_KINDS = (
    "file_exists",
    "file_nonempty",
    "file_contains",
    "pattern_count_gte",
    "dir_exists",
    "json_valid",
    "line_count_gte",
    "path_absent",
)

_READING_KINDS = ("file_contains", "pattern_count_gte", "json_valid", "line_count_gte")


@st.composite
def _workspace(draw: st.DrawFn) -> tuple[dict[str, bytes], list[dict[str, Any]]]:
    """Files, and criteria that mostly point at them (a contract about nothing tests little)."""
    files = draw(_files)
    paths = (*sorted(files), *sorted(files), *sorted(files), "d", "d/e", "missing")
    criteria = []
    for index in range(draw(st.integers(min_value=1, max_value=6))):
        # The checks that read bytes are the ones truncation and tampering can touch.
        kind = draw(st.sampled_from((*_CHECK_KINDS, *_READING_KINDS, *_READING_KINDS)))
        criterion: dict[str, Any] = {"id": f"c{index}", "type": kind}
        criterion["path"] = draw(st.sampled_from(paths))
        if kind in ("file_contains", "pattern_count_gte"):
            criterion["pattern"] = draw(st.sampled_from(["a", "^b", "\\{", "a.*b", "é$"]))
        if kind == "pattern_count_gte":
            criterion["min_count"] = draw(st.integers(min_value=1, max_value=4))
        if kind == "line_count_gte":
            criterion["min_lines"] = draw(st.integers(min_value=0, max_value=6))
        criteria.append(criterion)
    return files, criteria


def _write(base: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        (base / name).write_bytes(data)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    workspace=_workspace(),
    cap=st.sampled_from([1, 4, 16, 1024]),
    claims=st.lists(st.just("it also emailed the team"), max_size=1),
)
def test_bundles_round_trip(
    workspace: tuple[dict[str, bytes], list[dict[str, Any]]], cap: int, claims: list[str]
) -> None:
    files, criteria = workspace
    promise = contract(*criteria, claims=tuple(claims))
    with tempfile.TemporaryDirectory() as base:
        _write(Path(base), files)
        live, bundle = verify_and_collect(promise, base, limits=Limits(max_file_bytes=cap))
        assert verify_workspace(promise, base, limits=Limits(max_file_bytes=cap)) == live
    # Through JSON text and back: same bundle, same hash, nothing flagged as tampered.
    loaded = json.loads(json.dumps(bundle, ensure_ascii=False))
    assert loaded == bundle
    assert bundle_hash(loaded) == loaded["bundle_hash"] == live.bundle_hash
    replay = verify_bundle(promise, loaded)
    assert replay.integrity_problems == ()
    truncated = {
        item["path"] for item in bundle["artifacts"] if item.get("content", {}).get("truncated")
    }
    event(f"truncated artifacts: {min(len(truncated), 2)}")
    for was, now in zip(live.check_results, replay.check_results, strict=True):
        path = next(c["path"] for c in criteria if c["id"] == was.check_id)
        if path in truncated and now != was:
            # Only what needs the cut bytes may differ, and then only into an error.
            assert now.status == "error"
            assert "truncated" in now.evidence
        else:
            assert now == was
    if not truncated:
        assert replay.verdict == live.verdict
    elif replay.verdict != live.verdict:
        # A live PASS or FAIL the cut bytes cannot reproduce becomes FLAG, nothing else.
        assert replay.verdict == "FLAG"
    assert not (replay.verdict == "PASS" and live.verdict != "PASS")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    files=st.dictionaries(
        st.sampled_from(_NAMES),
        st.one_of(st.binary(min_size=1, max_size=96), st.text(min_size=1).map(str.encode)),
        min_size=1,
    ),
    data=st.data(),
)
def test_any_single_byte_change_is_fail_naming_the_artifact(
    files: dict[str, bytes], data: st.DataObject
) -> None:
    names = sorted(name for name, content in files.items() if content)
    promise = contract(
        *({"id": f"c{i}", "type": "file_nonempty", "path": name} for i, name in enumerate(names)),
        *({"id": f"j{i}", "type": "json_valid", "path": name} for i, name in enumerate(names)),
    )
    with tempfile.TemporaryDirectory() as base:
        _write(Path(base), files)
        bundle = collect_evidence(promise, base)
    victim = data.draw(st.sampled_from(names))
    content = artifact(bundle, victim)["content"]
    raw = bytearray(files[victim])
    position = data.draw(st.integers(min_value=0, max_value=len(raw) - 1))
    raw[position] ^= data.draw(st.integers(min_value=1, max_value=255))
    try:
        content.update(encoding="utf-8", data=raw.decode("utf-8"))
    except UnicodeDecodeError:
        content.update(encoding="base64", data=base64.b64encode(raw).decode())
    verdict = verify_bundle(promise, reseal(bundle))
    assert verdict.verdict == "FAIL"
    assert [p for p in verdict.integrity_problems if p.startswith(f"artifact {victim!r}")]
