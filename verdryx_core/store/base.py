"""The store interface: what every backend (SQLite, PostgreSQL) keeps and answers.

Callers hold a `Store` and never ask which backend it is. `Store.open(target)` picks the
backend from the target: a `StoreUrl` (postgresql://...) is PostgreSQL, anything else a
SQLite file. See docs/store.md.
"""

from __future__ import annotations

import abc
import importlib
import os
from collections.abc import Iterable, Iterator, Mapping, MutableSequence, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Any, ClassVar, Final, Self

from verdryx_core.runs import Baseline, EvalRun, Score, iso_utc
from verdryx_core.store.db import Database
from verdryx_core.store.rows import StoreRowError
from verdryx_core.store.target import (
    StoreTarget,
    StoreUrl,
    is_store_url,
    parse_store_target,
    redact,
)

__all__ = ["SCHEMA_VERSION", "CacheEntry", "RunSummary", "Store"]

#: Version 2 added the run provenance columns and the `verdryx_meta` marker table.
SCHEMA_VERSION: Final = 8


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheEntry:
    """One remembered answer of the response cache (a model's, or a recorded target's): the
    call's `key`, who answered (`model`), the answer as its dict and what it cost.

    `created_at` (ISO 8601) is set once the store holds it; an answer gathered this session
    has none until `Store.cache_put_many` stamps it. Defined here, not beside the cache in
    `verdryx_core.llm.cache`, because that module reads the store: the store cannot read it
    back without an import cycle.
    """

    key: str
    model: str
    response: dict[str, Any]
    cost_usd: float
    created_at: str | None = None

    def to_builtins(self) -> dict[str, Any]:
        """JSON-ready builtins: what an xdist worker sends its controller."""
        return {
            "key": self.key,
            "model": self.model,
            "response": self.response,
            "cost_usd": self.cost_usd,
            "created_at": self.created_at,
        }

    @classmethod
    def from_builtins(cls, data: Mapping[str, Any]) -> CacheEntry:
        """The entry `to_builtins` gave, after the trip through JSON."""
        created = data.get("created_at")
        return cls(
            key=str(data["key"]),
            model=str(data["model"]),
            response=dict(data["response"]),
            cost_usd=float(data["cost_usd"]),
            created_at=None if created is None else str(created),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSummary:
    """A run's row without its scores: what listings and history need."""

    id: str
    model: str
    judge_model: str | None
    agent_id: str | None
    eval_set_ids: tuple[str, ...]
    started_at: datetime
    finished_at: datetime | None
    complete: bool
    cases: int
    unmeasured: int
    mean_score: float | None
    total_tokens: int
    model_cost_usd: float
    judge_cost_usd: float
    # Provenance (see EvalRun); kept here for run-group listings, not shown by to_dict yet.
    label: str | None = None
    commit: str | None = None
    branch: str | None = None
    ci_url: str | None = None
    run_group: str | None = None
    shard: str | None = None
    partial: bool = False
    target: str | None = None
    target_version: str | None = None
    shard_share: int | None = None
    #: The agent under test per eval set (`EvalRun.set_targets`); None: not recorded.
    set_targets: Mapping[str, str | None] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.id,
            "eval_set_ids": list(self.eval_set_ids),
            "model": self.model,
            "target": self.target,
            "target_version": self.target_version,
            "judge_model": self.judge_model,
            "agent_id": self.agent_id,
            "cases": self.cases,
            "unmeasured": self.unmeasured,
            "mean_score": self.mean_score,
            "started_at": iso_utc(self.started_at),
            "finished_at": iso_utc(self.finished_at) if self.finished_at else None,
            "complete": self.complete,
            "total_tokens": self.total_tokens,
            "model_cost_usd": self.model_cost_usd,
            "judge_cost_usd": self.judge_cost_usd,
        }


#: The backends by the kind of target they open, filled as their modules are imported.
_BACKENDS: dict[str, type[Store]] = {}
#: Where each backend is, imported when a store of its kind is first opened.
_BACKEND_MODULES: Final = {
    "sqlite": "verdryx_core.store.sqlite",
    "postgresql": "verdryx_core.store.postgres",
}


