"""`verdryx slo (--input FILE | --traces DIR) [options]`: agent error budgets, measured.

Nothing here enforces: the exit status is 0 whatever the budgets say. `slo_burn` events go
to the event log only for established breaches (exhausted or fast burn with the Wilson
upper bound below the target), and only for subjects that are Agent Passport ids.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from verdryx_core.addons.slo import (
    IDENTITY_FIELDS,
    SLIS,
    ScoreTable,
    burn_events,
    compute_slo,
    render_report,
    run_table_for,
    split_payload,
    subject_is_emittable,
)
from verdryx_core.cli.commands._common import add_json_argument, float_argument, print_json
from verdryx_core.errors import UsageError
from verdryx_core.option_numbers import option_float

NAME = "slo"
HELP = "error budgets per agent: task success, quality floor, containment, cost discipline"


def _fraction(text: str) -> float:
    try:
        return option_float(text, minimum=0.0, maximum=1.0)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{exc}; pass e.g. 0.95") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--input", metavar="FILE", help="per-run records (.ndjson/.jsonl/.csv) or a .parquet trace"
    )
    source.add_argument(
        "--traces", metavar="DIR", help="a TokenFuse trace: a directory of .parquet segments"
    )
    parser.add_argument(
        "--identity-field",
        "--identity",
        dest="identity_field",
        choices=IDENTITY_FIELDS,
        default="agent_id",
        help="group runs by agent_id (client header) or key_id (server-resolved credential); "
        "default agent_id",
    )
    parser.add_argument("--window", default="28d", help="a label for the window (default 28d)")
    parser.add_argument(
        "--confidence",
        type=float_argument(),
        default=0.95,
        help="Wilson interval level (default 0.95)",
    )
    parser.add_argument(
        "--min-events",
        type=int,
        default=20,
        help="fewest judged runs an indicator is computed from (default 20)",
    )
    parser.add_argument(
        "--good-outcomes",
        default="case_resolved",
        help="comma-separated outcome tags that count as success (default case_resolved)",
    )
    parser.add_argument(
        "--quality-floor",
        type=float_argument(),
        default=0.8,
        help="a score at or above is good (0.8)",
    )
    parser.add_argument(
        "--cost-multiple",
        type=float_argument(),
        default=3.0,
        help="a run costing more than this times the fleet median is bad (default 3.0)",
    )
    for sli in SLIS:
        parser.add_argument(
            f"--target-{sli.replace('_', '-')}",
            type=_fraction,
            default=None,
            metavar="F",
            help=f"objective for {sli} (default 0.95)",
        )
    parser.add_argument(
        "--scores-db",
        metavar="PATH|URL",
        help="join per-case scores from this eval store (a SQLite file or a postgresql:// URL) "
        "into quality_floor, by agent id",
    )
    parser.add_argument(
        "--events",
        metavar="PATH",
        help="append slo_burn events here (default: $VERDRYX_EVENTS_PATH; none when unset)",
    )
    add_json_argument(parser)


def _named(store: str | None) -> str | None:
    """The scores store as output names it: a URL without its password."""
    if store is None:
        return None
    from verdryx_core.store import describe

    return describe(store)


def _scores(path: str | None, identity_field: str) -> ScoreTable | None:
    if path is None:
        return None
    if identity_field != "agent_id":
        raise UsageError(
            f"--scores-db cannot be joined with --identity-field {identity_field}: the eval "
            "store records the agent a run was evaluated for, not the credential it used; "
            "drop --scores-db or group by agent_id"
        )
    from verdryx_core.store import Store, is_store_url, resolve_store_path

    if not is_store_url(path) and not Path(path).is_file():
        raise UsageError(
            f"--scores-db {path!r}: no such file; pass the store `verdryx eval --db` wrote to"
        )
    with Store.open(resolve_store_path(path), read_only=True) as store:
        return ScoreTable.from_records(store.score_records(), identity_field)


def _emit(payloads: list[dict[str, Any]], flag: str | None) -> tuple[Path | None, int, int]:
    """(events path or None, events written, payloads whose subject cannot be an agent id)."""
    from verdryx_core.addons.events.log import EventLog, resolve_events_path

    path = resolve_events_path(flag)
    if path is None:
        return None, 0, 0
    log = EventLog(path)
    sent = unsendable = 0
    for payload in payloads:
        subject, data = split_payload(payload)
        if not subject_is_emittable(subject):
            unsendable += 1
            continue
        sent += int(log.emit("slo_burn", subject, data))
    return path, sent, unsendable


def run(args: argparse.Namespace) -> int:
    source = args.input if args.input is not None else args.traces
    scores = _scores(args.scores_db, args.identity_field)
    targets = {sli: getattr(args, f"target_{sli}") for sli in SLIS}
    good = tuple(tag.strip() for tag in args.good_outcomes.split(",") if tag.strip())
    if not good:
        raise UsageError(
            f"--good-outcomes {args.good_outcomes!r} names no tag; pass e.g. case_resolved"
        )
    if args.min_events < 1:
        raise UsageError(f"--min-events {args.min_events} is below 1; pass e.g. 20")
    report = compute_slo(
        run_table_for(source, args.identity_field),
        scores=scores,
        identity_field=args.identity_field,
        window=args.window,
        targets=targets,
        confidence=args.confidence,
        min_events=args.min_events,
        good_outcomes=good,
        quality_floor=args.quality_floor,
        cost_multiple=args.cost_multiple,
    )
    payloads = burn_events(report)
    path, sent, unsendable = _emit(payloads, args.events)
    if args.json:
        document = {"source": str(source), **report.to_dict()}
        document["scores_db"] = _named(args.scores_db)
        document["burn_events"] = [
            {"subject": subject, "data": data} for subject, data in map(split_payload, payloads)
        ]
        document["events_path"] = None if path is None else str(path)
        document["emitted"] = sent
        print_json(document)
        return 0
    lines = render_report(report, str(source), scores_path=_named(args.scores_db))
    lines += [
        "",
        f"  {len(payloads)} slo_burn event(s) to emit (exhausted and fast burn only; a slow "
        "burn is reported, never alerted)",
    ]
    if path is not None:
        lines.append(f"  {sent} emitted to {path}")
        if unsendable:
            why = (
                f"the subject is a {args.identity_field}"
                if args.identity_field != "agent_id"
                else "the subject is not an Agent Passport id (agent://host/path)"
            )
            lines.append(
                f"  {unsendable} not emitted: {why} and the envelope's only subject field "
                "is an agent id"
            )
    lines.append("")
    print("\n".join(lines))
    return 0
