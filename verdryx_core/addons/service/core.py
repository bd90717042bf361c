"""The verification service without HTTP: authenticate, accept contracts, verify runs, read
the ledger. `app.py` is the thin ASGI face on it (docs/verification-service.md).

The server trusts nothing the agent says about its own run: every content hash and the
bundle hash are recomputed, the bundle must be bound to the contract it is submitted to,
and every check is re-run on the bundle's content by the same code `verdryx verify` uses.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Mapping
from typing import Any, Final

from verdryx_core.addons.contracts.evidence import bundle_hash, parse_bundle, verify_bundle
from verdryx_core.addons.contracts.model import Contract, Limits
from verdryx_core.addons.contracts.validate import parse_contract
from verdryx_core.addons.errors import BundleError, ContractError, RefusedRequestError
from verdryx_core.addons.service.keys import hash_key, looks_like_key
from verdryx_core.addons.service.storage import ApiKey, ServiceStorage, StoredContract, now_iso

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "VerificationService",
    "contract_id_for",
]

DEFAULT_LIMIT: Final = 50
MAX_LIMIT: Final = 500
_CONTRACT_ID: Final = re.compile(r"vc_[0-9a-f]{32}")
#: A ledger cursor is the run_id of the last entry of the page before: the tenant already
#: holds it, so it tells nothing, and it resolves only for the key whose verdict it is. The
#: ledger's own position (`seq`) counts every tenant's verdicts and is never shown: from it
#: one tenant could read how many runs all the others submit between two of its pages.
_CURSOR: Final = re.compile(r"vr_[0-9a-f]{24}")
_LIMIT: Final = re.compile(r"[0-9]{1,6}")


def contract_id_for(key_id: str, contract_sha256: str) -> str:
    """Content-derived and scoped to the key: the same contract posted twice by one key is
    one contract; two keys posting the same contract get two unrelated ids."""
    return "vc_" + hashlib.sha256(f"{key_id}\n{contract_sha256}".encode()).hexdigest()[:32]


_UNAUTHORIZED: Final = (
    "missing or invalid API key: send 'Authorization: Bearer vk_live_...' with a key from "
    "`verdryx keys create`"
)


class VerificationService:
    def __init__(self, storage: ServiceStorage, *, limits: Limits | None = None) -> None:
        self.storage = storage
        self.limits = limits or Limits()

    # -- auth -------------------------------------------------------------------------------

    def authenticate(self, authorization: str | None) -> ApiKey:
        """The active key named by an `Authorization: Bearer` header, else a 401."""
        scheme, _, token = (authorization or "").strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not looks_like_key(token):
            raise RefusedRequestError(401, _UNAUTHORIZED)
        key = self.storage.active_key(hash_key(token))
        if key is None:
            raise RefusedRequestError(
                401, "API key not recognised or revoked; ask the operator for a key"
            )
        return key

    # -- contracts --------------------------------------------------------------------------

    def create_contract(self, key: ApiKey, body: bytes) -> tuple[int, dict[str, Any]]:
        """201 with the id of a new contract, 200 with the same id when it was already there."""
        try:
            contract = parse_contract(body, source="contract")
        except ContractError as exc:
            raise RefusedRequestError(400, str(exc)) from None
        digest = contract.sha256()
        contract_id = contract_id_for(key.key_id, digest)
        created = self.storage.put_contract(
            contract_id=contract_id,
            key_id=key.key_id,
            contract_sha256=digest,
            document=contract.to_dict(),
        )
        document = {
            "contract_id": contract_id,
            "contract_sha256": digest,
            "task_id": contract.task_id,
            "agent_id": contract.agent_id,
        }
        return (201 if created else 200), document

    def _stored(self, key: ApiKey, contract_id: str) -> StoredContract:
        stored = (
            self.storage.get_contract(contract_id, key.key_id)
            if _CONTRACT_ID.fullmatch(contract_id)
            else None
        )
        if stored is None:
            # The same answer whether it does not exist or another key owns it.
            raise RefusedRequestError(404, f"no contract {contract_id[:80]!r} for this API key")
        return stored

    # -- runs -------------------------------------------------------------------------------

    def submit_run(self, key: ApiKey, contract_id: str, body: bytes) -> dict[str, Any]:
        """Verify a bundle against the contract and append the verdict to the ledger."""
        stored = self._stored(key, contract_id)
        contract = Contract.from_dict(stored.document)
        try:
            bundle = parse_bundle(body, name="bundle")
        except BundleError as exc:
            raise RefusedRequestError(400, str(exc)) from None
        verdict = verify_bundle(contract, bundle, limits=self.limits).to_dict()
        # Keep the bundle only under a hash it really has: a forged bundle_hash must not
        # claim a slot another (honest) bundle will need.
        sealed = bundle_hash(bundle) == bundle["bundle_hash"]
        document = {
            **verdict,
            "run_id": "vr_" + secrets.token_hex(12),
            "contract_id": contract_id,
            "received_at": now_iso(),
        }
        self.storage.record_run(
            contract=stored,
            document=document,
            bundle_text=body.decode("utf-8-sig") if sealed else None,
        )
        return document

    def latest_verdict(self, key: ApiKey, contract_id: str) -> dict[str, Any]:
        self._stored(key, contract_id)
        document = self.storage.latest_verdict(contract_id, key.key_id)
        if document is None:
            raise RefusedRequestError(
                404, f"contract {contract_id!r} has no verdict yet; submit a run"
            )
        return document

    # -- the ledger -------------------------------------------------------------------------

    def ledger(self, key: ApiKey, query: Mapping[str, str]) -> dict[str, Any]:
        unknown = sorted(set(query) - {"agent_id", "limit", "cursor"})
        if unknown:
            raise RefusedRequestError(
                400, f"unknown query parameter {unknown[0]!r}; expected agent_id, limit, cursor"
            )
        agent_id = query.get("agent_id")
        if agent_id is not None and not 1 <= len(agent_id) <= 1000:
            raise RefusedRequestError(400, "agent_id must be 1 to 1000 characters")
        limit = _limit(query.get("limit"))
        cursor = query.get("cursor")
        before = None
        if cursor is not None:
            if _CURSOR.fullmatch(cursor):
                before = self.storage.verdict_seq(key.key_id, cursor)
            if before is None:
                raise RefusedRequestError(
                    400, f"cursor {cursor[:40]!r} is not one this server returned"
                )
        page = self.storage.ledger(key.key_id, agent_id=agent_id, limit=limit, before=before)
        return {
            "agent_id": agent_id,
            "counts": {**page.counts, "total": sum(page.counts.values())},
            "verdicts": [entry.to_dict() for entry in page.entries],
            "next_cursor": page.entries[-1].run_id if page.next_before is not None else None,
        }


def _limit(text: str | None) -> int:
    if text is None:
        return DEFAULT_LIMIT
    if not _LIMIT.fullmatch(text) or not 1 <= int(text) <= MAX_LIMIT:
        raise RefusedRequestError(
            400, f"limit must be an integer from 1 to {MAX_LIMIT}, got {text[:40]!r}"
        )
    return int(text)
