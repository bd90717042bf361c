"""Writing the report file: read the store, build the page, replace the file atomically."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verdryx_core.atomic import write_text_atomic
from verdryx_core.errors import UsageError
from verdryx_core.gating.comparison import Comparison
from verdryx_core.gating.drift import DEFAULT_THRESHOLD
from verdryx_core.reporting.html._challenger import ChallengerView
from verdryx_core.reporting.html._collect import collect_report
from verdryx_core.reporting.html._html import build_report_html
from verdryx_core.runs import Baseline
from verdryx_core.store import Store

__all__ = ["write_report"]


def write_report(
    store: Store,
    path: Path,
    *,
    run_id: str | None = None,
    baseline: Baseline | None = None,
    eval_set_id: str | None = None,
    model: str | None = None,
    traces: Path | None = None,
    traces_costs: tuple[Any, str | None] = (None, None),
    result: Comparison | None = None,
    gate: str = "significant",
    threshold: float = DEFAULT_THRESHOLD,
    min_effect: float = 0.0,
    challenger: ChallengerView | None = None,
) -> Path:
    """Write the HTML report of `run_id` (default: the newest complete run matching `model`
    and `eval_set_id`) to `path` and return it. Pass the session's gate `result` so the page
    shows the verdict the session reached; without one the run is compared with `baseline`
    (default: the newest stored baseline of the run's model) under `gate`."""
    path = Path(path)
    if not path.parent.is_dir():
        # Nothing verdryx does creates a directory as a side effect (docs/options.md).
        raise UsageError(
            f"cannot write the report to {str(path)!r}: folder {str(path.parent)!r} does not "
            "exist; create it or choose another path"
        )
    data = collect_report(
        store,
        run_id=run_id,
        baseline=baseline,
        eval_set_id=eval_set_id,
        model=model,
        traces=traces,
        traces_costs=traces_costs,
        result=result,
        gate=gate,
        threshold=threshold,
        min_effect=min_effect,
        challenger=challenger,
    )
    text = build_report_html(data)
    # A browser tab reloading the report never sees half a file.
    write_text_atomic(path, text)
    return path
