"""Evidence bundles: what the checks saw, content-addressed, re-checkable by anyone.

A bundle is one JSON document: one artifact per path the checks asked about (what was
there, the file bytes they read with their sha256, directory listings, SQLite row counts),
each capped (256 KiB per file, 2,000 directory entries) with truncation marked, and a
`bundle_hash` over the RFC 8785 canonical JSON of everything else. `verify_bundle` recomputes
every hash (a mismatch is FAIL naming the artifact) and re-runs every check on the bundle
alone, through the same check code that looked at the workspace.
"""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Final

import fastjsonschema
import jsonschema
import jsonschema.exceptions

from verdryx_core.addons.canonical import CanonicalizationError, canonical_json
from verdryx_core.addons.contracts.checks import run_checks
from verdryx_core.addons.contracts.model import Contract, ContractVerdict, Limits
from verdryx_core.addons.contracts.paths import lexical_problem, normalize
from verdryx_core.addons.contracts.rubric import decide
from verdryx_core.addons.contracts.workspace import Listing, PathInfo, TableFacts, WorkspaceSource
from verdryx_core.addons.errors import BundleError, CheckError
from verdryx_core.untrusted.json_input import StrictJSONError, check_strict, parse_json_strict

__all__ = [
    "BUNDLE_FORMAT",
    "BundleSource",
    "binding_problems",
    "bundle_hash",
    "bundle_schema",
    "check_workspace",
    "collect_evidence",
    "load_bundle",
    "parse_bundle",
    "validate_bundle",
    "verify_and_collect",
    "verify_bundle",
    "verify_workspace",
    "write_bundle",
]

BUNDLE_FORMAT: Final = "verdryx-evidence/1"


def _canonical_sha256(value: Any) -> str:
    return hashlib.sha256(canonical_json(value)).hexdigest()


def bundle_hash(bundle: Mapping[str, Any]) -> str:
    """sha256 of the RFC 8785 canonical JSON of the bundle without its `bundle_hash` key."""
    return _canonical_sha256({key: value for key, value in bundle.items() if key != "bundle_hash"})


# -- collecting ------------------------------------------------------------------------------


def verify_and_collect(
    contract: Contract, base_path: str | os.PathLike[str], *, limits: Limits | None = None
) -> tuple[ContractVerdict, dict[str, Any]]:
    """Check the workspace and keep what the checks saw, in one pass over the files."""
    source = WorkspaceSource(base_path, limits)
    results = run_checks(contract, source)
    bundle = _seal(contract, source)
    return decide(contract, results, bundle_hash=bundle["bundle_hash"]), bundle


def verify_workspace(
    contract: Contract, base_path: str | os.PathLike[str], *, limits: Limits | None = None
) -> ContractVerdict:
    return verify_and_collect(contract, base_path, limits=limits)[0]


def check_workspace(
    contract: Contract, base_path: str | os.PathLike[str], *, limits: Limits | None = None
) -> ContractVerdict:
    """The verdict alone, as a `contract` eval case needs it: the checks run, no evidence
    bundle sealed (so neither its hash nor canonical JSON is needed)."""
    return decide(contract, run_checks(contract, WorkspaceSource(base_path, limits)))


def collect_evidence(
    contract: Contract, base_path: str | os.PathLike[str], *, limits: Limits | None = None
) -> dict[str, Any]:
    """The evidence bundle for `contract` checked against the files under `base_path`."""
    return verify_and_collect(contract, base_path, limits=limits)[1]


def _seal(contract: Contract, source: WorkspaceSource) -> dict[str, Any]:
    artifacts = [source.artifacts[path] for path in sorted(source.artifacts)]
    for artifact in artifacts:
        for section, digest in _section_digests(artifact).items():
            artifact[section]["sha256"] = digest
    bundle: dict[str, Any] = {
        "format": BUNDLE_FORMAT,
        "task_id": contract.task_id,
        "agent_id": contract.agent_id,
        "contract_sha256": contract.sha256(),
        "limits": {
            "max_file_bytes": source.limits.max_file_bytes,
            "max_dir_entries": source.limits.max_dir_entries,
        },
        "artifacts": artifacts,
    }
    bundle["bundle_hash"] = bundle_hash(bundle)
    return bundle


