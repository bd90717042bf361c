"""The rubric: from check results to PASS, FAIL or FLAG, with a reason that lists the evidence.

FAIL dominates: any failed check (or any tampered artifact) is FAIL. Otherwise FLAG when a
check errored, a claim is declared unverifiable, or nothing was checkable. PASS only when
every check passed and nothing is unverifiable.
"""

from __future__ import annotations

from collections.abc import Sequence

from verdryx_core.addons.contracts.model import (
    ERROR,
    FAIL,
    FAILED,
    FLAG,
    PASS,
    PASSED,
    Contract,
    ContractVerdict,
    CriterionResult,
)

__all__ = ["decide"]


def decide(
    contract: Contract,
    results: Sequence[CriterionResult],
    *,
    integrity_problems: Sequence[str] = (),
    bundle_hash: str | None = None,
) -> ContractVerdict:
    failed = [result for result in results if result.status == FAILED]
    errored = [result for result in results if result.status == ERROR]
    passed = [result for result in results if result.status == PASSED]
    claims = contract.unverifiable_claims
    total = len(results)

    if integrity_problems or failed:
        verdict = FAIL
        parts = []
        if integrity_problems:
            parts.append(f"{_count(len(integrity_problems), 'hash check')} failed")
        if failed:
            parts.append(f"{len(failed)} of {_count(total, 'check')} failed")
        headline = "; ".join(parts)
    elif errored or claims or not total:
        verdict = FLAG
        parts = []
        if errored:
            parts.append(f"{len(errored)} of {_count(total, 'check')} could not run")
        if claims:
            parts.append(f"{_count(len(claims), 'claim')} cannot be verified")
        if not total:
            parts.append("nothing was checkable (the contract has no success criteria)")
        headline = ("no check failed, but " if total and not errored else "") + "; ".join(parts)
    else:
        verdict = PASS
        headline = f"all {_count(total, 'check')} passed"

    details = [f"tampered: {problem}" for problem in integrity_problems]
    details += [_line(result) for result in (*failed, *errored, *passed)]
    details += [f"unverifiable: {claim!r}" for claim in claims]
    reason = f"{verdict}: {headline}"
    if details:
        reason += " - " + "; ".join(details)
    return ContractVerdict(
        verdict=verdict,
        reason=reason,
        summary=headline,
        task_id=contract.task_id,
        agent_id=contract.agent_id,
        check_results=tuple(results),
        unverifiable_claims=tuple(claims),
        integrity_problems=tuple(integrity_problems),
        bundle_hash=bundle_hash,
    )


def _line(result: CriterionResult) -> str:
    return f"[{result.check_id}] {result.status} ({result.type}): {result.evidence}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