class Store(abc.ABC):
    """Runs, scores, baselines and the model response cache.

    Use as `with Store.open(target) as store:`. Every backend is safe to share between
    threads (the model cache is filled from a pool) and saves a run in one transaction, so a
    run is stored whole or not at all. `path` names the store for messages: a file path, or
    a URL with its password redacted.
    """

    path: str
    #: The connection (verdryx_core.store.db): add-ons keep tables of their own in the store
    #: through it, beside the store's (docs/store.md, "Tables of add-ons").
    db: Database
    #: The kind of target this backend opens ("sqlite", "postgresql"); None for the interface.
    backend: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        kind = cls.__dict__.get("backend")
        if kind is not None:
            _BACKENDS[kind] = cls

    @classmethod
    def open(
        cls, target: StoreTarget | str | os.PathLike[str] = ":memory:", *, read_only: bool = False
    ) -> Store:
        """Open (creating or migrating unless `read_only`) the store at `target`.

        `read_only` is for commands that only read: a missing store is an error instead of a
        new empty one, and a SQLite file in a read-only directory is opened read-only."""
        if isinstance(target, str):
            # The one parser decides the backend (store/target.py): a PostgreSQL URL in any
            # case or with a `+driver`, or a libpq key/value string, is never a file name.
            target = parse_store_target(target)
        if cls is not Store:
            if getattr(cls._open, "__isabstractmethod__", False):
                raise TypeError(f"{cls.__name__} is not a backend: subclass SqliteStore")
            return cls._open(target, read_only=read_only)
        kind = "postgresql" if is_store_url(target) else "sqlite"
        if kind not in _BACKENDS:
            # A backend registers itself as it is imported (`backend = "..."`): by its name,
            # so the interface imports no implementation, and a run imports only the one its
            # store needs.
            importlib.import_module(_BACKEND_MODULES[kind])
        return _BACKENDS[kind]._open(target, read_only=read_only)

    @classmethod
    @abc.abstractmethod
    def _open(cls, target: StoreTarget | str | os.PathLike[str], *, read_only: bool) -> Self:
        """The backend's own open; `Store.open` dispatches here."""

    @abc.abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @abc.abstractmethod
    def batch(self) -> AbstractContextManager[None]:
        """One transaction around several saves (merge): all of them are stored, or none."""

    # -- runs -------------------------------------------------------------------------------

    @abc.abstractmethod
    def save_run(self, run: EvalRun) -> None:
        """Insert or replace a run and all its scores in one transaction."""

    @abc.abstractmethod
    def insert_run(self, run: EvalRun) -> bool:
        """Insert a run and its scores unless a run with its id is stored: then nothing is
        written and False is returned (the caller compares the stored one: merge). Never a
        duplicate-key error when another process inserts the same id at the same moment."""

    @abc.abstractmethod
    def load_run(self, run_id: str) -> EvalRun | None: ...

    @abc.abstractmethod
    def find_run(self, prefix: str) -> EvalRun | None:
        """A run by id or by a unique id prefix (as printed in short form)."""

    @abc.abstractmethod
    def list_runs(
        self,
        *,
        model: str | None = None,
        eval_set_ids: Sequence[str] | None = None,
        agent_id: str | None = None,
        complete_only: bool = False,
        limit: int | None = None,
        before: str | None = None,
        broken: MutableSequence[StoreRowError] | None = None,
    ) -> list[RunSummary]:
        """Runs newest first, filtered; `eval_set_ids` matches the exact set of eval sets.

        A run row that cannot be read back raises its `StoreRowError`; with a `broken` list,
        it is added there instead and the other runs are listed (`verdryx runs`)."""

    @abc.abstractmethod
    def run_id_for(self, prefix: str) -> str | None:
        """The id of the run with this id or unique id prefix, without reading its rows (a
        run whose rows cannot be read can still be named, to repair it)."""

    @abc.abstractmethod
    def repair_run(self, run_id: str) -> list[str] | None:
        """Rewrite the run's rows that cannot be read back (docs/store.md, "Rows that cannot
        be read"), in one transaction; what changed, in words, or None when there is no such
        run. A run whose id, model or start cannot be read raises StoreRowError: it can
        only be removed (`delete_run`)."""

    @abc.abstractmethod
    def delete_run(self, run_id: str) -> bool:
        """Remove a run and its scores in one transaction; False when there was none."""

    @abc.abstractmethod
    def delete_baseline(self, baseline_id: str) -> bool:
        """Remove a baseline and its cases in one transaction; False when there was none."""

    @abc.abstractmethod
    def list_group_runs(self, run_group: str) -> list[RunSummary]:
        """The runs of one run group (the shards of one CI pipeline), oldest first."""

    @abc.abstractmethod
    def run_ids(self) -> list[str]:
        """Every stored run id, in save order."""

    @abc.abstractmethod
    def case_scores(self, run_ids: Sequence[str]) -> list[Score]:
        """Scores of many runs in one query (history and reports)."""

    @abc.abstractmethod
    def score_records(self) -> list[dict[str, Any]]:
        """One dict per measured case score: agent_id ("" when none), score, last_ts_millis,
        run_id, eval_set_id, case_id. The SLO quality_floor indicator joins these."""

    # -- baselines --------------------------------------------------------------------------

    @abc.abstractmethod
    def save_baseline(self, baseline: Baseline) -> None: ...

    @abc.abstractmethod
    def insert_baseline(self, baseline: Baseline) -> bool:
        """As `insert_run`, for a baseline and its cases."""

    @abc.abstractmethod
    def get_baseline(self, id_or_label: str, *, cases: bool = True) -> Baseline | None:
        """A baseline by id, else the newest with that label; `cases=False`: without its
        cases (when only its header is needed)."""

    @abc.abstractmethod
    def list_baselines(self) -> list[tuple[str, str, float, datetime]]:
        """(id, label, mean, created_at), newest first."""

    # -- model response cache ---------------------------------------------------------------

    @abc.abstractmethod
    def cache_get_many(self, keys: Iterable[str]) -> dict[str, tuple[dict[str, Any], float]]:
        """Cached responses for the keys that have one: key -> (response, cost_usd)."""

    @abc.abstractmethod
    def cache_put_many(self, entries: Iterable[CacheEntry]) -> None:
        """Store new entries in one transaction, stamped now (their `created_at` is ignored)."""

    @abc.abstractmethod
    def cache_entries(self) -> Iterator[CacheEntry]:
        """Every cache entry with its creation time, by key (merge)."""

    @abc.abstractmethod
    def cache_import(self, entries: Iterable[CacheEntry]) -> None:
        """Store entries keeping their creation time (merge); a key already stored keeps its
        answer."""


def describe(target: StoreTarget | str | os.PathLike[str]) -> str:
    """How messages name a store target (a URL without its password)."""
    if isinstance(target, StoreUrl):
        return str(target)
    if is_store_url(target):
        return str(StoreUrl(str(target)))
    return redact(os.fspath(target))  # a path is shown as it is; a stray password is not
