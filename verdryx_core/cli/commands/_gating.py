"""What `verdryx eval`, `drift` and `gate` share: the gate's flags, the `RunPolicy` they make,
the JSON document and the text lines of a gate, and the exit code of a `Conclusion`
(docs/cli.md, "Exit codes")."""

from __future__ import annotations

import argparse
from typing import Any

from verdryx_core.cli.commands._common import float_argument
from verdryx_core.conclusion import FAIL_ON, Conclusion, RunPolicy
from verdryx_core.defaults import DEFAULT_FDR, DEFAULT_MIN_COVERAGE, DEFAULT_THRESHOLD, GATES
from verdryx_core.gating.compare import GateOutcome, GatePolicy
from verdryx_core.gating.comparison import METRICS, GateResult

__all__ = [
    "EXIT_FAILED",
    "EXIT_REFUSED",
    "add_gate_arguments",
    "case_drop_rows",
    "exit_code",
    "gate_document",
    "outcome_lines",
    "policy_from",
    "run_policy_from",
]

#: A regressed verdict or a failing case fails the command like a failing test fails pytest.
EXIT_FAILED = 1
#: Refused: the same code as every other usage error of the CLI.
EXIT_REFUSED = 2


#: A share or a score difference: finite and in [0, 1] (docs/options.md, "Numbers").
_unit = float_argument(minimum=0.0, maximum=1.0)


def add_gate_arguments(
    parser: argparse.ArgumentParser, *, window: bool = False, required: bool = True
) -> None:
    """The gate's flags; `required`: `--baseline` must be given (`eval` gates only with one)."""
    parser.add_argument(
        "--baseline",
        required=required,
        help="baseline id or label" + ("" if required else " to gate the run against"),
    )
    parser.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        default="verdict",
        help="with a baseline, what fails: 'verdict' (default: a regressed gate, a required "
        "case below its bar or not measured, a case new since the baseline below its bar) or "
        "'cases' (every case below its bar, as without a baseline)",
    )
    if window:
        parser.add_argument("--window", type=int, default=1, help="pool N runs (default 1)")
    parser.add_argument("--gate", choices=GATES, default="significant", help="verdict rule")
    parser.add_argument("--threshold", type=_unit, default=DEFAULT_THRESHOLD)
    parser.add_argument("--min-effect", type=_unit, default=0.0)
    parser.add_argument("--allow-model-change", action="store_true")
    parser.add_argument(
        "--min-coverage",
        type=_unit,
        default=DEFAULT_MIN_COVERAGE,
        metavar="F",
        help="refuse a gate that compared no more than this share of the baseline's cases "
        f"(default {DEFAULT_MIN_COVERAGE})",
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
        "--fdr",
        type=float_argument(minimum=0.0001, maximum=1.0),
        default=DEFAULT_FDR,
        metavar="Q",
        help="the false discovery rate of the per-case drop tests (`case_drops`; default "
        f"{DEFAULT_FDR:g})",
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
        fdr=getattr(args, "fdr", DEFAULT_FDR),
    )


def run_policy_from(args: argparse.Namespace) -> RunPolicy:
    """The whole policy the command concludes its run by."""
    return RunPolicy(gate=policy_from(args), fail_on=args.fail_on)


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
        "case_drops": case_drop_rows(result),
    }


def case_drop_rows(result: GateResult) -> list[dict[str, Any]]:
    """docs/cli.md, `drift`: each tested case's drop test, in the baseline's case order
    (docs/statistics.md, "Which cases regressed"); `q` is null for a case left out of the
    false discovery count (it cannot show a drop with its samples)."""
    rows = []
    for key, drop in result.case_drops.items():
        eval_set_id, _, case_id = key.partition("::")
        rows.append(
            {
                "eval_set_id": eval_set_id,
                "case_id": case_id,
                "p": drop.p_value,
                "q": drop.q_value,
                "significant": drop.significant,
                "min_p": drop.min_p,
                "can_show_drop": drop.counted,
                "test": drop.test,
                "baseline_samples": drop.baseline_n,
                "current_samples": drop.current_n,
            }
        )
    return rows


def outcome_lines(outcome: GateOutcome) -> list[str]:
    # The text summary's module (and its planning one) is imported only to print text.
    from verdryx_core.reporting.summary import gate_lines

    assert outcome.result is not None
    return gate_lines(outcome.result)


def exit_code(conclusion: Conclusion) -> int:
    return {"ok": 0, "failed": EXIT_FAILED, "refused": EXIT_REFUSED}[conclusion.exit]


def conclusion_lines(conclusion: Conclusion) -> list[str]:
    """What the run's conclusion adds to the gate's lines: that the run is partial, its new
    cases, the cases that fail it, and why it fails or is refused."""
    lines = []
    if conclusion.partial:
        lines.append(
            "partial run: it measured a selection of the cases, compared with the same "
            "selection of the baseline; it is no baseline"
        )
    new = conclusion.new_line()
    if new:
        lines.append(new)
    if conclusion.exit != "ok" and conclusion.exit_reason:
        lines.append(f"{conclusion.exit.upper()}: {conclusion.exit_reason}")
        failed = conclusion.failed
        if len(failed) > 1:
            shown = ", ".join(failed[:10]) + (" ..." if len(failed) > 10 else "")
            lines.append(f"failing cases: {shown}")
    return lines
