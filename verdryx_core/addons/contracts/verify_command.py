"""`verdryx verify CONTRACT --base-path DIR | --bundle F [--server URL]`: did the agent do what
it promised? With `--server`, the bundle is submitted to the verification service and its
verdict is the answer (docs/verification-service.md).

Exit codes (docs/contracts.md): 0 PASS, 1 FAIL, 2 FLAG, 3 usage or I/O error. This
command's own argument errors (no source, both sources, a bad value) exit 3 too, so a script
never reads a typo as FLAG; only an argument no command knows, which the top-level parser
rejects before this command is reached, still exits 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from typing import Any, Final, NoReturn

from verdryx_core.addons.contracts.evidence import (
    load_bundle,
    verify_and_collect,
    verify_bundle,
    write_bundle,
)
from verdryx_core.addons.contracts.history import save_verdicts
from verdryx_core.addons.contracts.model import (
    ERROR,
    FAIL,
    FAILED,
    FLAG,
    PASS,
    PASSED,
    Contract,
    ContractVerdict,
)
from verdryx_core.addons.contracts.validate import load_contract
from verdryx_core.addons.service.client import Client
from verdryx_core.cli.commands._common import add_json_argument, float_argument, print_json
from verdryx_core.errors import UsageError, VerdryxError
from verdryx_core.store import Store, resolve_store_path

__all__ = ["EXIT_CODES", "EXIT_ERROR", "HELP", "NAME", "add_arguments", "run"]

NAME = "verify"
HELP = (
    "check an agent's contract against the files it produced or an evidence bundle "
    "(exit 0 PASS, 1 FAIL, 2 FLAG, 3 error)"
)

EXIT_CODES: Final = {PASS: 0, FAIL: 1, FLAG: 2}
EXIT_ERROR: Final = 3
#: Read by cli.main: an unknown flag here is exit 3, never 2 (which means FLAG).
USAGE_EXIT: Final = EXIT_ERROR

_STATUS_ORDER: Final = {FAILED: 0, ERROR: 1, PASSED: 2}


def _exit_3_on_usage_errors(parser: argparse.ArgumentParser) -> None:
    """argparse exits 2 on a usage error, which here means FLAG: make it 3, in one line."""

    def error(message: str) -> NoReturn:
        parser.exit(EXIT_ERROR, f"error: {message} (see `{parser.prog} --help`)\n")

    parser.error = error  # type: ignore[method-assign]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _exit_3_on_usage_errors(parser)
    parser.add_argument("contract", metavar="CONTRACT", help="the contract JSON file")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--base-path", metavar="DIR", help="check the files under DIR (the agent's workspace)"
    )
    source.add_argument(
        "--bundle",
        metavar="F",
        help="re-check an evidence bundle alone: recompute every hash, re-run every check",
    )
    parser.add_argument(
        "--bundle-out",
        metavar="F",
        help="with --base-path: also write the evidence bundle the checks saw to F",
    )
    add_json_argument(parser)
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="list every check, passed ones included"
    )
    store = parser.add_mutually_exclusive_group()
    store.add_argument("--db", metavar="PATH", help="save the verdict to this verdryx store")
    store.add_argument(
        "--store",
        action="store_true",
        help="save the verdict to the default store ($VERDRYX_DB, else "
        "$TAIPAN_HOME/verdryx.db when that folder exists, else ./verdryx.db)",
    )
    parser.add_argument(
        "--agent-id",
        metavar="ID",
        help="the agent the verdict belongs to (default: the contract's agent_id)",
    )
    parser.add_argument(
        "--server",
        metavar="URL",
        help="submit the evidence bundle to the verification service at URL and print its "
        "verdict (the API key is read from $VERDRYX_API_KEY)",
    )
    parser.add_argument(
        "--timeout",
        type=float_argument(),
        default=60.0,
        metavar="S",
        help="with --server: seconds the whole exchange with the server may take, both "
        "requests and every byte of their answers (60)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except VerdryxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR


def _run(args: argparse.Namespace) -> int:
    if args.bundle and args.bundle_out:
        raise UsageError("--bundle-out writes a new bundle, so it needs --base-path, not --bundle")
    if args.server and args.agent_id:
        raise UsageError(
            "--agent-id cannot be used with --server: the service records the contract's agent_id"
        )
    contract = load_contract(args.contract)
    notes: list[str] = []
    document: dict[str, Any] | None = None
    if args.server:
        verdict, document = _verify_on_server(args, contract, notes)
    elif args.bundle:
        verdict = verify_bundle(contract, load_bundle(args.bundle))
    else:
        verdict, bundle = verify_and_collect(contract, args.base_path)
        if args.bundle_out:
            write_bundle(bundle, args.bundle_out)
            notes.append(f"evidence bundle written to {args.bundle_out}")
    if args.agent_id:
        verdict = dataclasses.replace(verdict, agent_id=args.agent_id)
    if args.db or args.store:
        path = resolve_store_path(args.db)
        with Store.open(path) as store:
            save_verdicts(store, [verdict.to_record()])
        notes.append(f"verdict saved to {path} (agent {verdict.agent_id or '-'})")
    if args.json:
        # From the service: its whole document (run_id, contract_id and received_at too).
        print_json(document if document is not None else verdict.to_dict())
    else:
        _print_text(verdict, verbose=args.verbose, notes=notes)
    return EXIT_CODES[verdict.verdict]


def _verify_on_server(
    args: argparse.Namespace, contract: Contract, notes: list[str]
) -> tuple[ContractVerdict, dict[str, Any]]:
    """Collect (or read) the bundle here; let the service verify it and record the verdict."""
    key = os.environ.get("VERDRYX_API_KEY", "").strip()
    if not key:
        raise UsageError(
            "--server needs an API key in $VERDRYX_API_KEY (the operator creates one with "
            "`verdryx keys create --name N`)"
        )
    if args.bundle:
        bundle = load_bundle(args.bundle)
    else:
        _, bundle = verify_and_collect(contract, args.base_path)
        if args.bundle_out:
            write_bundle(bundle, args.bundle_out)
            notes.append(f"evidence bundle written to {args.bundle_out}")
    # One deadline for the command's two requests: --timeout bounds the whole exchange.
    deadline = time.monotonic() + args.timeout if args.timeout > 0 else None
    client = Client(api_key=key, base_url=args.server, timeout=args.timeout, deadline=deadline)
    contract_id = client.create_contract(contract)
    document = client.submit_run(contract_id, bundle)
    notes.append(
        f"verified by {client.base_url} (contract {contract_id}, run {document.get('run_id')})"
    )
    return ContractVerdict.from_dict(document), document


def _print_text(verdict: ContractVerdict, *, verbose: bool, notes: list[str]) -> None:
    agent = f" (agent {verdict.agent_id})" if verdict.agent_id else ""
    print(f"{verdict.verdict}  task {verdict.task_id}{agent}: {verdict.summary}")
    for problem in verdict.integrity_problems:
        print(f"  tampered  {problem}")
    results = sorted(verdict.check_results, key=lambda result: _STATUS_ORDER[result.status])
    shown = [result for result in results if verbose or result.status != PASSED]
    width = max((len(result.check_id) for result in shown), default=0)
    for result in shown:
        print(f"  {result.status:<5}  {result.check_id:<{width}}  {result.type}: {result.evidence}")
    hidden = len(results) - len(shown)
    if hidden:
        print(f"  ({hidden} passed; -v lists them)")
    for claim in verdict.unverifiable_claims:
        print(f"  unverifiable  {claim}")
    if verdict.bundle_hash:
        print(f"  bundle_hash {verdict.bundle_hash}")
    for note in notes:
        print(note)
