"""The OpenAPI 3.1 document of the verification service, built from the published schemas.

Written here rather than derived from a framework so the request bodies are exactly the
contract and bundle JSON Schemas `verdryx verify` validates against. The committed copy is
`docs/verification-service.openapi.json` (a test keeps the two equal; regenerate it with
`python scripts/write_openapi.py`).
"""

from __future__ import annotations

import copy
from typing import Any, Final

from verdryx_core.addons.contracts.evidence import bundle_schema
from verdryx_core.addons.contracts.validate import contract_schema
from verdryx_core.addons.service.core import DEFAULT_LIMIT, MAX_LIMIT
from verdryx_core.version import __version__

__all__ = ["openapi_document"]

_SHA256: Final = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
_VERDICT_WORD: Final = {"type": "string", "enum": ["PASS", "FAIL", "FLAG"]}


def _embed(schema: dict[str, Any], prefix: str, components: dict[str, Any]) -> dict[str, Any]:
    """Move a schema's `$defs` into components, rewriting its `$ref`s to point there."""
    schema = copy.deepcopy(schema)
    for key in ("$schema", "$id"):
        schema.pop(key, None)
    defs = schema.pop("$defs", {})

    def rewrite(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                key: (
                    f"#/components/schemas/{prefix}_{value.removeprefix('#/$defs/')}"
                    if key == "$ref" and isinstance(value, str)
                    else rewrite(value)
                )
                for key, value in node.items()
            }
        if isinstance(node, list):
            return [rewrite(item) for item in node]
        return node

    for name, definition in defs.items():
        components[f"{prefix}_{name}"] = rewrite(definition)
    return rewrite(schema)


def _error(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def _json(description: str, ref: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}},
    }


_CONTRACT_ID_PARAM: Final = {
    "name": "contract_id",
    "in": "path",
    "required": True,
    "description": "The id `POST /v1/contracts` returned.",
    "schema": {"type": "string"},
}


