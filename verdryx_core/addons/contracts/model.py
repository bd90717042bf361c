"""Contract value types: the promise (Contract, Criterion) and the answer (CriterionResult for
each criterion, ContractVerdict for the whole contract).

A contract is written before a run: what the agent intends to do and the success criteria
that show it did. A verdict is what the world (or an evidence bundle) says about it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from verdryx_core.addons.canonical import canonical_json

__all__ = [
    "CHECK_STATUSES",
    "CHECK_TYPES",
    "ERROR",
    "FAIL",
    "FAILED",
    "FLAG",
    "PASS",
    "PASSED",
    "VERDICTS",
    "Contract",
    "ContractVerdict",
    "Criterion",
    "CriterionResult",
    "Limits",
]

#: Declaration order is the order error messages list them in.
CHECK_TYPES: Final = (
    "file_exists",
    "file_nonempty",
    "file_contains",
    "pattern_count_gte",
    "dir_exists",
    "json_valid",
    "line_count_gte",
    "sqlite_table_has_rows",
    "path_absent",
)

PASS: Final = "PASS"
FAIL: Final = "FAIL"
FLAG: Final = "FLAG"
VERDICTS: Final = (PASS, FAIL, FLAG)

PASSED: Final = "pass"
FAILED: Final = "fail"
#: The check could not run; never counted as a pass.
ERROR: Final = "error"
CHECK_STATUSES: Final = (PASSED, FAILED, ERROR)


def _int_or_none(value: Any) -> int | None:
    # JSON Schema counts 2.0 as an integer; the checks compare with ints.
    return None if value is None else int(value)


@dataclass(frozen=True, slots=True, kw_only=True)
class Criterion:
    """One success criterion; which optional fields are set depends on `type`
    (validated by `verdryx_core.addons.contracts.validate`)."""

    id: str
    type: str
    path: str
    description: str = ""
    #: file_contains, pattern_count_gte: a regex (stdlib `re` syntax).
    pattern: str | None = None
    #: pattern_count_gte: at least this many non-overlapping matches.
    min_count: int | None = None
    #: line_count_gte: at least this many lines.
    min_lines: int | None = None
    #: sqlite_table_has_rows: a plain SQL identifier.
    table: str | None = None
    #: sqlite_table_has_rows: at least this many rows (default 1).
    min_rows: int | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "type": self.type, "path": self.path}
        if self.description:
            data["description"] = self.description
        for name in ("pattern", "min_count", "min_lines", "table", "min_rows"):
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Criterion:
        """Build from already-validated data."""
        return cls(
            id=data["id"],
            type=data["type"],
            path=data["path"],
            description=data.get("description") or "",
            pattern=data.get("pattern"),
            min_count=_int_or_none(data.get("min_count")),
            min_lines=_int_or_none(data.get("min_lines")),
            table=data.get("table"),
            min_rows=_int_or_none(data.get("min_rows")),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Contract:
    """What an agent promised before a run, and which of its claims nothing can check."""

    task_id: str
    success_criteria: tuple[Criterion, ...] = ()
    agent_id: str | None = None
    intended_action: str = ""
    unverifiable_claims: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"task_id": self.task_id}
        if self.agent_id is not None:
            data["agent_id"] = self.agent_id
        if self.intended_action:
            data["intended_action"] = self.intended_action
        data["success_criteria"] = [criterion.to_dict() for criterion in self.success_criteria]
        data["unverifiable_claims"] = list(self.unverifiable_claims)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Contract:
        """Build from already-validated data (`validate.contract_from_data` validates)."""
        return cls(
            task_id=data["task_id"],
            agent_id=data.get("agent_id"),
            intended_action=data.get("intended_action") or "",
            success_criteria=tuple(
                Criterion.from_dict(item) for item in data.get("success_criteria") or ()
            ),
            unverifiable_claims=tuple(data.get("unverifiable_claims") or ()),
        )

    def sha256(self) -> str:
        """A content hash of the promise, recorded in evidence bundles as provenance."""
        return hashlib.sha256(canonical_json(self.to_dict())).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """How much evidence is kept and how long a check may wait."""

    #: Bytes of one file kept in a bundle; beyond it the artifact is marked truncated.
    max_file_bytes: int = 256 * 1024
    #: Entries of one directory listing kept in a bundle.
    max_dir_entries: int = 2000
    #: Bytes a live check reads from one file; a larger file is an error, never a guess.
    max_read_bytes: int = 64 * 1024 * 1024
    #: How long a SQLite check waits for another process's lock before erroring.
    sqlite_timeout_s: float = 2.0
    #: How long one regex search may run (catastrophic backtracking is an error, not a hang).
    regex_timeout_s: float = 2.0


@dataclass(frozen=True, slots=True, kw_only=True)
class CriterionResult:
    """One criterion checked: `status` is pass, fail or error, with the evidence in words."""

    check_id: str
    type: str
    status: str
    evidence: str
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "check_id": self.check_id,
            "type": self.type,
            "status": self.status,
            "evidence": self.evidence,
            "description": self.description,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CriterionResult:
        return cls(
            check_id=data["check_id"],
            type=data["type"],
            status=data["status"],
            evidence=data["evidence"],
            description=data.get("description") or "",
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ContractVerdict:
    """PASS, FAIL or FLAG for one contract, with a reason a person can read."""

    verdict: str
    #: "<VERDICT>: <summary> - <evidence of every check>", one line.
    reason: str
    task_id: str
    #: The reason's headline without the verdict word or the evidence ("all 3 checks passed").
    summary: str = ""
    agent_id: str | None = None
    check_results: tuple[CriterionResult, ...] = ()
    unverifiable_claims: tuple[str, ...] = ()
    #: Artifacts whose hash did not match (bundle verification only); any makes it FAIL.
    integrity_problems: tuple[str, ...] = ()
    #: The evidence bundle's hash, when one was collected or verified.
    bundle_hash: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The `verify` JSON document (docs/cli.md) plus provenance keys."""
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "check_results": [result.to_dict() for result in self.check_results],
            "unverifiable_claims": list(self.unverifiable_claims),
            "summary": self.summary,
            "task_id": self.task_id,
            "agent_id": self.agent_id,
            "integrity_problems": list(self.integrity_problems),
            "bundle_hash": self.bundle_hash,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ContractVerdict:
        return cls(
            verdict=data["verdict"],
            reason=data["reason"],
            task_id=data["task_id"],
            summary=data.get("summary") or "",
            agent_id=data.get("agent_id"),
            check_results=tuple(
                CriterionResult.from_dict(item) for item in data.get("check_results") or ()
            ),
            unverifiable_claims=tuple(data.get("unverifiable_claims") or ()),
            integrity_problems=tuple(data.get("integrity_problems") or ()),
            bundle_hash=data.get("bundle_hash"),
        )

    def to_record(
        self, *, agent_id: str | None = None, run_id: str | None = None
    ) -> dict[str, Any]:
        """The row `history.save_verdicts` takes; `agent_id` overrides the contract's."""
        return {
            "agent_id": agent_id or self.agent_id,
            "task_id": self.task_id,
            "verdict": self.verdict,
            "reason": self.reason,
            "bundle_hash": self.bundle_hash,
            "run_id": run_id,
        }
