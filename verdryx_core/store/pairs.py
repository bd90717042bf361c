"""A run's scores beside a baseline's cases, read as arrays in one SQLite join.

What the gate needs of 50,000 cases a side is four numbers a case: the baseline case it
pairs with, the two scores, and whether the case was edited since. Read that way, in
SQLite's own join, it costs a small part of building every score and baseline case as
objects (`load_run`, `get_baseline`), which also decode the free text, checks and costs
the gate never reads (docs/statistics.md, "Reproducibility and speed").

Only plain rows are read so: text ids with no `:` in the eval set id (the key `set::case`
is then the pair of columns), a score in [0, 1] or NULL with an unmeasured reason, a text
fingerprint, no samples, no cluster. A run or baseline with any other row in those
columns (a broken one, a sampled or clustered case) gets None, and the caller reads it as
objects, which names a broken row by run, case and column. The columns the gate does not
read (token counts, costs, `passed`, free text, per-check results) are not checked here:
`verdryx show`, `runs` and `report` name a broken one (docs/store.md).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from verdryx_core.cases import case_key
from verdryx_core.store.db import Database, marks

if TYPE_CHECKING:
    import numpy as np

__all__ = ["ScorePairs", "read_score_pairs"]

#: A score row the gate reads as it is: case id, score or reason, fingerprint; no samples,
#: no cluster (every row it accepts, `rows.score_problem` accepts in these columns too).
#: The eval set ids are checked once each, by `read_score_pairs`.
_PLAIN_SCORE: Final = """(
    typeof(s.case_id) = 'text' AND typeof(s.fingerprint) = 'text'
    AND ((typeof(s.value) = 'real' AND s.value BETWEEN 0 AND 1 AND s.unmeasured IS NULL)
         OR (s.value IS NULL AND typeof(s.unmeasured) = 'text'))
    AND s.samples IS NULL AND s.cluster IS NULL)"""
#: A baseline case the gate reads as it is: a text case id, a score in [0, 1], a text
#: fingerprint, no samples, no cluster (its eval set id is checked once, with the others).
_PLAIN_CASE: Final = """(
    typeof(b.case_id) = 'text' AND typeof(b.value) IN ('real', 'integer')
    AND b.value BETWEEN 0 AND 1 AND typeof(b.fingerprint) = 'text'
    AND b.samples IS NULL AND b.cluster IS NULL)"""

#: One row per score of the run, in collection order: which baseline case it pairs with,
#: and the two scores. The first column is NULL when the baseline has no case of the same
#: eval set and case id, the case's rowid when both rows are plain, minus it when the case
#: was edited since the baseline (both fingerprints set and different), 0 when a row is not
#: plain. (The casts only keep a row that is not plain, whose scores are never used, from
#: failing to read.) Three numbers a row: the fewer values, the cheaper the read.
_PAIRS: Final = f"""
SELECT
    CASE WHEN NOT {_PLAIN_SCORE} THEN 0
         WHEN b.rowid IS NULL THEN NULL
         WHEN NOT {_PLAIN_CASE} THEN 0
         WHEN b.fingerprint <> '' AND s.fingerprint <> '' AND b.fingerprint <> s.fingerprint
         THEN -b.rowid
         ELSE b.rowid END,
    CAST(s.value AS REAL), CAST(b.value AS REAL)
FROM scores s LEFT JOIN baseline_cases b
    ON b.baseline_id = ? AND b.eval_set_id = s.eval_set_id AND b.case_id = s.case_id
WHERE s.run_id = ?
ORDER BY s.seq"""


@dataclass(frozen=True, slots=True, kw_only=True)
class ScorePairs:
    """Each score of a run (collection order) beside the baseline case of its key.

    `case_row` is the baseline case's position in save order (-1: the baseline has no such
    case), `edited` whether the case changed since (fingerprints), `current` the score
    (NaN: unmeasured), `baseline` the case's score (NaN: none). `eval_sets` are the run's
    and its scores' eval sets, `cases_in_sets` the baseline's cases of them.
    """

    case_row: np.ndarray
    edited: np.ndarray
    current: np.ndarray
    baseline: np.ndarray
    eval_sets: tuple[str, ...]
    cases_in_sets: int


def read_score_pairs(
    db: Database, run_id: str, baseline_id: str, eval_sets: Collection[str]
) -> ScorePairs | None:
    """The run's scores beside baseline `baseline_id`'s cases (`eval_sets`: the run's);
    None when some row the gate reads is not plain (see the module docstring) or a case
    key is scored twice."""
    import numpy as np

    scored = [
        row[0]
        for row in db.rows("SELECT DISTINCT eval_set_id FROM scores WHERE run_id = ?", (run_id,))
    ]
    # `a::b` + `c` and `a` + `b::c` are one key `a::b::c`: only the objects compare them so
    # (and name a set id that is no text).
    if not all(
        isinstance(name, str) and ":" not in name
        for name in (*scored, *baseline_eval_sets(db, baseline_id))
    ):
        return None
    sets = sorted(set(eval_sets) | set(scored))
    # Counted on the baseline's key index, without reading its rows.
    counts = db.rows(
        "SELECT count(*) FROM baseline_cases "
        f"WHERE baseline_id = ? AND eval_set_id IN ({marks(len(sets))})",
        (baseline_id, *sets),
    )
    cases_in_sets = counts[0][0]
    rows = db.rows(_PAIRS, (baseline_id, run_id))
    table = np.array(rows, dtype=np.float64).reshape(len(rows), 3)
    reference = table[:, 0]
    if (reference == 0).any():
        return None
    has_case = ~np.isnan(reference)
    case_row = np.where(has_case, np.abs(np.nan_to_num(reference)), -1).astype(np.int64)
    paired = np.sort(case_row[has_case])
    if paired.size and (paired[1:] == paired[:-1]).any():
        return None  # a case scored twice: its scores pool, as objects pool them
    return ScorePairs(
        case_row=case_row,
        edited=np.nan_to_num(reference) < 0,
        current=table[:, 1],
        baseline=table[:, 2],
        eval_sets=tuple(sets),
        cases_in_sets=int(cases_in_sets),
    )


def score_keys(db: Database, run_id: str, positions: Sequence[int]) -> dict[int, str]:
    """`set::case` of the run's scores at these positions in collection order."""
    wanted = set(positions)
    if not wanted:
        return {}
    rows: list[Any] = db.rows(
        "SELECT eval_set_id, case_id FROM scores WHERE run_id = ? ORDER BY seq", (run_id,)
    )
    return {
        position: case_key(set_id, case)
        for position, (set_id, case) in enumerate(rows)
        if position in wanted
    }


def baseline_keys(
    db: Database, baseline_id: str, eval_sets: Collection[str]
) -> list[tuple[int, str]]:
    """(save position, `set::case`) of the baseline's cases of `eval_sets`, in save order."""
    sets = sorted(eval_sets)
    if not sets:
        return []
    rows: list[Any] = db.rows(
        "SELECT rowid, eval_set_id, case_id FROM baseline_cases "
        f"WHERE baseline_id = ? AND eval_set_id IN ({marks(len(sets))}) ORDER BY rowid",
        (baseline_id, *sets),
    )
    return [(rowid, case_key(set_id, case)) for rowid, set_id, case in rows]


def baseline_eval_sets(db: Database, baseline_id: str) -> set[str]:
    """The eval sets of the baseline's cases."""
    rows: list[Any] = db.rows(
        "SELECT DISTINCT eval_set_id FROM baseline_cases WHERE baseline_id = ?", (baseline_id,)
    )
    return {row[0] for row in rows}