def openapi_document() -> dict[str, Any]:
    components: dict[str, Any] = {}
    contract = _embed(contract_schema(), "Contract", components)
    bundle = _embed(bundle_schema(), "Bundle", components)
    components.update(
        {
            "Contract": contract,
            "Bundle": bundle,
            "Error": {
                "type": "object",
                "required": ["error"],
                "properties": {"error": {"type": "string", "description": "One line."}},
                "additionalProperties": False,
            },
            "ContractCreated": {
                "type": "object",
                "required": ["contract_id", "contract_sha256", "task_id", "agent_id"],
                "properties": {
                    "contract_id": {"type": "string", "pattern": "^vc_[0-9a-f]{32}$"},
                    "contract_sha256": _SHA256,
                    "task_id": {"type": "string"},
                    "agent_id": {"type": ["string", "null"]},
                },
            },
            "CheckResult": {
                "type": "object",
                "required": ["check_id", "type", "status", "evidence", "description"],
                "properties": {
                    "check_id": {"type": "string"},
                    "type": {"type": "string"},
                    "status": {"type": "string", "enum": ["pass", "fail", "error"]},
                    "evidence": {"type": "string"},
                    "description": {"type": "string"},
                },
            },
            "Verdict": {
                "type": "object",
                "description": "The `verdryx verify --json` document, plus where it is kept.",
                "required": [
                    "verdict",
                    "reason",
                    "check_results",
                    "unverifiable_claims",
                    "summary",
                    "task_id",
                    "agent_id",
                    "integrity_problems",
                    "bundle_hash",
                    "run_id",
                    "contract_id",
                    "received_at",
                ],
                "properties": {
                    "verdict": _VERDICT_WORD,
                    "reason": {"type": "string"},
                    "check_results": {
                        "type": "array",
                        "items": {"$ref": "#/components/schemas/CheckResult"},
                    },
                    "unverifiable_claims": {"type": "array", "items": {"type": "string"}},
                    "summary": {"type": "string"},
                    "task_id": {"type": "string"},
                    "agent_id": {"type": ["string", "null"]},
                    "integrity_problems": {"type": "array", "items": {"type": "string"}},
                    "bundle_hash": {"type": ["string", "null"]},
                    "run_id": {"type": "string", "pattern": "^vr_[0-9a-f]{24}$"},
                    "contract_id": {"type": "string"},
                    "received_at": {"type": "string"},
                },
            },
            "LedgerEntry": {
                "type": "object",
                "required": [
                    "run_id",
                    "contract_id",
                    "task_id",
                    "agent_id",
                    "verdict",
                    "summary",
                    "bundle_hash",
                    "received_at",
                ],
                "properties": {
                    "run_id": {"type": "string"},
                    "contract_id": {"type": "string"},
                    "task_id": {"type": "string"},
                    "agent_id": {"type": ["string", "null"]},
                    "verdict": _VERDICT_WORD,
                    "summary": {"type": "string"},
                    "bundle_hash": {"type": ["string", "null"]},
                    "received_at": {"type": "string"},
                },
            },
            "Ledger": {
                "type": "object",
                "required": ["agent_id", "counts", "verdicts", "next_cursor"],
                "properties": {
                    "agent_id": {"type": ["string", "null"]},
                    "counts": {
                        "type": "object",
                        "description": "Over every verdict the query matches, not this page.",
                        "required": ["PASS", "FLAG", "FAIL", "total"],
                        "properties": {
                            name: {"type": "integer", "minimum": 0}
                            for name in ("PASS", "FLAG", "FAIL", "total")
                        },
                    },
                    "verdicts": {
                        "type": "array",
                        "description": "Newest first.",
                        "items": {"$ref": "#/components/schemas/LedgerEntry"},
                    },
                    "next_cursor": {
                        "type": ["string", "null"],
                        "description": (
                            "Pass as `cursor` for the next page; null on the last. Opaque, and "
                            "valid only with the API key that received it."
                        ),
                    },
                },
            },
        }
    )
    unauthorized = _error("No, a malformed, an unknown or a revoked API key.")
    bad = _error("The body or a parameter is invalid; the message names the field.")
    too_large = _error("The body is larger than the server's limit (named in the message).")
    missing = _error("No such contract for this API key (another key's contracts look absent).")
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "verdryx verification service",
            "version": __version__,
            "description": (
                "Hosted verification of agent contracts: the server re-runs the deterministic "
                "checks on an evidence bundle's content and keeps a ledger per agent. "
                "See docs/verification-service.md."
            ),
        },
        "security": [{"bearer": []}],
        "paths": {
            "/healthz": {
                "get": {
                    "operationId": "health",
                    "summary": "Liveness: the server answers (no key needed).",
                    "security": [],
                    "responses": {
                        "200": {
                            "description": "The server is up.",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "required": ["status"],
                                        "properties": {"status": {"const": "ok"}},
                                    }
                                }
                            },
                        }
                    },
                }
            },
            "/v1/contracts": {
                "post": {
                    "operationId": "createContract",
                    "summary": "Register a contract (validated as `verdryx verify` does).",
                    "description": (
                        "The id is derived from the key and the contract's canonical hash: "
                        "posting the same contract again with the same key returns the same "
                        "id (200 instead of 201)."
                    ),
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {"$ref": "#/components/schemas/Contract"}
                            }
                        },
                    },
                    "responses": {
                        "201": _json("Registered.", "ContractCreated"),
                        "200": _json("Already registered by this key.", "ContractCreated"),
                        "400": bad,
                        "401": unauthorized,
                        "413": too_large,
                    },
                }
            },
            "/v1/contracts/{contract_id}/runs": {
                "post": {
                    "operationId": "submitRun",
                    "summary": "Verify a bundle against the contract; record the verdict.",
                    "description": (
                        "Every content hash and the bundle hash are recomputed, the bundle must "
                        "be bound to this contract (task id, agent id, contract hash), and every "
                        "check is re-run on the bundle's content. Tampering or a bundle for "
                        "another contract is FAIL naming the artifact or field; a check a "
                        "truncated artifact cannot answer is FLAG, never PASS."
                    ),
                    "parameters": [_CONTRACT_ID_PARAM],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Bundle"}}
                        },
                    },
                    "responses": {
                        "201": _json("The verdict, now in the ledger.", "Verdict"),
                        "400": bad,
                        "401": unauthorized,
                        "404": missing,
                        "413": too_large,
                    },
                }
            },
            "/v1/contracts/{contract_id}/verdict": {
                "get": {
                    "operationId": "getVerdict",
                    "summary": "The latest verdict of the contract.",
                    "parameters": [_CONTRACT_ID_PARAM],
                    "responses": {
                        "200": _json("The latest verdict.", "Verdict"),
                        "401": unauthorized,
                        "404": _error("No such contract for this key, or no run yet."),
                    },
                }
            },
            "/v1/verdicts": {
                "get": {
                    "operationId": "listVerdicts",
                    "summary": "The ledger: this key's verdicts, newest first, with counts.",
                    "parameters": [
                        {
                            "name": "agent_id",
                            "in": "query",
                            "required": False,
                            "description": "Only this agent's verdicts (default: every agent).",
                            "schema": {"type": "string", "minLength": 1, "maxLength": 1000},
                        },
                        {
                            "name": "limit",
                            "in": "query",
                            "required": False,
                            "description": f"Page size (default {DEFAULT_LIMIT}).",
                            "schema": {
                                "type": "integer",
                                "minimum": 1,
                                "maximum": MAX_LIMIT,
                                "default": DEFAULT_LIMIT,
                            },
                        },
                        {
                            "name": "cursor",
                            "in": "query",
                            "required": False,
                            "description": (
                                "The `next_cursor` of the previous page (of this API key)."
                            ),
                            "schema": {"type": "string"},
                        },
                    ],
                    "responses": {
                        "200": _json("One page of the ledger.", "Ledger"),
                        "400": bad,
                        "401": unauthorized,
                    },
                }
            },
        },
        "components": {
            "schemas": components,
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A key from `verdryx keys create` (vk_live_...).",
                }
            },
        },
    }
