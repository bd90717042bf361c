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
#: A baseline case the gate reads as it is: text ids, no `:` in the eval set id, a score in
#: [0, 1], a text fingerprint, no samples, no cluster. Every case is checked, not only the
#: matched ones, as `get_baseline` checks them all.
_PLAIN_CASE: Final = """(
    typeof(eval_set_id) = 'text' AND instr(eval_set_id, ':') = 0 AND typeof(case_id) = 'text'
    AND typeof(value) IN ('real', 'integer') AND value BETWEEN 0 AND 1
    AND typeof(fingerprint) = 'text' AND samples IS NULL AND cluster IS NULL)"""

#: One row per score of the run, in collection order: the baseline case of the same eval
#: set and case id (its rowid, NULL: none), the two scores, and a code: 0 plain, 1 edited
#: since the baseline (both fingerprints set and different), 2 not plain. (The casts only
#: keep a row that is not plain, whose scores are never used, from failing to read.)
_PAIRS: Final = f"""
SELECT s.seq, b.rowid, CAST(s.value AS REAL), CAST(b.value AS REAL),
    CASE WHEN NOT {_PLAIN_SCORE} THEN 2
         WHEN b.rowid IS NULL THEN 0
         WHEN b.fingerprint <> '' AND s.fingerprint <> '' AND b.fingerprint <> s.fingerprint
         THEN 1
         ELSE 0 END
FROM scores s LEFT JOIN baseline_cases b
    ON b.baseline_id = ? AND b.eval_set_id = s.eval_set_id AND b.case_id = s.case_id
WHERE s.run_id = ?
ORDER BY s.seq"""

#: Codes of `_PAIRS`.
PLAIN: Final = 0
EDITED: Final = 1
_NOT_PLAIN: Final = 2


@dataclass(frozen=True, slots=True, kw_only=True)
class ScorePairs:
    """Each score of a run (collection order) beside the baseline case of its key.

    `case_row` is the baseline case's position in save order (-1: the baseline has no such
    case), `current` the score (NaN: unmeasured), `baseline` the case's score (NaN: none),
    `code` `PLAIN` or `EDITED`. `eval_sets` are the run's and its scores' eval sets,
    `cases_in_sets` the baseline's cases of them.
    """

    seq: np.ndarray
    case_row: np.ndarray
    current: np.ndarray
    baseline: np.ndarray
    code: np.ndarray
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
    # `a::b` + `c` and `a` + `b::c` are one key `a::b::c`: only the objects compare them so.
    if not all(isinstance(name, str) and ":" not in name for name in scored):
        return None
    sets = sorted(set(eval_sets) | set(scored))
    in_sets = f"eval_set_id IN ({marks(len(sets))})" if sets else "0"
    counts = db.rows(
        f"SELECT coalesce(sum({in_sets}), 0), coalesce(sum(NOT {_PLAIN_CASE}), 0) "
        "FROM baseline_cases WHERE baseline_id = ?",
        (*sets, baseline_id),
    )
    cases_in_sets, not_plain = counts[0]
    if not_plain:
        return None
    rows = db.rows(_PAIRS, (baseline_id, run_id))
    table = np.array(rows, dtype=np.float64).reshape(len(rows), 5)
    code = table[:, 4].astype(np.int8)
    if (code == _NOT_PLAIN).any():
        return None
    case_row = np.nan_to_num(table[:, 1], nan=-1.0).astype(np.int64)
    paired = np.sort(case_row[case_row >= 0])
    if paired.size and (paired[1:] == paired[:-1]).any():
        return None  # a case scored twice: its scores pool, as objects pool them
    return ScorePairs(
        seq=table[:, 0].astype(np.int64),
        case_row=case_row,
        current=table[:, 2],
        baseline=table[:, 3],
        code=code,
        eval_sets=tuple(sets),
        cases_in_sets=int(cases_in_sets),
    )


def score_keys(db: Database, run_id: str, seqs: Sequence[int]) -> dict[int, str]:
    """`set::case` of the run's scores at these positions."""
    wanted = set(seqs)
    if not wanted:
        return {}
    rows: list[Any] = db.rows(
        "SELECT seq, eval_set_id, case_id FROM scores WHERE run_id = ?", (run_id,)
    )
    return {seq: case_key(set_id, case) for seq, set_id, case in rows if seq in wanted}


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
