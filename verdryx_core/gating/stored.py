"""The gate of a stored run against a stored baseline, read as arrays (`Store.score_pairs`).

`compare` takes a run and a baseline as objects; building 50,000 scores and 50,000 baseline
cases to read four numbers of each is most of what `verdryx drift` cost. Here the same
matching rules (docs/statistics.md, "Coverage") are applied to the store's arrays, and
the same statistics and refusals (`matched_result`, `checked`) follow: the outcome is the
one `compare` gives, number for number. Where the arrays cannot say it all (a window of
runs, pass rates, a judge check, a sampled or clustered case, a row that is not plain) the
answer is None, and the caller compares the objects.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from verdryx_core.errors import CLI_FLAGS, VerdryxError
from verdryx_core.gating.compare import GateOutcome, GatePolicy, checked, refused
from verdryx_core.gating.comparison import matched_result, run_changes, unmatched_result
from verdryx_core.runs import Baseline
from verdryx_core.store import RunSummary, Store

__all__ = ["compare_stored"]


def compare_stored(
    store: Store,
    run: RunSummary,
    baseline: Baseline,
    *,
    gate: GatePolicy | None = None,
    flags: Mapping[str, str] = CLI_FLAGS,
    deltas: bool = True,
) -> GateOutcome | None:
    """`compare(run, baseline, gate=gate, history=store)` for stored `run` and `baseline`
    (read without its cases: `Store.get_baseline(..., cases=False)`), from the store's
    arrays; None when only the objects can answer (see the module docstring). `deltas`:
    also order every matched case by its change (`GateResult.deltas`, which a text summary
    lists); without, they are left empty."""
    gate = GatePolicy() if gate is None else gate
    if (
        gate.window != 1
        or gate.metric != "score"
        or gate.judge_correction
        or not run.complete
        # The judge check counts the run's unjudged cases: it reads objects.
        or (baseline.judge_model and not run.judge_model and not gate.allow_model_change)
    ):
        return None
    name = baseline.label or baseline.id
    try:
        model_change, target_change = run_changes(run, baseline, allow=gate.allow_model_change)
    except VerdryxError as exc:
        return refused(name, exc.worded(flags))
    pairs = store.score_pairs(run.id, baseline.id, run.eval_set_ids)
    if pairs is None:
        return None
    has_case = pairs.case_row >= 0
    measured = ~np.isnan(pairs.current)
    matched = has_case & measured & ~pairs.edited
    edited = has_case & measured & pairs.edited
    unmeasured = has_case & ~measured
    added = ~has_case & measured
    # Matched cases in the baseline's case order, as `Baseline.case_map` iterates them: the
    # bootstrap draws positions, so the order is part of the numbers.
    order = np.argsort(pairs.case_row[matched], kind="stable")
    named = added | edited | unmeasured | (matched if deltas else np.zeros_like(matched))
    keys = store.score_keys(run.id, np.flatnonzero(named).tolist()) if named.any() else {}

    def keys_of(rows: np.ndarray) -> list[str]:
        return [keys[position] for position in np.flatnonzero(rows).tolist()]

    removed: list[str] = []
    if pairs.cases_in_sets > int(has_case.sum()):
        present = set(pairs.case_row[has_case].tolist())
        removed = sorted(
            key
            for row, key in store.baseline_keys(baseline.id, pairs.eval_sets)
            if row not in present
        )
    if not matched.any():
        result = unmatched_result(
            baseline,
            added=sorted(keys_of(added)),
            removed=removed,
            changed=sorted(keys_of(edited)),
            unmeasured=sorted(keys_of(unmeasured)),
            model_change=model_change,
            target_change=target_change,
            metric=gate.metric,
        )
        return checked(name, result, gate, flags=flags)
    current = pairs.current[matched][order]
    base = pairs.baseline[matched][order]
    matched_keys = None
    if deltas:
        unordered = keys_of(matched)
        matched_keys = [unordered[index] for index in order.tolist()]
    try:
        result = matched_result(
            baseline,
            keys=matched_keys,
            pooled=current,
            base_values=base,
            base_scores=base,
            case_means=current,
            labels=None,
            samples={},
            added=sorted(keys_of(added)),
            removed=removed,
            changed=sorted(keys_of(edited)),
            unmeasured=sorted(keys_of(unmeasured)),
            model_change=model_change,
            target_change=target_change,
            window=1,
            gate=gate.rule,
            threshold=gate.threshold,
            min_effect=gate.min_effect,
            iterations=gate.iterations,
            seed=gate.seed,
            detect=gate.detect,
            metric=gate.metric,
            two_sample_interval=gate.two_sample_interval,
            fdr=gate.fdr,
        )
    except VerdryxError as exc:
        return refused(name, exc.worded(flags))
    return checked(name, result, gate, flags=flags)
