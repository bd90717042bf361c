"""What `verdryx drift` and `verdryx gate` share: the gate's flags, the `GatePolicy` they
make, the JSON document and the text lines of a `GateOutcome`, and its exit code
(docs/cli.md, "Exit codes")."""

from __future__ import annotations

import argparse
from typing import Any

from verdryx_core.cli.commands._common import float_argument
from verdryx_core.gating.compare import GateOutcome, GatePolicy
from verdryx_core.gating.comparison import METRICS
from verdryx_core.gating.drift import DEFAULT_THRESHOLD, GATES

__all__ = [
    "EXIT_REFUSED",
    "EXIT_REGRESSED",
    "add_gate_arguments",
    "exit_code",
    "gate_document",
    "outcome_lines",
    "policy_from",
]

#: A regressed verdict fails the command like a failing test fails pytest.
EXIT_REGRESSED = 1
#: Refused: the same code as every other usage error of the CLI.
EXIT_REFUSED = 2


#: A share or a score difference: finite and in [0, 1] (docs/options.md, "Numbers").
_unit = float_argument(minimum=0.0, maximum=1.0)


def add_gate_arguments(parser: argparse.ArgumentParser, *, window: bool = False) -> None:
    parser.add_argument("--baseline", required=True, help="baseline id or label")
    if window:
        parser.add_argument("--window", type=int, default=1, help="pool N runs (default 1)")
    parser.add_argument("--gate", choices=GATES, default="significant", help="verdict rule")
    parser.add_argument("--threshold", type=_unit, default=DEFAULT_THRESHOLD)
    parser.add_argument("--min-effect", type=_unit, default=0.0)
    parser.add_argument("--allow-model-change", action="store_true")
    parser.add_argument(
        "--min-coverage",
        type=_unit,
        default=0.5,
        metavar="F",
        help="refuse a gate that compared less than this share of the baseline's cases "
        "(default 0.5)",
    )
    parser.add_argument(
        "--detect",
        type=float_argument(),
        default=0.05,
        metavar="D",
        help="the smallest drop you need to see; an on-track verdict that cannot see it is "
        "labelled underpowered (default 0.05)",
    )
    parser.add_argument(
        "--require-power",
        action="store_true",
        help="refuse the gate when the run cannot see a drop of --detect",
    )
    parser.add_argument(
        "--gate-metric",
        choices=METRICS,
        default="score",
        help="compare mean scores (default) or pass rates per case",
    )
    parser.add_argument(
        "--two-sample-interval",
        action="store_true",
        help="also bootstrap the two-sample interval (ci_low, ci_high) when cases pair; the "
        "verdict uses the paired one (default: off, it is two thirds of the work)",
    )
    parser.add_argument(
        "--root", default=".", help="where .verdryx/baselines/ lives (default: current dir)"
    )


def policy_from(args: argparse.Namespace) -> GatePolicy:
    return GatePolicy(
        rule=args.gate,
        threshold=args.threshold,
        min_effect=args.min_effect,
        window=getattr(args, "window", 1),
        allow_model_change=args.allow_model_change,
        min_coverage=args.min_coverage,
        detect=args.detect,
        require_power=args.require_power,
        metric=args.gate_metric,
        two_sample_interval=args.two_sample_interval,
    )


def gate_document(outcome: GateOutcome) -> dict[str, Any]:
    """docs/cli.md, `drift`: the drift report's keys, then what was matched."""
    result = outcome.result
    assert result is not None
    document = result.report.to_dict() if result.report else {"verdict": None}
    return document | {
        "matched": result.matched,
        "added": list(result.added),
        "removed": list(result.removed),
        "changed": list(result.changed),
        "note": result.note,
    }


def outcome_lines(outcome: GateOutcome) -> list[str]:
    # The text summary's module (and its planning one) is imported only to print text.
    from verdryx_core.reporting.summary import gate_lines

    assert outcome.result is not None
    return gate_lines(outcome.result)


def exit_code(outcome: GateOutcome) -> int:
    return {"ok": 0, "regressed": EXIT_REGRESSED, "refused": EXIT_REFUSED}[outcome.exit]
