"""Contracts: verify what an agent said it would do, with evidence anyone can re-check."""

from __future__ import annotations

from verdryx_core.addons.contracts.checks import run_check, run_checks
from verdryx_core.addons.contracts.evidence import (
    BUNDLE_FORMAT,
    binding_problems,
    bundle_hash,
    bundle_schema,
    collect_evidence,
    load_bundle,
    parse_bundle,
    validate_bundle,
    verify_and_collect,
    verify_bundle,
    verify_workspace,
    write_bundle,
)
from verdryx_core.addons.contracts.model import (
    CHECK_TYPES,
    FAIL,
    FLAG,
    PASS,
    Contract,
    ContractVerdict,
    Criterion,
    CriterionResult,
    Limits,
)
from verdryx_core.addons.contracts.rubric import decide
from verdryx_core.addons.contracts.validate import (
    contract_from_data,
    contract_schema,
    load_contract,
    parse_contract,
)
from verdryx_core.addons.errors import BundleError, CheckError, ContractError

__all__ = [
    "BUNDLE_FORMAT",
    "CHECK_TYPES",
    "FAIL",
    "FLAG",
    "PASS",
    "BundleError",
    "CheckError",
    "Contract",
    "ContractError",
    "ContractVerdict",
    "Criterion",
    "CriterionResult",
    "Limits",
    "binding_problems",
    "bundle_hash",
    "bundle_schema",
    "collect_evidence",
    "contract_from_data",
    "contract_schema",
    "decide",
    "load_bundle",
    "load_contract",
    "parse_bundle",
    "parse_contract",
    "run_check",
    "run_checks",
    "validate_bundle",
    "verify_and_collect",
    "verify_bundle",
    "verify_workspace",
    "write_bundle",
]
