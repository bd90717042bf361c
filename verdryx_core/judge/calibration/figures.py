"""The judge's agreement figures kept in the store, one row per judge fingerprint and run,
so a later run can tell whether the same judge got worse (docs/calibrating-the-judge.md,
"Judge drift").

The rows are the calibration's own table, `judge_agreement`, created the first time a
figure is saved (reading a store without it finds none and creates nothing). A figure is
looked up by the full fingerprint (model, rubric, prompt template version): a figure of
another judge is never reused.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from verdryx_core.judge.calibration.agreement import Agreement
from verdryx_core.judge.calibration.samples import JudgeFingerprint
from verdryx_core.runs import iso_utc
from verdryx_core.store.base import Store
from verdryx_core.store.db import marks

__all__ = ["JudgeFigure", "judge_drift", "latest_figure", "save_figures"]

_KEYS: Final = (
    "fingerprint",
    "model",
    "rubric",
    "template",
    "run_id",
    "n",
    "kappa",
    "kappa_low",
    "kappa_high",
    "tpr",
    "tnr",
    "created_at",
)

#: Advisory lock key for creating the table (other than the store's and the add-ons').
_CREATE_LOCK: Final = 0x76726A61  # "vrja"

_COLUMNS: Final = """
    fingerprint     TEXT NOT NULL,          -- model|rubric|template
    model           TEXT NOT NULL,
    rubric          TEXT NOT NULL,          -- sha256 of the rubric, 12 hex digits
    template        TEXT NOT NULL,          -- the judge prompt template version
    run_id          TEXT NOT NULL,
    n               INTEGER NOT NULL,       -- labelled samples
    kappa           REAL,                   -- NULL when undefined (one class only)
    kappa_low       REAL,
    kappa_high      REAL,
    tpr             REAL,
    tnr             REAL,
    created_at      TEXT NOT NULL,
    PRIMARY KEY (fingerprint, run_id)
"""
_TABLE: Final = f"CREATE TABLE IF NOT EXISTS judge_agreement ({_COLUMNS});"


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgeFigure:
    """One stored figure of one judge."""

    fingerprint: JudgeFingerprint
    run_id: str
    n: int
    kappa: float | None
    kappa_ci: tuple[float, float] | None
    tpr: float | None
    tnr: float | None
    created_at: str


def save_figures(store: Store, run_id: str, figures: Agreement) -> None:
    """Keep each judge's figure of run `run_id` (a second save of the run replaces it)."""
    now = iso_utc(datetime.now(UTC))
    rows = []
    for fingerprint, figure in figures.judges:
        ci = figure.kappa_ci
        rows.append(
            (
                fingerprint.key,
                fingerprint.model,
                fingerprint.rubric,
                fingerprint.template,
                run_id,
                figure.n,
                figure.kappa,
                ci[0] if ci else None,
                ci[1] if ci else None,
                figure.tpr,
                figure.tnr,
                now,
            )
        )
    if not rows:
        return
    db = store.db
    with db.errors("save the judge's agreement"), db.transaction():
        if not db.has_table("judge_agreement"):
            db.create_tables(_TABLE, lock_key=_CREATE_LOCK)
        db.executemany(
            "DELETE FROM judge_agreement WHERE fingerprint = ? AND run_id = ?",
            [(row[0], row[4]) for row in rows],
        )
        db.executemany(
            f"INSERT INTO judge_agreement ({', '.join(_KEYS)}) VALUES ({marks(len(_KEYS))})",
            rows,
        )


def latest_figure(
    store: Store, fingerprint: JudgeFingerprint, *, other_than: str | None = None
) -> JudgeFigure | None:
    """The newest stored figure of exactly this judge, of a run other than `other_than`."""
    sql = f"SELECT {', '.join(_KEYS)} FROM judge_agreement WHERE fingerprint = ?"
    params: tuple[Any, ...] = (fingerprint.key,)
    if other_than is not None:
        sql += " AND run_id <> ?"
        params += (other_than,)
    sql += " ORDER BY created_at DESC LIMIT 1"
    db = store.db
    with db.errors("read the judge's agreement"), db.lock:
        if not db.has_table("judge_agreement"):
            return None
        rows = db.rows(sql, params)
    if not rows:
        return None
    row = dict(zip(_KEYS, rows[0], strict=True))
    low, high = row["kappa_low"], row["kappa_high"]
    return JudgeFigure(
        fingerprint=fingerprint,
        run_id=row["run_id"],
        n=int(row["n"]),
        kappa=row["kappa"],
        kappa_ci=(float(low), float(high)) if low is not None and high is not None else None,
        tpr=row["tpr"],
        tnr=row["tnr"],
        created_at=row["created_at"],
    )


def judge_drift(current: Agreement, stored: JudgeFigure) -> str | None:
    """Words for a significant drop of kappa below the stored figure of the same judge: the
    whole 95% interval of the current kappa lies below it. None when there is none."""
    if current.kappa is None or stored.kappa is None or current.kappa_ci is None:
        return None
    if current.kappa_ci[1] >= stored.kappa:
        return None
    fingerprint = stored.fingerprint
    return (
        f"judge {fingerprint.model} (rubric {fingerprint.rubric}, template "
        f"{fingerprint.template}) agrees less with the labels: kappa {current.kappa:.2f} "
        f"[{current.kappa_ci[0]:.2f}, {current.kappa_ci[1]:.2f}] on {current.n} labelled "
        f"samples, against {stored.kappa:.2f} stored from run {stored.run_id[:8]}"
    )
