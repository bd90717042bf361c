"""The verification service under load: C concurrent clients submitting N evidence bundles to
a real `verdryx serve` (uvicorn, its own process, a real SQLite store), then the ledger read
back: every verdict must be in it exactly once, with the verdict the server returned.

    .venv/bin/python benchmarks/verification_service.py           # 16 clients, 1,000 bundles
    .venv/bin/python benchmarks/verification_service.py --quick   # 4 clients, 48 bundles
    .venv/bin/python benchmarks/verification_service.py --db postgresql://USER@HOST/DB
    .venv/bin/python benchmarks/verification_service.py --db postgresql://... --servers 2

`--db URL` serves from a PostgreSQL store too: the same load runs on a temporary SQLite file
and then on the PostgreSQL store, in the same run, and the ratio is printed. Use a database
(or a `?options=-csearch_path%3D...` schema) that holds a verdryx store or nothing: the run
adds a key and its verdicts, which no other key sees. `--servers N` starts N `verdryx serve`
processes on the store, the clients spread over them (several hosts sharing one store).

Printed: throughput (bundles/s), p50/p99 latency per submission, and, as the baseline
measured in the same run, the same bundles verified in-process with `verify_bundle` alone
(no HTTP, no ledger), so the ratio is what hosting costs. The bundles are the worked example
(docs/contracts.md) for 16 agents, in three variants (PASS, FAIL, FLAG). Exit status 1 when
the ledger disagrees with what the clients were told.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchlib import load, verdict

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "contracts"
VERDRYX = Path(sys.executable).parent / "verdryx"
QUIET = ("--log-level", "warning")

from verdryx_core.addons.contracts import (  # noqa: E402
    Contract,
    collect_evidence,
    contract_from_data,
    verify_bundle,
)
from verdryx_core.addons.service import Client, VerificationServiceError  # noqa: E402
from verdryx_core.store import StoreUrl, is_store_url  # noqa: E402


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _workloads(base: Path, agents: int) -> list[tuple[Contract, dict[str, Any]]]:
    """(contract, bundle) per agent and variant: the example as is (PASS), with a credentials
    file left behind (FAIL), and with an unverifiable claim (FLAG)."""
    template = json.loads((EXAMPLE / "weekly-report.contract.json").read_text(encoding="utf-8"))
    good = base / "good"
    shutil.copytree(EXAMPLE / "workspace", good)
    bad = base / "bad"
    shutil.copytree(EXAMPLE / "workspace", bad)
    (bad / ".env").write_text("TOKEN=left-behind\n")
    work = []
    for index in range(agents):
        agent = f"agent-{index:02}"
        plain = contract_from_data({**template, "agent_id": agent})
        claimed = contract_from_data(
            {**template, "agent_id": agent, "unverifiable_claims": ["emailed the team"]}
        )
        work.append((plain, collect_evidence(plain, good)))
        work.append((plain, collect_evidence(plain, bad)))
        work.append((claimed, collect_evidence(claimed, good)))
    return work


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@dataclass
class Measured:
    store: str
    rate: float
    wall: float
    latencies: list[float]
    told: dict[str, str]
    exactly_once: bool
    problem: str


def _measure(
    db: str,
    label: str,
    work: list[tuple[Contract, dict[str, Any]]],
    clients: int,
    total: int,
    servers: int,
) -> Measured | str:
    """The load on `servers` `verdryx serve` processes over the store `db`; a string when a
    server could not start (its output)."""
    created = subprocess.run(
        [str(VERDRYX), "keys", "create", "--name", "bench", "--db", db],
        capture_output=True,
        text=True,
    )
    if created.returncode != 0:
        return created.stderr.strip()
    key = created.stdout.strip()
    ports = [_free_port() for _ in range(servers)]
    processes = [
        subprocess.Popen(
            [str(VERDRYX), "serve", "--db", db, "--port", str(port), *QUIET],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for port in ports
    ]
    try:
        urls = [f"http://127.0.0.1:{port}" for port in ports]
        for url, process in zip(urls, processes, strict=True):
            probe = Client(api_key=key, base_url=url, timeout=5)
            for _ in range(400):
                try:
                    probe.list_verdicts(limit=1)
                    break
                except VerificationServiceError:
                    if process.poll() is not None:
                        return process.stderr.read() if process.stderr else "server exited"
                    time.sleep(0.05)
        probe = Client(api_key=key, base_url=urls[0], timeout=30)
        ids = [probe.create_contract(contract) for contract, _ in work]

        told: dict[str, str] = {}
        latencies: list[float] = []
        failures: list[str] = []
        lock = threading.Lock()

        def submit(worker: int) -> None:
            client = Client(api_key=key, base_url=urls[worker % servers], timeout=120)
            for i in range(worker, total, clients):
                contract_id, bundle = ids[i % len(work)], work[i % len(work)][1]
                begin = time.perf_counter()
                try:
                    answer = client.submit_run(contract_id, bundle)
                except VerificationServiceError as exc:
                    with lock:
                        failures.append(str(exc))
                    continue
                elapsed = time.perf_counter() - begin
                with lock:
                    latencies.append(elapsed)
                    told[answer["run_id"]] = answer["verdict"]

        threads = [threading.Thread(target=submit, args=(w,)) for w in range(clients)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - started

        # The ledger, read back page by page, agent by agent (from the last server).
        reader = Client(api_key=key, base_url=urls[-1], timeout=30)
        seen: list[tuple[str, str]] = []
        counted = 0
        for index in range(16):
            cursor = None
            while True:
                page = reader.list_verdicts(f"agent-{index:02}", limit=500, cursor=cursor)
                seen += [(entry["run_id"], entry["verdict"]) for entry in page["verdicts"]]
                cursor = page["next_cursor"]
                if cursor is None:
                    counted += page["counts"]["total"]
                    break
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=30)

    run_ids = [run_id for run_id, _ in seen]
    exactly_once = (
        not failures
        and len(told) == total
        and len(run_ids) == len(set(run_ids)) == total == counted
        and dict(seen) == told
    )
    problem = (
        f"{len(failures)} failed submissions ({failures[:1]}), {len(told)} answers, "
        f"{len(run_ids)} ledger rows ({len(set(run_ids))} distinct), counts total {counted}"
    )
    return Measured(label, total / wall, wall, latencies, told, exactly_once, problem)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 clients, 48 bundles")
    parser.add_argument("--clients", type=int, default=None)
    parser.add_argument("--bundles", type=int, default=None)
    parser.add_argument(
        "--db",
        default=None,
        metavar="URL",
        help="also serve from this PostgreSQL store, after a temporary SQLite file",
    )
    parser.add_argument("--servers", type=int, default=1, help="verdryx serve processes (1)")
    args = parser.parse_args()
    clients = args.clients or (4 if args.quick else 16)
    total = args.bundles or (48 if args.quick else 1000)
    if args.db is not None and not is_store_url(args.db):
        parser.error("--db takes a PostgreSQL URL (postgresql://...); SQLite is always measured")
    if args.servers < 1:
        parser.error("--servers must be at least 1")

    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        work = _workloads(base, agents=16)

        # Baseline, same run: the same verification in-process, no HTTP and no ledger.
        started = time.perf_counter()
        local = Counter(verify_bundle(*work[i % len(work)]).verdict for i in range(min(total, 300)))
        local_rate = min(total, 300) / (time.perf_counter() - started)

        stores = [(str(base / "verdryx.db"), "SQLite file")]
        if args.db is not None:
            stores.append((args.db, "PostgreSQL"))
            print(f"stores: a temporary SQLite file, then PostgreSQL {StoreUrl(args.db.strip())}")
        results: list[Measured] = []
        for db, label in stores:
            measured = _measure(db, label, work, clients, total, args.servers)
            if isinstance(measured, str):
                print(f"{label}: cannot serve: {measured}", file=sys.stderr)
                return 1
            results.append(measured)

    several = len(results) > 1
    for result in results:
        on = f" ({result.store})" if several else ""
        print(
            f"verification service{on}: {total} bundles from {clients} concurrent clients"
            f"{f' over {args.servers} servers' if args.servers > 1 else ''} in "
            f"{result.wall:.2f}s = {result.rate:.0f} bundles/s; latency p50 "
            f"{_percentile(result.latencies, 0.5) * 1000:.1f} ms, p99 "
            f"{_percentile(result.latencies, 0.99) * 1000:.1f} ms"
        )
    ratios = ", ".join(
        f"{result.rate / local_rate:.2f}x" + (f" ({result.store})" if several else "")
        for result in results
    )
    print(
        f"baseline, same run: verify_bundle in-process {local_rate:.0f} bundles/s "
        f"({dict(local)}); the service runs at {ratios} of it ({load()})"
    )
    if several:
        print(
            f"PostgreSQL vs SQLite, same run: {results[1].rate:.0f} vs {results[0].rate:.0f} "
            f"bundles/s = {results[1].rate / results[0].rate:.2f}x"
        )
    print(f"verdicts: {dict(Counter(results[0].told.values()))}; cpu count {os.cpu_count()}")
    wrong = [result for result in results if not result.exactly_once]
    for result in wrong:
        print(f"LEDGER MISMATCH ({result.store}): {result.problem}", file=sys.stderr)
    if wrong:
        print(verdict(False, "the ledger holds every verdict exactly once, as told"))
        return 1
    each = " in each store" if several else ""
    print(f"ledger: all {total} verdicts present exactly once{each}, each as the client was told")
    print(
        verdict(
            True,
            "the ledger holds every verdict exactly once, as told (the throughput is a figure "
            "to compare with the in-process baseline, not a target)",
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
