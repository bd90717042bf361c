"""What `verdryx eval`, `drift` and `gate` share: the gate's flags, the `RunPolicy` they make,
the JSON document and the text lines of a gate, and the exit code of a `Conclusion`
(docs/cli.md, "Exit codes")."""

from __future__ import annotations

import argparse
from typing import Any

from verdryx_core.cli.commands._settings import setting_fields
from verdryx_core.conclusion import Conclusion, RunPolicy
from verdryx_core.gating.compare import GateOutcome, GatePolicy
from verdryx_core.gating.comparison import Comparison

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


def add_gate_arguments(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    """The gate's flags the pytest face has no counterpart of; its settings (`--gate`,
    `--threshold`...) come from the table (`_settings.add_setting_arguments`). `required`:
    `--baseline` must be given (`eval` gates only with one)."""
    parser.add_argument(
        "--baseline",
        required=required,
        help="baseline id or label" + ("" if required else " to gate the run against"),
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


def policy_from(args: argparse.Namespace, command: str) -> GatePolicy:
    """The gate's policy from `verdryx COMMAND`'s arguments: the table's gate settings it
    takes (the others keep `GatePolicy`'s defaults, which are the table's)."""
    return GatePolicy(
        **setting_fields("gate", args, command), two_sample_interval=args.two_sample_interval
    )


def run_policy_from(args: argparse.Namespace, command: str) -> RunPolicy:
    """The whole policy the command concludes its run by."""
    return RunPolicy(gate=policy_from(args, command), **setting_fields("run", args, command))


def gate_document(outcome: GateOutcome) -> dict[str, Any]:
    """docs/cli.md, `drift`: the drift statistics' keys, then what was matched."""
    result = outcome.result
    assert result is not None
    document = result.stats.to_dict() if result.stats else {"verdict": None}
    return document | {
        "matched": result.matched,
        "added": list(result.added),
        "removed": list(result.removed),
        "changed": list(result.changed),
        "note": result.note,
        "case_drops": case_drop_rows(result),
    }


def case_drop_rows(result: Comparison) -> list[dict[str, Any]]:
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
