"""`verdryx diff RUN_A RUN_B`: the cases whose score changed most from one run to another."""

from __future__ import annotations

import argparse
import math
from typing import Any

from verdryx_core.cli.commands._common import (
    add_db_argument,
    add_json_argument,
    open_store,
    print_json,
)
from verdryx_core.cli.commands._table import render_table, short_id, signed
from verdryx_core.errors import UsageError
from verdryx_core.reporting.summary import fmt_score
from verdryx_core.runs import EvalRun, Score
from verdryx_core.store import Store
from verdryx_core.untrusted.text import printable

NAME = "diff"
HELP = "compare two stored runs case by case: the cases that changed most, first"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_a", metavar="RUN_A", help="the earlier run (id or unique prefix)")
    parser.add_argument("run_b", metavar="RUN_B", help="the later run (id or unique prefix)")
    parser.add_argument(
        "--limit",
        type=int,
        default=20,
        metavar="N",
        help="show the N biggest changes (default 20; 0 for all)",
    )
    add_db_argument(parser)
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    if args.limit < 0:
        raise UsageError(f"--limit {args.limit} is negative; pass a count, or 0 for all")
    with open_store(args, read_only=True) as store:
        run_a = _find(store, args.run_a)
        run_b = _find(store, args.run_b)
    document = diff_document(run_a, run_b, limit=args.limit or None)
    if args.json:
        print_json(document)
    else:
        _print_text(document)
    return 0


def diff_document(run_a: EvalRun, run_b: EvalRun, *, limit: int | None = None) -> dict[str, Any]:
    """Cases matched by eval set and case id; `delta` is B minus A (negative: B is worse).
    `changes` lists matched cases whose score moved, biggest move first; a case measured on
    one side only is in `measured_changes`, never scored as 0."""
    a_scores = _by_key(run_a)
    b_scores = _by_key(run_b)
    matched = [key for key in a_scores if key in b_scores]
    changes: list[dict[str, Any]] = []
    measured_changes: list[dict[str, Any]] = []
    both: list[tuple[float, float]] = []
    for key in matched:
        a, b = a_scores[key], b_scores[key]
        if a.value is not None and b.value is not None:
            both.append((a.value, b.value))
            delta = b.value - a.value
            if abs(delta) > 1e-12:
                changes.append(_entry(a, b, delta))
        elif (a.value is None) != (b.value is None):
            entry = _entry(a, b, None)
            entry["reason"] = (b if b.value is None else a).unmeasured
            measured_changes.append(entry)
    changes.sort(key=lambda item: (-abs(item["delta"]), item["delta"], item["key"]))
    mean_a = math.fsum(a for a, _ in both) / len(both) if both else None
    mean_b = math.fsum(b for _, b in both) / len(both) if both else None
    return {
        "run_a": run_a.id,
        "run_b": run_b.id,
        "model_a": run_a.model,
        "model_b": run_b.model,
        "mean_a": run_a.mean_score,
        "mean_b": run_b.mean_score,
        "matched": len(both),
        "matched_mean_a": mean_a,
        "matched_mean_b": mean_b,
        "matched_delta": None if mean_a is None or mean_b is None else mean_b - mean_a,
        "changed": len(changes),
        "changes": changes[:limit] if limit else changes,
        "measured_changes": measured_changes,
        "only_in_a": sorted(key for key in a_scores if key not in b_scores),
        "only_in_b": sorted(key for key in b_scores if key not in a_scores),
    }


def _find(store: Store, run_id: str) -> EvalRun:
    found = store.find_run(run_id)
    if found is None:
        raise UsageError(
            f"no such eval run: {run_id!r} in {store.path}; list them with `verdryx runs`"
        )
    return found


def _by_key(run: EvalRun) -> dict[str, Score]:
    # A case scored twice in one run (an eval set given twice) keeps its last score.
    return {score.key: score for score in run.scores}


def _entry(a: Score, b: Score, delta: float | None) -> dict[str, Any]:
    return {
        "key": b.key,
        "eval_set_id": b.eval_set_id,
        "case_id": b.case_id,
        "grader": b.grader,
        "a": a.value,
        "b": b.value,
        "delta": delta,
        "edited": bool(a.fingerprint and b.fingerprint and a.fingerprint != b.fingerprint),
    }


def _print_text(document: dict[str, Any]) -> None:
    print()
    print(
        f"  A {short_id(document['run_a'])} ({document['model_a']}): mean "
        f"{fmt_score(document['mean_a'])}   B {short_id(document['run_b'])} "
        f"({document['model_b']}): mean {fmt_score(document['mean_b'])}"
    )
    if document["matched"]:
        print(
            f"  {document['matched']} cases measured in both: {document['matched_mean_a']:.3f} "
            f"-> {document['matched_mean_b']:.3f} ({signed(document['matched_delta'])}); "
            f"{document['changed']} changed"
        )
    else:
        print("  no case is measured in both runs")
    changes = document["changes"]
    if changes:
        print()
        rows = [
            [
                signed(item["delta"]),
                fmt_score(item["a"]),
                fmt_score(item["b"]),
                item["key"],
                item["grader"] + (" (edited)" if item["edited"] else ""),
            ]
            for item in changes
        ]
        for line in render_table(["DELTA", "A", "B", "CASE", "GRADER"], rows, numeric={0, 1, 2}):
            print(f"  {line}")
        hidden = document["changed"] - len(changes)
        if hidden:
            print(f"  ... and {hidden} smaller changes (--limit 0 shows all)")
    for item in document["measured_changes"]:
        side = "B" if item["b"] is None else "A"
        reason = printable(item["reason"] or "", keep_newlines=False)  # one line, by the text rule
        print(f"  unmeasured in {side}: {item['key']} ({reason})")
    for title, keys in (("only in A", document["only_in_a"]), ("only in B", document["only_in_b"])):
        if keys:
            shown = ", ".join(keys[:10]) + (f" and {len(keys) - 10} more" if len(keys) > 10 else "")
            print(f"  {title}: {len(keys)}: {shown}")
    print()
