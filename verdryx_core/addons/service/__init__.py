"""Hosted verification: a server that re-checks evidence bundles and keeps a ledger per agent,
its API keys, and a client (docs/verification-service.md). The ASGI app (`service.app`) needs
the `serve` extra and is imported only where it is used."""

from __future__ import annotations

from verdryx_core.addons.errors import AuthError, RefusedRequestError, VerificationServiceError
from verdryx_core.addons.service.backends import open_service_storage
from verdryx_core.addons.service.client import Client
from verdryx_core.addons.service.core import VerificationService, contract_id_for
from verdryx_core.addons.service.keys import KEY_PREFIX, create_key, hash_key
from verdryx_core.addons.service.openapi import openapi_document
from verdryx_core.addons.service.storage import (
    ApiKey,
    LedgerEntry,
    LedgerPage,
    ServiceStorage,
    StoredContract,
)
from verdryx_core.addons.service.storage_postgres import PostgresServiceStorage
from verdryx_core.addons.service.storage_sqlite import SqliteServiceStorage

__all__ = [
    "KEY_PREFIX",
    "ApiKey",
    "AuthError",
    "Client",
    "LedgerEntry",
    "LedgerPage",
    "PostgresServiceStorage",
    "RefusedRequestError",
    "ServiceStorage",
    "SqliteServiceStorage",
    "StoredContract",
    "VerificationService",
    "VerificationServiceError",
    "contract_id_for",
    "create_key",
    "hash_key",
    "open_service_storage",
    "openapi_document",
]
