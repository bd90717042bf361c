"""The verification service under load: C concurrent clients submitting N evidence bundles to
a real `verdryx serve` (uvicorn, its own process, a real SQLite store), then the ledger read
back: every verdict must be in it exactly once, with the verdict the server returned.

    .venv/bin/python benchmarks/verification_service.py           # 16 clients, 1,000 bundles
    .venv/bin/python benchmarks/verification_service.py --quick   # 4 clients, 48 bundles

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
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "contracts"
VERDRYX = Path(sys.executable).parent / "verdryx"
QUIET = ("--log-level", "warning")

from verdryx_core.contracts import (  # noqa: E402
    Contract,
    collect_evidence,
    contract_from_data,
    verify_bundle,
)
from verdryx_core.service import Client, VerificationServiceError  # noqa: E402


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 clients, 48 bundles")
    parser.add_argument("--clients", type=int, default=None)
    parser.add_argument("--bundles", type=int, default=None)
    args = parser.parse_args()
    clients = args.clients or (4 if args.quick else 16)
    total = args.bundles or (48 if args.quick else 1000)

    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        work = _workloads(base, agents=16)
        db = base / "verdryx.db"
        key = subprocess.run(
            [str(VERDRYX), "keys", "create", "--name", "bench", "--db", str(db)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

        # Baseline, same run: the same verification in-process, no HTTP and no ledger.
        started = time.perf_counter()
        local = Counter(verify_bundle(*work[i % len(work)]).verdict for i in range(min(total, 300)))
        local_rate = min(total, 300) / (time.perf_counter() - started)

        port = _free_port()
        server = subprocess.Popen(
            [str(VERDRYX), "serve", "--db", str(db), "--port", str(port), *QUIET],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            probe = Client(api_key=key, base_url=url, timeout=5)
            for _ in range(400):
                try:
                    probe.list_verdicts(limit=1)
                    break
                except VerificationServiceError:
                    if server.poll() is not None:
                        print(server.stderr.read() if server.stderr else "", file=sys.stderr)
                        return 1
                    time.sleep(0.05)
            ids = [probe.create_contract(contract) for contract, _ in work]

            told: dict[str, str] = {}
            latencies: list[float] = []
            failures: list[str] = []
            lock = threading.Lock()

            def submit(worker: int) -> None:
                client = Client(api_key=key, base_url=url, timeout=120)
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

            # The ledger, read back page by page, agent by agent.
            seen: list[tuple[str, str]] = []
            counted = 0
            for index in range(16):
                cursor = None
                while True:
                    page = probe.list_verdicts(f"agent-{index:02}", limit=500, cursor=cursor)
                    seen += [(entry["run_id"], entry["verdict"]) for entry in page["verdicts"]]
                    cursor = page["next_cursor"]
                    if cursor is None:
                        counted += page["counts"]["total"]
                        break
        finally:
            server.terminate()
            server.wait(timeout=30)

    run_ids = [run_id for run_id, _ in seen]
    exactly_once = (
        not failures
        and len(told) == total
        and len(run_ids) == len(set(run_ids)) == total == counted
        and dict(seen) == told
    )
    rate = total / wall
    print(
        f"verification service: {total} bundles from {clients} concurrent clients in "
        f"{wall:.2f}s = {rate:.0f} bundles/s; latency p50 {_percentile(latencies, 0.5) * 1000:.1f}"
        f" ms, p99 {_percentile(latencies, 0.99) * 1000:.1f} ms"
    )
    print(
        f"baseline, same run: verify_bundle in-process {local_rate:.0f} bundles/s "
        f"({dict(local)}); the service runs at {rate / local_rate:.2f}x of it"
    )
    print(f"verdicts: {dict(Counter(told.values()))}; cpu count {os.cpu_count()}")
    if not exactly_once:
        print(
            f"LEDGER MISMATCH: {len(failures)} failed submissions "
            f"({failures[:1]}), {len(told)} answers, {len(run_ids)} ledger rows "
            f"({len(set(run_ids))} distinct), counts total {counted}",
            file=sys.stderr,
        )
        return 1
    print(f"ledger: all {total} verdicts present exactly once, each as the client was told")
    return 0


if __name__ == "__main__":
    sys.exit(main())