def _section_digests(artifact: Mapping[str, Any]) -> dict[str, str]:
    """The hash each hashed section of an artifact should carry.

    File content is hashed over its bytes (so `sha256sum` agrees when nothing was truncated);
    listings and SQLite facts over their canonical JSON without the hash itself.
    """
    digests: dict[str, str] = {}
    content = artifact.get("content")
    if isinstance(content, Mapping) and "data" in content:
        digests["content"] = hashlib.sha256(_decode(content)).hexdigest()
    for section in ("listing", "sqlite"):
        value = artifact.get(section)
        if isinstance(value, Mapping) and "error" not in value:
            digests[section] = _canonical_sha256(
                {key: item for key, item in value.items() if key != "sha256"}
            )
    return digests


def _decode(content: Mapping[str, Any]) -> bytes:
    data = content["data"]
    if not isinstance(data, str):
        raise ValueError(f"content data is {type(data).__name__}, not a string")
    if content.get("encoding") == "utf-8":
        return data.encode("utf-8")
    if content.get("encoding") == "base64":
        return base64.b64decode(data, validate=True)
    raise ValueError(f"unknown content encoding {content.get('encoding')!r}")


# -- files -----------------------------------------------------------------------------------


def write_bundle(bundle: Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    """Write a bundle as UTF-8 JSON; an unwritable path is a `BundleError`."""
    text = json.dumps(bundle, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise BundleError(
            f"cannot write the evidence bundle to {os.fspath(path)!r}: {exc}"
        ) from None


def load_bundle(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a bundle file; a file that is not a well-formed bundle is a `BundleError`."""
    name = os.fspath(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise BundleError(f"cannot read the evidence bundle {name!r}: {exc}") from None
    return parse_bundle(data, name=name)


def parse_bundle(text: str | bytes, *, name: str = "bundle") -> dict[str, Any]:
    """Parse and validate bundle JSON text (strictly: `parse_json_strict`); `BundleError` if bad."""
    try:
        data = parse_json_strict(text)
    except StrictJSONError as exc:
        raise BundleError(
            f"{name}: {exc}; an evidence bundle is what `verdryx verify --bundle-out` writes"
        ) from None
    validate_bundle(data, name=name)
    return data


@cache
def bundle_schema() -> dict[str, Any]:
    """The published evidence bundle JSON Schema (packaged with verdryx_core)."""
    text = (
        resources.files("verdryx_core.addons.contracts").joinpath("bundle.schema.json").read_text()
    )
    return json.loads(text)


@cache
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(bundle_schema())


@cache
def _fast_validator() -> Any:
    # A copy: fastjsonschema rewrites the `$ref`s of the schema it is given, in place.
    return fastjsonschema.compile(copy.deepcopy(bundle_schema()))


def validate_bundle(bundle: object, *, name: str = "bundle") -> None:
    """Refuse anything that is not a bundle `verdryx verify --bundle-out` could have written:
    the wrong shape, a value out of range, a path in a spelling the collector never uses.
    (Edits that keep the shape are tampering, found by the hashes: FAIL, not this error.)"""
    if not isinstance(bundle, Mapping) or bundle.get("format") != BUNDLE_FORMAT:
        found = bundle.get("format") if isinstance(bundle, Mapping) else None
        raise BundleError(
            f"{name}: not a verdryx evidence bundle (format {found!r}, expected "
            f"{BUNDLE_FORMAT!r}); write one with `verdryx verify --bundle-out`"
        )
    if not isinstance(bundle.get("artifacts"), list):
        raise BundleError(f"{name}: the bundle has no 'artifacts' list")
    if not isinstance(bundle.get("bundle_hash"), str):
        raise BundleError(f"{name}: the bundle has no 'bundle_hash' string")
    try:
        check_strict(bundle)
    except StrictJSONError as exc:
        raise BundleError(f"{name}: {exc}") from None
    # The compiled validator is ~20x faster on a valid bundle (the service checks every one);
    # on a failure, jsonschema finds the error worth naming.
    try:
        _fast_validator()(bundle)
        error = None
    except fastjsonschema.JsonSchemaException:
        error = jsonschema.exceptions.best_match(_validator().iter_errors(bundle))
    if error is not None:
        raise BundleError(f"{name}: {_where(bundle, list(error.absolute_path))}{_say(error)}")
    for artifact in bundle["artifacts"]:
        path = artifact["path"]
        problem = lexical_problem(path)
        if problem is None and normalize(path) != path:
            problem = f"{path!r} is not in its normalized spelling {normalize(path)!r}"
        if problem is not None:
            raise BundleError(f"{name}: artifact {path!r}: field 'path': {problem}")


def _where(bundle: Mapping[str, Any], location: list[Any]) -> str:
    """'artifact 'a.txt': field 'content.bytes': ' for an error inside an artifact."""
    prefix = ""
    if len(location) >= 2 and location[0] == "artifacts" and isinstance(location[1], int):
        item = bundle["artifacts"][location[1]]
        path = item.get("path") if isinstance(item, Mapping) else None
        prefix = (
            f"artifact {path!r}: " if isinstance(path, str) else f"artifact #{location[1] + 1}: "
        )
        location = location[2:]
    if location:
        prefix += "field '" + ".".join(str(part) for part in location) + "': "
    return prefix


def _say(error: jsonschema.ValidationError) -> str:
    if error.validator == "additionalProperties":
        return f"{error.message} (not a bundle field)"
    if error.validator == "pattern" and str(error.validator_value).startswith("^[0-9a-f]{64}"):
        return f"{error.instance!r} is not a sha256 (64 lowercase hex digits)"
    if error.validator in ("anyOf", "oneOf"):
        return "is neither a recorded answer nor an {'error': ...} record"
    return error.message if len(error.message) <= 200 else error.message[:200] + "..."


def binding_problems(contract: Contract, bundle: Mapping[str, Any]) -> list[str]:
    """Why the bundle was not collected for this contract (empty when it was).

    The bundle names its contract three ways, all covered by `bundle_hash`: the task id, the
    agent id and the contract's own hash. A bundle for another contract proves nothing here.
    """
    problems = []
    for key, expected in (
        ("task_id", contract.task_id),
        ("agent_id", contract.agent_id),
        ("contract_sha256", contract.sha256()),
    ):
        if bundle.get(key) != expected:
            problems.append(
                f"contract: the bundle was collected for {key} {bundle.get(key)!r}, "
                f"this contract's is {expected!r} (a bundle for another contract)"
            )
    return problems


# -- verifying -------------------------------------------------------------------------------


def verify_bundle(
    contract: Contract, bundle: Mapping[str, Any], *, limits: Limits | None = None
) -> ContractVerdict:
    """Check the bundle is one, recompute every hash, check it was collected for `contract`,
    then re-run every check on the bundle alone."""
    validate_bundle(bundle)
    problems: list[str] = []
    try:
        recomputed = bundle_hash(bundle)
    except (CanonicalizationError, TypeError) as exc:
        recomputed = f"(not computable: {exc})"
    if recomputed != bundle["bundle_hash"]:
        problems.append(
            f"bundle_hash: recorded {bundle['bundle_hash']!r}, recomputed {recomputed!r} "
            "(the bundle changed after it was sealed)"
        )
    problems.extend(binding_problems(contract, bundle))
    kept = bundle["limits"]
    artifacts: dict[str, Mapping[str, Any]] = {}
    tampered: set[str] = set()
    for index, artifact in enumerate(bundle["artifacts"]):
        path = artifact.get("path") if isinstance(artifact, Mapping) else None
        if not isinstance(path, str) or not isinstance(artifact, Mapping):
            problems.append(f"artifact #{index + 1}: malformed (no 'path')")
            continue
        if path in artifacts:
            problems.append(f"artifact {path!r}: listed twice")
            tampered.add(path)
            continue
        artifacts[path] = artifact
        for problem in _artifact_problems(artifact, kept):
            problems.append(f"artifact {path!r}: {problem}")
            tampered.add(path)
    source = BundleSource(artifacts, tampered=tampered, limits=limits)
    results = run_checks(contract, source)
    return decide(contract, results, integrity_problems=problems, bundle_hash=bundle["bundle_hash"])


def _artifact_problems(artifact: Mapping[str, Any], kept: Mapping[str, int]) -> list[str]:
    try:
        expected = _section_digests(artifact)
    except (ValueError, TypeError, KeyError, binascii.Error) as exc:
        return [f"undecodable ({exc})"]
    problems = []
    for section, digest in expected.items():
        recorded = artifact[section].get("sha256")
        if recorded != digest:
            problems.append(
                f"{section} sha256 mismatch (recorded {recorded!r}, recomputed {digest!r})"
            )
    content: Any = artifact.get("content")
    if "content" in expected and content.get("bytes") != len(_decode(content)):
        problems.append(f"content length mismatch (recorded {content.get('bytes')!r} bytes)")
    problems.extend(_cap_problems(artifact, kept))
    return problems


def _cap_problems(artifact: Mapping[str, Any], kept: Mapping[str, int]) -> list[str]:
    """What the caps imply: exactly min(size, cap) bytes kept, `truncated` exactly when some
    were cut. A bundle claiming a whole file it cut (or the reverse) is not what was seen."""
    problems = []
    content = artifact.get("content")
    if isinstance(content, Mapping) and "data" in content:
        size, got = content["size"], content["bytes"]
        if got != min(size, kept["max_file_bytes"]) or content["truncated"] != (got < size):
            problems.append(
                f"content inconsistent with the caps ({got} of {size} bytes kept, "
                f"truncated={content['truncated']}, cap {kept['max_file_bytes']} bytes)"
            )
    listing = artifact.get("listing")
    if isinstance(listing, Mapping) and "entries" in listing:
        count, got = listing["count"], len(listing["entries"])
        if got != min(count, kept["max_dir_entries"]) or listing["truncated"] != (got < count):
            problems.append(
                f"listing inconsistent with the caps ({got} of {count} entries kept, "
                f"truncated={listing['truncated']}, cap {kept['max_dir_entries']} entries)"
            )
    return problems


class BundleSource:
    """Answers the checks' questions from a bundle's artifacts alone.

    A question the bundle cannot fully answer (no artifact, truncated bytes, a tampered
    artifact) is a `CheckError`: the check errs, so the verdict is never PASS on it.
    """

    def __init__(
        self,
        artifacts: Mapping[str, Mapping[str, Any]],
        *,
        tampered: Iterable[str] = (),
        limits: Limits | None = None,
    ) -> None:
        self.artifacts = artifacts
        self.tampered = frozenset(tampered or ())
        self.limits = limits or Limits()

    def _artifact(self, path: str) -> tuple[str, Mapping[str, Any]]:
        relative = normalize(path)
        if relative in self.tampered:
            raise CheckError(
                f"the bundle's artifact {relative!r} failed its hash check; "
                "its evidence cannot be trusted"
            )
        artifact = self.artifacts.get(relative)
        if artifact is None:
            raise CheckError(
                f"the bundle holds no evidence for {relative!r} (collected for another "
                "contract?); collect a new bundle for this contract"
            )
        return relative, artifact

    def _section(self, path: str, section: str) -> tuple[str, Mapping[str, Any]]:
        relative, artifact = self._artifact(path)
        value = artifact.get(section)
        if not isinstance(value, Mapping):
            raise CheckError(f"the bundle holds no {section} of {relative!r}")
        if "error" in value:
            raise CheckError(str(value["error"]))
        return relative, value

    def stat(self, path: str) -> PathInfo:
        relative, artifact = self._artifact(path)
        kind = artifact.get("kind")
        if kind == "error":
            raise CheckError(str(artifact.get("error")))
        if kind not in ("file", "dir", "missing", "other"):
            raise CheckError(f"the bundle holds no usable record of what is at {relative!r}")
        size = artifact.get("size")
        return PathInfo(
            kind=kind,
            size=size if isinstance(size, int) else None,
            note=str(artifact.get("note") or ""),
        )

    def read(self, path: str) -> bytes:
        relative, content = self._section(path, "content")
        if content.get("truncated"):
            raise CheckError(
                f"the bundle kept only the first {content.get('bytes')} of "
                f"{content.get('size')} bytes of {relative!r} (truncated at the per-file cap), "
                "so it cannot fully answer this check; verify against the workspace instead"
            )
        try:
            return _decode(content)
        except (ValueError, binascii.Error) as exc:
            raise CheckError(
                f"the bundle's content of {relative!r} is undecodable: {exc}"
            ) from None

    def listdir(self, path: str) -> Listing:
        relative, listing = self._section(path, "listing")
        if not isinstance(listing.get("entries"), list) or not isinstance(
            listing.get("count"), int
        ):
            raise CheckError(f"the bundle's listing of {relative!r} is malformed")
        return Listing(
            entries=tuple(str(entry) for entry in listing.get("entries") or ()),
            count=int(listing.get("count") or 0),
            truncated=bool(listing.get("truncated")),
        )

    def sqlite_table(self, path: str, table: str) -> TableFacts:
        relative, sqlite = self._section(path, "sqlite")
        tables = sqlite.get("tables")
        facts = tables.get(table) if isinstance(tables, Mapping) else None
        if not isinstance(facts, Mapping):
            raise CheckError(f"the bundle holds no row count of table {table!r} in {relative!r}")
        if "error" in facts:
            raise CheckError(str(facts["error"]))
        if "not_sqlite" in facts:
            return TableFacts(not_sqlite=str(facts["not_sqlite"]))
        if facts.get("absent"):
            return TableFacts(absent=True)
        rows = facts.get("rows")
        if not isinstance(rows, int) or isinstance(rows, bool):
            raise CheckError(f"the bundle's row count of {table!r} in {relative!r} is malformed")
        return TableFacts(rows=rows)
