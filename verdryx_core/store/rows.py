"""What a stored row may hold, checked as it is read back: a row out of range is one
`StoreRowError` naming the run, the case, the column and the command that repairs it, never
a traceback (docs/store.md, "Rows that cannot be read").

A store is a file or a database other programs can write: an older verdryx, a script, a
merge from a damaged copy, SQLite's loose typing (a REAL column keeps the text 'abc'), a NaN
that SQLite stores as NULL. Each column is checked on its own, so the message names the one
that is wrong; `repaired_score` and `repaired_run` are what `verdryx repair` writes instead
(an unreadable score becomes unmeasured, a run's totals are recomputed from its scores).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from verdryx_core.errors import StoreError
from verdryx_core.limits import MAX_TOTAL_COST_USD, MAX_TOTAL_TOKENS, cost_problem, token_problem
from verdryx_core.runs import CheckResult, set_targets_problem
from verdryx_core.untrusted.json_input import MAX_DEPTH, JSONDepthError, parse_json

__all__ = [
    "RUN_FIELDS",
    "SCORE_FIELDS",
    "StoreRowError",
    "checks_from_text",
    "checks_text",
    "essential",
    "passes_from_text",
    "passes_problem",
    "passes_text",
    "repair_command",
    "repaired_run",
    "repaired_score",
    "run_problem",
    "samples_problem",
    "score_problem",
    "set_targets_column_problem",
    "set_targets_from_text",
    "set_targets_text",
    "stored_json",
    "unit_problem",
]

#: The columns of `_sql.RUN_COLUMNS` and `_sql.SCORE_COLUMNS`, in order.
RUN_FIELDS: Final = (
    "id",
    "model",
    "judge_model",
    "agent_id",
    "eval_set_ids",
    "started_at",
    "finished_at",
    "complete",
    "plugin_version",
    "cases",
    "unmeasured",
    "mean_score",
    "total_tokens",
    "model_cost_usd",
    "judge_cost_usd",
    "label",
    "vcs_commit",
    "vcs_branch",
    "ci_url",
    "run_group",
    "shard",
    "is_partial",
    "target",
    "target_version",
    "shard_share",
    "set_targets",
)
SCORE_FIELDS: Final = (
    "run_id",
    "seq",
    "eval_set_id",
    "case_id",
    "value",
    "unmeasured",
    "grader",
    "tokens",
    "cost_usd",
    "judge_cost_usd",
    "fingerprint",
    "passed",
    "samples",
    "output",
    "expected",
    "reason",
    "checks",
    "cluster",
    "failed_by_output",
    "passes",
)

_RUN_TEXT: Final = ("judge_model", "agent_id", "label", "vcs_commit", "vcs_branch", "ci_url")
_RUN_TEXT_MORE: Final = ("run_group", "shard", "target", "target_version")
_FLAGS: Final = ("complete", "is_partial")
#: Run columns `verdryx repair` cannot rebuild: without them the run is not a run.
_ESSENTIAL: Final = ("id", "model", "started_at")


class StoreRowError(StoreError):
    """A stored row holds a value verdryx cannot read back; the message names the store, the
    run (or baseline), the case, the column, and the command that repairs it."""

    def __init__(
        self,
        store: str,
        *,
        run_id: str | None = None,
        baseline: str | None = None,
        case: str | None = None,
        column: str,
        problem: str,
        repair: str,
    ) -> None:
        self.store, self.run_id, self.baseline = store, run_id, baseline
        self.case, self.column, self.problem = case, column, problem
        where = [store]
        if run_id is not None:
            where.append(f"run {run_id}")
        if baseline is not None:
            where.append(f"baseline {baseline}")
        if case is not None:
            where.append(f"case {case}")
        super().__init__(f"{': '.join(where)}: column {column} {problem}; {repair}")


def repair_command(
    store: str, *, run_id: str | None = None, baseline: str | None = None, delete: bool = False
) -> str:
    """The words and the command that repair a broken row, as the message ends."""
    db = f" --db {_quoted(store)}"
    if baseline is not None:
        return (
            f"remove it with `verdryx repair --baseline {_quoted(baseline)}{db}` and save it "
            "again with `verdryx baseline RUN_ID --label LABEL`"
        )
    if delete:
        return f"remove the run with `verdryx repair {_quoted(run_id or '')} --delete{db}`"
    return f"repair it with `verdryx repair {_quoted(run_id or '')}{db}`"


def _quoted(text: str) -> str:
    """A shell word: plain ids and paths as they are, anything else in single quotes."""
    if text and all(ch.isalnum() or ch in "-_./:@=+%" for ch in text):
        return text
    return "'" + text.replace("'", "'\"'\"'") + "'"


def _shown(value: object) -> str:
    text = repr(bytes(value) if isinstance(value, memoryview) else value)
    return text if len(text) <= 60 else text[:57] + "..."


def _holds(value: object, expected: str) -> str:
    if value is None:
        return f"is NULL, expected {expected}"
    return f"holds {_shown(value)}, expected {expected}"


def unit_problem(value: object) -> str | None:
    """Why `value` is not a score in [0, 1]; None when it is one."""
    if (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0.0 <= value <= 1.0
    ):
        return None
    return _holds(value, "a score in [0, 1]")


def _text_problem(value: object, *, nullable: bool) -> str | None:
    if value is None:
        return None if nullable else _holds(value, "text")
    if isinstance(value, str):
        return None
    return _holds(value, "text")


def _free_text_problem(value: object) -> str | None:
    """Free text (output, expected, reason): text, or the UTF-8 bytes PostgreSQL keeps it as."""
    if value is None or isinstance(value, str):
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        try:
            bytes(value).decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            return "holds bytes that are not UTF-8, expected text"
        return None
    return _holds(value, "text")


def _count_problem(value: object, *, limit: int) -> str | None:
    problem = token_problem(value, limit=limit)
    return None if problem is None else _holds(value, f"a whole number from 0 to {limit:,}")


def _cost_column_problem(value: object) -> str | None:
    problem = cost_problem(value, limit=MAX_TOTAL_COST_USD)
    return None if problem is None else _holds(value, f"dollars from 0 to {MAX_TOTAL_COST_USD:,}")


def _flag_problem(value: object, *, nullable: bool = False) -> str | None:
    if value is None and nullable:
        return None
    if value in (0, 1) and not isinstance(value, float | str):
        return None
    return _holds(value, "0 or 1")


def _time_problem(value: object, *, nullable: bool) -> str | None:
    if value is None:
        return None if nullable else _holds(value, "an ISO-8601 time")
    if isinstance(value, str):
        try:
            datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            return None
    return _holds(value, "an ISO-8601 time")


def checks_text(checks: Sequence[CheckResult]) -> str | None:
    """A multi-check case's checks as the `scores.checks` column keeps them: a JSON array
    (ASCII, so a NUL in a reason is an escape, never a character TEXT cannot hold)."""
    if not checks:
        return None
    return json.dumps([check.to_dict() for check in checks], allow_nan=False)


def checks_from_text(value: str | None) -> tuple[CheckResult, ...]:
    """The column read back (already checked by `_checks_problem`)."""
    if not value:
        return ()
    return tuple(CheckResult.from_dict(item) for item in stored_json(value))


def stored_json(text: str) -> Any:
    """A JSON column read back (`scores.checks`, `scores.samples`, `runs.eval_set_ids`, a
    cached answer), with the bound every file verdryx reads has (`parse_json`): another
    program may have stored `[` 50,000 times, which `json.loads` meets with a RecursionError.
    Raises ValueError (`JSONDepthError` past `MAX_DEPTH` levels)."""
    return parse_json(text)


def _json_column(value: object, expected: str) -> tuple[Any, str | None]:
    """A JSON text column parsed, or None and why it cannot be (in a problem's words)."""
    if not isinstance(value, str):
        return None, _holds(value, expected)
    try:
        return stored_json(value), None
    except JSONDepthError:
        return None, f"holds JSON nested deeper than {MAX_DEPTH} levels, expected {expected}"
    except ValueError:
        return None, _holds(value, expected)


def set_targets_text(value: Mapping[str, str | None] | None) -> str | None:
    """A run's (or baseline's) targets per eval set as the `set_targets` column keeps them: a
    JSON object, NULL when they were not recorded."""
    return None if value is None else json.dumps(dict(value), sort_keys=True)


def set_targets_column_problem(value: object) -> str | None:
    """Why a stored `set_targets` column cannot be read back (None: it can)."""
    if value is None:
        return None
    expected = "a JSON object of eval set id -> target or null"
    parsed, problem = _json_column(value, expected)
    if problem is not None:
        return problem
    if parsed is None or set_targets_problem(parsed) is not None:
        return _holds(value, expected)
    return None


def set_targets_from_text(value: str | None) -> dict[str, str | None] | None:
    """The column read back (already checked by `set_targets_column_problem`)."""
    return None if value is None else dict(stored_json(value))


def _check_problem(item: object) -> str | None:
    if not isinstance(item, dict) or not isinstance(item.get("grader"), str):
        return "an item is not a check (an object with a grader)"
    weight = item.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not weight > 0:
        return f"a check's weight is {_shown(weight)}, expected a positive number"
    value = item.get("value")
    if value is not None and unit_problem(value) is not None:
        return f"a check's value {unit_problem(value)}"
    for name in ("unmeasured", "reason", "on"):
        if item.get(name) is not None and not isinstance(item[name], str):
            return f"a check's {name} is {_shown(item[name])}, expected text"
    bar = item.get("bar")
    if bar is not None and unit_problem(bar) is not None:
        return f"a check's bar {unit_problem(bar)}"
    if item.get("passed") is not None and not isinstance(item["passed"], bool):
        return f"a check's passed is {_shown(item['passed'])}, expected true or false"
    return None


def _checks_problem(value: object) -> str | None:
    if value is None:
        return None
    items, problem = _json_column(value, "a JSON array of checks")
    if problem is not None:
        return problem
    if not isinstance(items, list):
        return f"holds {_shown(value)}, expected a JSON array of checks"
    for item in items:
        problem = _check_problem(item)
        if problem is not None:
            return problem
    return None


def samples_problem(value: object) -> str | None:
    """Why a stored `samples` column cannot be read back (None: it can)."""
    return _samples_problem(value)


def _samples_problem(value: object) -> str | None:
    if value is None:
        return None
    samples, problem = _json_column(value, "a JSON list of scores in [0, 1]")
    if problem is not None:
        return problem
    if isinstance(samples, list) and all(unit_problem(item) is None for item in samples):
        return None
    return _holds(value, "a JSON list of scores in [0, 1]")


def passes_text(samples: Sequence[float], passes: Sequence[bool]) -> str | None:
    """The `passes` column of a case sampled more than once: whether each of its samples
    reached its bar, as JSON; NULL when there is one sample or no bar to say it."""
    if len(samples) < 2 or len(passes) != len(samples):
        return None
    return json.dumps([bool(item) for item in passes])


def passes_from_text(value: str | None) -> tuple[bool, ...]:
    """The column read back (already checked by `passes_problem`)."""
    return tuple(bool(item) for item in stored_json(value)) if value else ()


def passes_problem(value: object) -> str | None:
    """Why a stored `passes` column cannot be read back (None: it can)."""
    if value is None:
        return None
    passes, problem = _json_column(value, "a JSON list of true and false")
    if problem is not None:
        return problem
    if isinstance(passes, list) and all(type(item) is bool for item in passes):
        return None
    return _holds(value, "a JSON list of true and false")


def _plain_score_row(row: Sequence[Any]) -> bool:
    """True for the row nearly every score is: text ids, a measured score in [0, 1] (or an
    unmeasured reason), counts and costs in range, no samples, text or NULL free text. Plain
    type tests only, so a run of 50,000 scores reads at the cost of its rows; any other row
    (and every broken one) goes through the column-by-column checks, which word the problem.
    Every row this accepts, those checks accept too (a test checks it)."""
    if len(row) != len(SCORE_FIELDS):
        return False
    (_, _, set_id, case_id, value, unmeasured, grader, tokens, cost, judge_cost) = row[:10]
    (fingerprint, passed, samples, output, expected, reason, checks, cluster, failed) = row[10:19]
    return (
        type(set_id) is str
        and type(case_id) is str
        and type(grader) is str
        and type(fingerprint) is str
        and (
            (type(value) is float and 0.0 <= value <= 1.0 and unmeasured is None)
            or (value is None and type(unmeasured) is str)
        )
        and type(tokens) is int
        and 0 <= tokens <= MAX_TOTAL_TOKENS
        and type(cost) in (float, int)
        and 0 <= cost <= MAX_TOTAL_COST_USD
        and type(judge_cost) in (float, int)
        and 0 <= judge_cost <= MAX_TOTAL_COST_USD
        and (passed is None or (type(passed) is int and passed in (0, 1)))
        and samples is None
        and (output is None or type(output) is str)
        and (expected is None or type(expected) is str)
        and (reason is None or type(reason) is str)
        and checks is None
        and (cluster is None or type(cluster) is str)
        and failed is None
        and row[19] is None
    )


def score_problem(row: Sequence[Any]) -> tuple[str, str] | None:
    """The first (column, why) of a score row that cannot be read back; None when it reads."""
    if _plain_score_row(row):
        return None
    return _score_columns_problem(row)


def _score_columns_problem(row: Sequence[Any]) -> tuple[str, str] | None:
    """`score_problem` column by column, in the order a message names them."""
    fields = dict(zip(SCORE_FIELDS, row, strict=True))
    checks: list[tuple[str, str | None]] = [
        ("eval_set_id", _text_problem(fields["eval_set_id"], nullable=False)),
        ("case_id", _text_problem(fields["case_id"], nullable=False)),
        ("grader", _text_problem(fields["grader"], nullable=False)),
        ("value", None if fields["value"] is None else unit_problem(fields["value"])),
        ("unmeasured", _text_problem(fields["unmeasured"], nullable=True)),
        ("tokens", _count_problem(fields["tokens"], limit=MAX_TOTAL_TOKENS)),
        ("cost_usd", _cost_column_problem(fields["cost_usd"])),
        ("judge_cost_usd", _cost_column_problem(fields["judge_cost_usd"])),
        ("fingerprint", _text_problem(fields["fingerprint"], nullable=False)),
        ("passed", _flag_problem(fields["passed"], nullable=True)),
        ("samples", _samples_problem(fields["samples"])),
        ("output", _free_text_problem(fields["output"])),
        ("expected", _free_text_problem(fields["expected"])),
        ("reason", _free_text_problem(fields["reason"])),
        ("checks", _checks_problem(fields["checks"])),
        ("cluster", _text_problem(fields["cluster"], nullable=True)),
        ("failed_by_output", _text_problem(fields["failed_by_output"], nullable=True)),
        ("passes", passes_problem(fields["passes"])),
    ]
    for column, problem in checks:
        if problem is not None:
            return f"scores.{column}", problem
    if fields["failed_by_output"] is not None and fields["value"] is None:
        return "scores.failed_by_output", (
            f"holds {_shown(fields['failed_by_output'])} although the case has no value; a "
            "case its output failed is scored"
        )
    if (fields["value"] is None) == (fields["unmeasured"] is None):
        # SQLite keeps a NaN as NULL: a score saved as NaN reads back as neither measured
        # nor unmeasured.
        if fields["value"] is None:
            return "scores.value", "is NULL but the case has no unmeasured reason (a NaN stored?)"
        return "scores.unmeasured", (
            f"holds {_shown(fields['unmeasured'])} although the case has a value; a case is "
            "measured or unmeasured, not both"
        )
    return None


def run_problem(row: Sequence[Any]) -> tuple[str, str] | None:
    """The first (column, why) of a run row that cannot be read back; None when it reads."""
    found = _run_checks(dict(zip(RUN_FIELDS, row, strict=True)))
    return found[0] if found else None


def _run_checks(fields: dict[str, Any]) -> list[tuple[str, str]]:
    """Every (column, why) of a run row's fields that cannot be read back, in column order
    of importance (what identifies the run first)."""
    ids = fields["eval_set_ids"]
    parsed, ids_problem = _json_column(ids, "a JSON list of eval set ids")
    ids_ok = isinstance(parsed, list) and all(isinstance(item, str) for item in parsed)
    if not ids_ok and ids_problem is None:
        ids_problem = _holds(ids, "a JSON list of eval set ids")
    checks: list[tuple[str, str | None]] = [
        ("id", _text_problem(fields["id"], nullable=False)),
        ("model", _text_problem(fields["model"], nullable=False)),
        ("started_at", _time_problem(fields["started_at"], nullable=False)),
        ("eval_set_ids", None if ids_ok else ids_problem),
        ("finished_at", _time_problem(fields["finished_at"], nullable=True)),
        ("complete", _flag_problem(fields["complete"])),
        ("is_partial", _flag_problem(fields["is_partial"])),
        ("plugin_version", _text_problem(fields["plugin_version"], nullable=False)),
        *((name, _text_problem(fields[name], nullable=True)) for name in _RUN_TEXT),
        *((name, _text_problem(fields[name], nullable=True)) for name in _RUN_TEXT_MORE),
        ("cases", _count_problem(fields["cases"], limit=MAX_TOTAL_TOKENS)),
        (
            "shard_share",
            None
            if fields["shard_share"] is None
            else _count_problem(fields["shard_share"], limit=MAX_TOTAL_TOKENS),
        ),
        ("unmeasured", _count_problem(fields["unmeasured"], limit=MAX_TOTAL_TOKENS)),
        (
            "mean_score",
            None if fields["mean_score"] is None else unit_problem(fields["mean_score"]),
        ),
        ("total_tokens", _count_problem(fields["total_tokens"], limit=MAX_TOTAL_TOKENS)),
        ("model_cost_usd", _cost_column_problem(fields["model_cost_usd"])),
        ("judge_cost_usd", _cost_column_problem(fields["judge_cost_usd"])),
        ("set_targets", set_targets_column_problem(fields["set_targets"])),
    ]
    return [(f"runs.{column}", problem) for column, problem in checks if problem is not None]


def essential(column: str) -> bool:
    """Whether `verdryx repair` cannot rebuild this run column (the run must be removed)."""
    return column.removeprefix("runs.") in _ESSENTIAL


# -- what `verdryx repair` writes instead ------------------------------------------------------


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _decoded(value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def repaired_score(row: Sequence[Any]) -> tuple[dict[str, Any], list[str]]:
    """The score row as `verdryx repair` rewrites it (columns by name, free text decoded) and
    what it changed, in words. A value that cannot be read becomes unmeasured, saying what
    was stored: the true score is unknown, and an unmeasured case is counted apart, never as
    a made-up number. Counts and costs that cannot be read become 0."""
    fields = dict(zip(SCORE_FIELDS, row, strict=True))
    changed: list[str] = []
    for name in ("eval_set_id", "case_id", "grader", "fingerprint"):
        if not isinstance(fields[name], str):
            fields[name] = "" if fields[name] is None else str(fields[name])
            changed.append(f"scores.{name} made text")
    for name in ("output", "expected", "reason"):
        if _free_text_problem(fields[name]) is not None:
            fields[name] = _decoded(fields[name])
            changed.append(f"scores.{name} decoded as text")
        else:
            fields[name] = _decoded(fields[name])
    value, unmeasured = fields["value"], fields["unmeasured"]
    broken_value = value is not None and unit_problem(value) is not None
    if unmeasured is not None and not isinstance(unmeasured, str):
        unmeasured = str(unmeasured)
        changed.append("scores.unmeasured made text")
    if broken_value or (value is None and unmeasured is None):
        why = "NULL" if value is None else _shown(value)
        fields["value"] = None
        fields["unmeasured"] = f"unreadable stored score ({why}), set unmeasured by verdryx repair"
        fields["passed"] = None
        fields["samples"] = None
        changed.append(f"scores.value {why} -> unmeasured")
    elif value is not None and unmeasured is not None:
        fields["unmeasured"] = None
        changed.append("scores.unmeasured cleared (the case has a value)")
    else:
        fields["unmeasured"] = unmeasured
    if _flag_problem(fields["passed"], nullable=True) is not None:
        fields["passed"] = None
        changed.append("scores.passed -> NULL")
    if fields["value"] is None:
        fields["passed"] = None
    if _samples_problem(fields["samples"]) is not None:
        fields["samples"] = None
        changed.append("scores.samples -> NULL")
    if fields["passes"] is not None and (
        fields["samples"] is None or passes_problem(fields["passes"]) is not None
    ):
        # Without its samples (or unreadable) it says nothing: the case gates on `passed`.
        fields["passes"] = None
        changed.append("scores.passes -> NULL")
    if _checks_problem(fields["checks"]) is not None:
        # The case's own score and reason (which names every check) are kept.
        fields["checks"] = None
        changed.append("scores.checks -> NULL")
    if _text_problem(fields["cluster"], nullable=True) is not None:
        fields["cluster"] = None
        changed.append("scores.cluster -> NULL")
    if fields["failed_by_output"] is not None and (
        fields["value"] is None
        or _text_problem(fields["failed_by_output"], nullable=True) is not None
    ):
        fields["failed_by_output"] = None
        changed.append("scores.failed_by_output -> NULL")
    if _count_problem(fields["tokens"], limit=MAX_TOTAL_TOKENS) is not None:
        changed.append(f"scores.tokens {_shown(fields['tokens'])} -> 0")
        fields["tokens"] = 0
    for name in ("cost_usd", "judge_cost_usd"):
        if _cost_column_problem(fields[name]) is not None:
            changed.append(f"scores.{name} {_shown(fields[name])} -> 0")
            fields[name] = 0.0
    return fields, changed


def repaired_run(
    row: Sequence[Any], scores: Sequence[dict[str, Any]]
) -> tuple[dict[str, Any], list[str]]:
    """The run row with its derived columns recomputed from its (repaired) `scores`, and its
    other columns that cannot be read set to what never overstates the run: an unreadable
    `complete` becomes 0 (not gated), an unreadable `is_partial` 1 (not a history point)."""
    fields = dict(zip(RUN_FIELDS, row, strict=True))
    before = dict(fields)
    measured = [s["value"] for s in scores if s["value"] is not None]
    fields["cases"] = len(measured)
    fields["unmeasured"] = len(scores) - len(measured)
    fields["mean_score"] = math.fsum(measured) / len(measured) if measured else None
    fields["total_tokens"] = sum(s["tokens"] for s in scores)
    fields["model_cost_usd"] = math.fsum(s["cost_usd"] for s in scores)
    fields["judge_cost_usd"] = math.fsum(s["judge_cost_usd"] for s in scores)
    # Each column that cannot be read is set on its own to what never overstates the run.
    if _flag_problem(fields["complete"]) is not None:
        fields["complete"] = 0
    if _flag_problem(fields["is_partial"]) is not None:
        fields["is_partial"] = 1
    if _time_problem(fields["finished_at"], nullable=True) is not None:
        fields["finished_at"] = None
    if not isinstance(fields["plugin_version"], str):
        fields["plugin_version"] = ""
    for name in (*_RUN_TEXT, *_RUN_TEXT_MORE):
        fields[name] = _text_or_none(fields[name])
    if set_targets_column_problem(fields["set_targets"]) is not None:
        # Not recorded, then: the run is compared by its `target` alone, as older runs are.
        fields["set_targets"] = None
    if any(column == "runs.eval_set_ids" for column, _ in _run_checks(fields)):
        fields["eval_set_ids"] = json.dumps(sorted({s["eval_set_id"] for s in scores}))
    changed = [
        f"runs.{name} {_shown(before[name])} -> {_shown(fields[name])}"
        for name in RUN_FIELDS
        if before[name] != fields[name] and not (_same_number(before[name], fields[name]))
    ]
    return fields, changed


def _same_number(old: object, new: object) -> bool:
    """A recomputed total equal to the stored one (up to float rounding) is no change."""
    if isinstance(old, int | float) and isinstance(new, int | float):
        if isinstance(old, bool) or isinstance(new, bool):
            return False
        return math.isclose(old, new, rel_tol=1e-12, abs_tol=1e-12)
    return False
