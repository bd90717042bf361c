"""Store targets for tests: a SQLite file in tmp_path, or a fresh PostgreSQL schema.

PostgreSQL tests need `VERDRYX_TEST_POSTGRES_URL` (e.g. from `scripts/throwaway_postgres.sh`,
which `.ci/run` starts) and skip only when it is unset. Each one gets its own schema, created
before and dropped after, so tests are independent, also under `-n 2`.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from verdryx_core.store import StoreTarget, StoreUrl

ENV: str = "VERDRYX_TEST_POSTGRES_URL"
BACKENDS = ["sqlite", "postgres"]


def postgres_url() -> str | None:
    return os.environ.get(ENV) or None


def needs_postgres() -> str:
    url = postgres_url()
    if url is None:
        pytest.skip(f"{ENV} is unset: no PostgreSQL server to test against")
    return url


@contextmanager
def fresh_schema(url: str) -> Iterator[StoreUrl]:
    """A new empty schema in the test database; the store URL selects it via search_path."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{name}"')
    try:
        yield StoreUrl(url).with_query(f"options=-csearch_path%3D{name}")
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA "{name}" CASCADE')


@contextmanager
def store_target(backend: str, directory: Path, name: str = "v.db") -> Iterator[StoreTarget]:
    """A target of `backend` that holds no store yet."""
    if backend == "sqlite":
        yield directory / name
        return
    with fresh_schema(needs_postgres()) as url:
        yield url


def table_count(url: StoreUrl) -> int:
    """Tables in the URL's schema (for "left nothing behind" checks)."""
    import psycopg

    with psycopg.connect(url.url, autocommit=True) as connection:
        row = connection.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()"
        ).fetchone()
    assert row is not None
    return int(row[0])
