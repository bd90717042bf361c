"""TokenFuse decision strings verdryx gives meaning to (docs/cost-per-outcome.md, "The
TokenFuse reduction"; docs/slo.md, `containment`)."""

from __future__ import annotations

from typing import Final

__all__ = ["BLOCKED_DECISIONS", "REFUSED_DECISIONS", "UNTAGGED"]

#: TokenFuse `BreakerReason` wire strings. A blocked call's `cost_microusd` is an avoided
#: estimate, not settled spend, so it counts as a call and costs nothing. All nine: for
#: eleven days two were missing and avoided estimates were counted as spend.
BLOCKED_DECISIONS: Final = frozenset(
    {
        "budget_exceeded",
        "policy_violation",
        "loop_detected",
        "killed",
        "wasm_policy",
        "taint_blocked",
        "dlp_blocked",
        "unit_budget_exceeded",
        "identity_mismatch",
    }
)

#: Containment counts policy-plane refusals too; they never change what a call costs.
REFUSED_DECISIONS: Final = BLOCKED_DECISIONS | {"wardryx_deny", "wardryx_hold"}

#: The bucket of runs that never carried an outcome tag: their spend is real and shown.
UNTAGGED: Final = "(untagged)"
