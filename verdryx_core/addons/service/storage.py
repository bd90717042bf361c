"""The verification service's tables: API keys, contracts, the bundles and the verdict ledger.

They live in the verdryx store beside the store's own tables, under their own `service_`
names and their own schema version (in `service_schema`, never the store's), so the service
and the store evolve apart. `ServiceStorage` is the interface the app uses; two backends
implement it with the same queries (`_sql.py`): `SqliteServiceStorage` in the store's SQLite
file (`storage_sqlite.py`) and `PostgresServiceStorage` in its PostgreSQL database
(`storage_postgres.py`), which several servers can share. `backends.open_service_storage`
picks one from the store target, as `Store.open` does (docs/verification-service.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Final, Protocol, Self

__all__ = [
    "SERVICE_SCHEMA_VERSION",
    "ApiKey",
    "LedgerEntry",
    "LedgerPage",
    "ServiceStorage",
    "StoredContract",
    "now_iso",
]

SERVICE_SCHEMA_VERSION: Final = 1


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiKey:
    key_id: str
    name: str
    prefix: str
    created_at: str
    revoked_at: str | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "key_id": self.key_id,
            "name": self.name,
            "prefix": self.prefix,
            "created_at": self.created_at,
            "revoked_at": self.revoked_at,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredContract:
    contract_id: str
    key_id: str
    contract_sha256: str
    document: dict[str, Any]
    created_at: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerEntry:
    """One verdict in the ledger, as `GET /v1/verdicts` lists it."""

    seq: int
    run_id: str
    contract_id: str
    task_id: str
    agent_id: str | None
    verdict: str
    summary: str
    bundle_hash: str | None
    received_at: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "contract_id": self.contract_id,
            "task_id": self.task_id,
            "agent_id": self.agent_id,
            "verdict": self.verdict,
            "summary": self.summary,
            "bundle_hash": self.bundle_hash,
            "received_at": self.received_at,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerPage:
    entries: tuple[LedgerEntry, ...]
    #: PASS / FLAG / FAIL over every verdict the query matches, not just this page.
    counts: dict[str, int]
    #: The `seq` to continue before, or None when this page is the last.
    next_before: int | None


class ServiceStorage(Protocol):
    """What the service keeps. Every method is one transaction; all are thread-safe, and
    several processes may share one PostgreSQL store."""

    #: Names the store in messages: a file path, or a URL with its password redacted.
    path: str

    def create_key(self, *, key_id: str, name: str, key_sha256: str, prefix: str) -> ApiKey: ...

    def list_keys(self) -> list[ApiKey]: ...

    def revoke_key(self, key_id: str) -> ApiKey | None: ...

    def active_key(self, key_sha256: str) -> ApiKey | None: ...

    def put_contract(
        self, *, contract_id: str, key_id: str, contract_sha256: str, document: Mapping[str, Any]
    ) -> bool: ...

    def get_contract(self, contract_id: str, key_id: str) -> StoredContract | None: ...

    def record_run(
        self, *, contract: StoredContract, document: Mapping[str, Any], bundle_text: str | None
    ) -> None: ...

    def latest_verdict(self, contract_id: str, key_id: str) -> dict[str, Any] | None: ...

    def ledger(
        self, key_id: str, *, agent_id: str | None, limit: int, before: int | None
    ) -> LedgerPage: ...

    def verdict_seq(self, key_id: str, run_id: str) -> int | None:
        """The ledger position of this key's verdict `run_id` (what a cursor resolves to),
        or None when the key has no such verdict."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...
