"""The real verification service for tests: uvicorn serving the real app on 127.0.0.1, on a
port the OS picks, over a real store (a SQLite file, or a fresh PostgreSQL schema when
VERDRYX_TEST_POSTGRES_URL is set); keys made the way `verdryx keys` makes them."""

from __future__ import annotations

import json
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn

from verdryx_core.addons.contracts import Contract, collect_evidence, contract_from_data
from verdryx_core.addons.service import ServiceStorage, create_key, open_service_storage
from verdryx_core.addons.service.app import create_app
from verdryx_core.addons.service.http_server import server_config
from verdryx_core.addons.service.server_limits import ServerLimits
from verdryx_core.store import StoreTarget, StoreUrl

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "contracts"


@dataclass
class RunningService:
    url: str
    db: StoreTarget
    storage: ServiceStorage

    def new_key(self, name: str = "tenant") -> str:
        return create_key(self.storage, name)[1]

    @property
    def db_arg(self) -> str:
        """The store as `--db` takes it (a URL with its password, if it has one)."""
        return self.db.url if isinstance(self.db, StoreUrl) else str(self.db)

    def stored_bytes(self) -> bytes:
        """Everything the store keeps: the SQLite file and its WAL, or every row of every
        table in the PostgreSQL schema, as text."""
        if isinstance(self.db, Path):
            return self.db.read_bytes() + Path(f"{self.db}-wal").read_bytes()
        import psycopg

        with psycopg.connect(self.db.url, autocommit=True) as connection:
            tables = connection.execute(
                "SELECT table_name::text FROM information_schema.tables "
                "WHERE table_schema = current_schema()"
            ).fetchall()
            return b"".join(
                repr(connection.execute(f'SELECT * FROM "{name}"').fetchall()).encode()
                for (name,) in tables
            )


@contextmanager
def running_service(
    db: StoreTarget, *, limits: ServerLimits | None = None, **options: Any
) -> Iterator[RunningService]:
    """The app behind the server `verdryx serve` runs (its guarded protocol and `limits`)."""
    storage = open_service_storage(db)
    app = create_app(storage, **options)
    config = server_config(
        app,
        host="127.0.0.1",
        port=0,
        limits=limits or ServerLimits(),
        log_level="warning",
        access_log=False,
        lifespan="off",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield RunningService(url=f"http://127.0.0.1:{port}", db=db, storage=storage)
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        storage.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def example_contract() -> Contract:
    data = json.loads((EXAMPLE / "weekly-report.contract.json").read_text(encoding="utf-8"))
    return contract_from_data(data)


def example_workspace(tmp_path: Path) -> Path:
    """A copy of the worked example's workspace, free to edit."""
    target = tmp_path / "workspace"
    shutil.copytree(EXAMPLE / "workspace", target)
    return target


def example_bundle(workspace: Path | None = None) -> dict[str, Any]:
    return collect_evidence(example_contract(), workspace or EXAMPLE / "workspace")
