"""What one pytest session evaluates with, from when verdryx turns on to the end: its
settings, the core `Evaluation` (run id, start, scorers, call tally), the store, the baseline
it is gated against, and the state merged across xdist workers. One object, held by the
session's plugin object and reached from `config.stash` through its `ItemScoring`
(`scoring_of`), so the items, the fixture, the prefetched calls and the end of the session
read the same things.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_verdryx.options import Settings, eval_settings
from pytest_verdryx.run_folder import HANDOFF_KEY
from pytest_verdryx.state import SessionState
from pytest_verdryx.xdist import PAYLOAD_KEY
from verdryx_core.conclusion.policy import MissingBaseline, Standing, standing
from verdryx_core.evaluation import Evaluation
from verdryx_core.hooks import AddonSession
from verdryx_core.runs import Baseline, BaselineCase, Score
from verdryx_core.store import StoreTarget, resolve_store_path

if TYPE_CHECKING:
    from verdryx_core.evaluation.allocation import Allocation
    from verdryx_core.store import Store
    from verdryx_core.targets.handoff import TargetHandoff

__all__ = [
    "SessionContext",
    "StoreHandle",
    "new_context",
    "session_store_path",
]


def session_store_path(
    flag: str | None, ini: str | None, *, rootdir: Path, inidir: Path | None
) -> StoreTarget:
    """Where a session's store is (docs/options.md): a relative `--verdryx-db` and the default
    `verdryx.db` live in the rootdir, a relative ini value beside the ini file; never in
    whatever folder pytest was started from. $VERDRYX_DB is taken verbatim, as the CLI does."""
    if flag:
        target, base = resolve_store_path(flag), rootdir
    elif ini:
        target, base = resolve_store_path(ini), inidir or rootdir
    else:
        if os.environ.get("VERDRYX_DB"):
            return resolve_store_path(None)
        target, base = resolve_store_path(None), rootdir
    if isinstance(target, Path) and not target.is_absolute():
        return base / target
    return target


class StoreHandle:
    """The session's store, opened on first use and closed once (only the controller
    writes)."""

    def __init__(self, path: StoreTarget) -> None:
        self.path = path
        self._store: Store | None = None

    def exists(self) -> bool:
        """Whether the store file exists (looking must not create it)."""
        return self.path.exists()

    def open(self) -> Store:
        if self._store is None:
            # Imported with the first store opened: a session that stores nothing and calls
            # no cached model never imports a backend.
            from verdryx_core.store import Store

            self._store = Store.open(self.path)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


@dataclass(slots=True, kw_only=True)
class SessionContext:
    config: pytest.Config
    settings: Settings
    evaluation: Evaluation
    store: StoreHandle
    state: SessionState
    #: True on an xdist worker: it scores its items and sends its state to the controller,
    #: which alone stores, gates and exports.
    is_worker: bool = False
    baseline: Baseline | None = None
    #: When the ini's `verdryx_baseline` names no baseline: refused at the end of a session
    #: with eval cases, unless it saves that label (docs/options.md).
    missing_baseline: MissingBaseline | None = None
    #: Warnings found at configure time, for the summary.
    messages: list[str] = field(default_factory=list)
    #: What the add-ons see of this run, from configure to its end (verdryx_core.hooks).
    addons: AddonSession = field(default_factory=lambda: AddonSession(options={}))
    #: Samples per case under `--verdryx-repeat=auto` (None: uniform repeats).
    allocation: Allocation | None = None
    _baseline_cases: dict[str, BaselineCase] = field(default_factory=dict)

    @property
    def run_id(self) -> str:
        return self.evaluation.run_id

    @property
    def baseline_name(self) -> str:
        baseline = self.baseline
        return "" if baseline is None else baseline.label or baseline.id

    def gate_against(self, baseline: Baseline) -> None:
        self.baseline = baseline
        self._baseline_cases = baseline.case_map()

    def baseline_case(self, key: str) -> BaselineCase | None:
        return self._baseline_cases.get(key)

    def standing(self, score: Score) -> Standing:
        """What this score means for the session (`verdryx_core.conclusion.standing`, the rule
        the end of the session applies too): `failed` fails it; `excused` (below the bar in
        the baseline too) and `dropped` (the verdict decides) are reported."""
        return standing(
            score,
            self._baseline_cases.get(score.key),
            fail_on=self.settings.fail_on,
            gated=self.baseline is not None,
        )


def new_context(
    config: pytest.Config,
    settings: Settings,
    state: SessionState,
    *,
    run_id: str,
    started_at: datetime,
    answers_prefetched: bool = False,
) -> SessionContext:
    """The context of a session verdryx turns on in, around the state it kept so far.
    `answers_prefetched`: a worker whose controller calls the models for it."""
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    rootdir = Path(config.rootpath)
    inidir = config.inipath.parent if config.inipath else None
    # A worker takes the controller's baseline (and, through the entry point, its run id and
    # start): one run, however many processes score it.
    given = (workerinput or {}).get(PAYLOAD_KEY) or {}
    store = StoreHandle(
        session_store_path(
            config.getoption("verdryx_db"),
            config.getini("verdryx_db"),
            rootdir=rootdir,
            inidir=inidir,
        )
    )
    evaluation = Evaluation(
        eval_settings(
            settings,
            inidir or rootdir,
            rootdir,
            answers_prefetched=answers_prefetched,
        ),
        # The evaluation opens the store only when a call needs the response cache.
        store=store.open,
        run_id=run_id,
        started_at=started_at,
        tally=state.calls,
        # The target outcomes the controller called for this run, if it called any.
        target_handoff=_handoff(given.get(HANDOFF_KEY)),
    )
    context = SessionContext(
        config=config,
        settings=settings,
        evaluation=evaluation,
        store=store,
        state=state,
        is_worker=workerinput is not None,
        # The environment is read once, when verdryx turns on (docs/events-and-otlp.md).
        addons=AddonSession(
            options=settings.addons,
            agent_id=settings.agent_id,
            exporting=workerinput is None,
            environ=dict(os.environ),
        ),
    )
    if given.get("baseline"):
        context.gate_against(Baseline.from_dict(given["baseline"]))
    return context


def _handoff(path: str | None) -> TargetHandoff | None:
    """The controller's target outcomes, read on a worker (a run without targets has none)."""
    if not path:
        return None
    from verdryx_core.targets.handoff import TargetHandoff

    return TargetHandoff(path, writing=False)
