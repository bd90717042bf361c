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
import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import rfc8785

from verdryx_core.contracts.checks import run_checks
from verdryx_core.contracts.errors import BundleError, CheckError
from verdryx_core.contracts.model import Contract, Limits, Verdict
from verdryx_core.contracts.paths import normalize
from verdryx_core.contracts.rubric import decide
from verdryx_core.contracts.workspace import Listing, PathInfo, TableFacts, WorkspaceSource

__all__ = [
    "BUNDLE_FORMAT",
    "BundleSource",
    "bundle_hash",
    "collect_evidence",
    "load_bundle",
    "verify_and_collect",
    "verify_bundle",
    "verify_workspace",
    "write_bundle",
]

BUNDLE_FORMAT: Final = "verdryx-evidence/1"


def _canonical_sha256(value: Any) -> str:
    return hashlib.sha256(rfc8785.dumps(value)).hexdigest()


def bundle_hash(bundle: Mapping[str, Any]) -> str:
    """sha256 of the RFC 8785 canonical JSON of the bundle without its `bundle_hash` key."""
    return _canonical_sha256({key: value for key, value in bundle.items() if key != "bundle_hash"})


# -- collecting ------------------------------------------------------------------------------


def verify_and_collect(
    contract: Contract, base_path: str | os.PathLike[str], *, limits: Limits | None = None
) -> tuple[Verdict, dict[str, Any]]:
    """Check the workspace and keep what the checks saw, in one pass over the files."""
    source = WorkspaceSource(base_path, limits)
    results = run_checks(contract, source)
    bundle = _seal(contract, source)
    return decide(contract, results, bundle_hash=bundle["bundle_hash"]), bundle


def verify_workspace(
    contract: Contract, base_path: str | os.PathLike[str], *, limits: Limits | None = None
) -> Verdict:
    return verify_and_collect(contract, base_path, limits=limits)[0]


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
    """Read a bundle file; a file that is not a bundle at all is a `BundleError`."""
    name = os.fspath(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BundleError(f"cannot read the evidence bundle {name!r}: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BundleError(
            f"{name}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}; "
            "an evidence bundle is what `verdryx verify --bundle-out` writes"
        ) from None
    _check_shape(data, name)
    return data


def _check_shape(bundle: object, name: str) -> None:
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


# -- verifying -------------------------------------------------------------------------------


def verify_bundle(
    contract: Contract, bundle: Mapping[str, Any], *, limits: Limits | None = None
) -> Verdict:
    """Recompute every hash, then re-run every check on the bundle alone."""
    _check_shape(bundle, "bundle")
    problems: list[str] = []
    try:
        recomputed = bundle_hash(bundle)
    except (rfc8785.CanonicalizationError, TypeError) as exc:
        recomputed = f"(not computable: {exc})"
    if recomputed != bundle["bundle_hash"]:
        problems.append(
            f"bundle_hash: recorded {bundle['bundle_hash']!r}, recomputed {recomputed!r} "
            "(the bundle changed after it was sealed)"
        )
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
        for problem in _artifact_problems(artifact):
            problems.append(f"artifact {path!r}: {problem}")
            tampered.add(path)
    source = BundleSource(artifacts, tampered=tampered, limits=limits)
    results = run_checks(contract, source)
    return decide(contract, results, integrity_problems=problems, bundle_hash=bundle["bundle_hash"])


def _artifact_problems(artifact: Mapping[str, Any]) -> list[str]:
    try:
        expected = _section_digests(artifact)
    except (ValueError, TypeError, KeyError, binascii.Error, rfc8785.CanonicalizationError) as exc:
        return [f"undecodable ({exc})"]
    problems = []
    for section, digest in expected.items():
        recorded = artifact[section].get("sha256")
        if recorded != digest:
            problems.append(
                f"{section} sha256 mismatch (recorded {recorded!r}, recomputed {digest!r})"
            )
    if "content" in expected:
        content = artifact["content"]
        if content.get("bytes") != len(_decode(content)):
            problems.append(f"content length mismatch (recorded {content.get('bytes')!r} bytes)")
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
