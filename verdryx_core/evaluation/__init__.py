"""The one evaluation both faces drive (`verdryx eval`, the pytest plugin, the Python API).

settings -> Evaluation (run identity, scorers: graders + where the output comes from) ->
prefetch in the bounded pool -> Score (pass bar decided once) -> EvalRun -> the store.
Which cases a run measures (its shard, `sharding.py`) and how many samples each gets
(`allocation.py`) are planned here too. See `evaluate.py` and docs/architecture.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verdryx_core.errors import TargetCallError
from verdryx_core.evaluation.calls import CallTally, ModelCalls
from verdryx_core.evaluation.evaluate import Evaluation, EvaluationInterrupted, evaluate
from verdryx_core.evaluation.prefetch import Prefetch, Work, prefetch_all, start_prefetch
from verdryx_core.evaluation.scoring import (
    CaseScorer,
    decided,
    pass_bar,
    stability,
    stored_output,
)
from verdryx_core.evaluation.settings import DEFAULT_MIN_SCORE, EvalSettings, judge_in_effect
from verdryx_core.evaluation.sources import (
    ModelSource,
    OutputSource,
    Produced,
    RecordedSource,
    source_for,
    target_of,
)
from verdryx_core.lazy_names import first_use, renamed

if TYPE_CHECKING:
    from verdryx_core.evaluation.target_output import TargetSource

__all__ = [
    "DEFAULT_MIN_SCORE",
    "CallTally",
    "CaseScorer",
    "EvalSettings",
    "Evaluation",
    "EvaluationInterrupted",
    "ModelCalls",
    "ModelSource",
    "OutputSource",
    "Prefetch",
    "Produced",
    "RecordedSource",
    "TargetCallError",
    "TargetSource",
    "Work",
    "decided",
    "evaluate",
    "judge_in_effect",
    "pass_bar",
    "prefetch_all",
    "source_for",
    "stability",
    "start_prefetch",
    "stored_output",
    "target_of",
]

# The agent under test's source comes on first use: a run without targets never imports it.
# Old names stay resolvable with a DeprecationWarning (docs/python-api.md, "Renamed").
__getattr__ = renamed(
    __name__,
    {"TargetOutput": "TargetSource"},
    first_use(__name__, {"TargetSource": "verdryx_core.evaluation.target_output"}),
)
