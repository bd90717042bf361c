"""The stable keys of the `--json` documents, as docs/cli.md lists them: one copy for
every test that checks a command's JSON."""

from __future__ import annotations

EVAL_KEYS = frozenset(
    {
        "run_id",
        "eval_set_id",
        "model",
        "mean_score",
        "cases",
        "scores",
        "unmeasured",
        "total_tokens",
        "total_cost_usd",
    }
)
SCORE_KEYS = frozenset({"case_id", "value", "grader", "tokens", "cost_usd"})
DRIFT_KEYS = frozenset(
    {
        "verdict",
        "gate",
        "inconclusive",
        "mde",
        "baseline_id",
        "baseline_mean",
        "mean_score",
        "delta",
        "threshold",
        "window",
        "n",
        "baseline_n",
        "t_statistic",
        "ci_low",
        "ci_high",
        "paired",
    }
)
PAIRED_KEYS = frozenset({"n", "mean_diff", "t_statistic", "ci_low", "ci_high"})
RUNS_KEYS = frozenset(
    {"run_id", "eval_set_ids", "model", "cases", "mean_score", "started_at", "complete"}
)
PLAN_KEYS = frozenset(
    {
        "mde",
        "cases_needed",
        "repeats_needed",
        "calls_needed",
        "detect",
        "power",
        "alpha",
        "mde_floor",
        "clusters_needed",
        "variance_components",
    }
)
