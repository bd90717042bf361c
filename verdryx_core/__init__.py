"""verdryx core: eval sets, graders, the evaluation, the store and the gate; framework-free
(no pytest). The Python API (docs/python-api.md) is what `__all__` names:

    from verdryx_core import conclude, evaluate, find_baseline, load_evalsets

    run = evaluate(load_evalsets(["evals/"]))
    conclusion = conclude(run, baseline=find_baseline("v1", root="."), store="verdryx.db")
    print(conclusion)  # the verdict, the cases that fail it, and `exit` with its reason

Names are imported on first use, so `import verdryx_core.cases` does not pay for the
evaluation, numpy or the store; nor does the pytest plugin's option table, which every
pytest session imports, pay for reading the installed version. What a face (a front end
like the pytest plugin) is built from is in `verdryx_core.face`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from verdryx_core.lazy_names import first_use

if TYPE_CHECKING:
    from verdryx_core.cases import EvalCase
    from verdryx_core.conclusion import Conclusion, RunPolicy, Selection, conclude, save_baseline
    from verdryx_core.errors import (
        EvalSetError,
        ModelCallError,
        StoreError,
        UsageError,
        VerdryxError,
    )
    from verdryx_core.evalsets.load import EvalSet, load_evalsets
    from verdryx_core.evaluation.evaluate import EvaluationInterrupted, evaluate
    from verdryx_core.evaluation.settings import EvalSettings
    from verdryx_core.gating.baselines import find_baseline
    from verdryx_core.gating.compare import GateOutcome, GatePolicy, compare
    from verdryx_core.graders.base import Grade, GradeContext
    from verdryx_core.graders.registry import register_grader
    from verdryx_core.runs import Baseline, EvalRun, Score
    from verdryx_core.store import Store
    from verdryx_core.targets import TargetCase, TargetResult, TargetUsage
    from verdryx_core.version import __version__

#: Public name -> the module that defines it.
_HOMES: Final = {
    "__version__": "verdryx_core.version",
    "Baseline": "verdryx_core.runs",
    "Conclusion": "verdryx_core.conclusion",
    "RunPolicy": "verdryx_core.conclusion",
    "Selection": "verdryx_core.conclusion",
    "conclude": "verdryx_core.conclusion",
    "save_baseline": "verdryx_core.conclusion",
    "EvalCase": "verdryx_core.cases",
    "EvalRun": "verdryx_core.runs",
    "EvalSet": "verdryx_core.evalsets.load",
    "EvalSetError": "verdryx_core.errors",
    "EvalSettings": "verdryx_core.evaluation.settings",
    "EvaluationInterrupted": "verdryx_core.evaluation.evaluate",
    "GateOutcome": "verdryx_core.gating.compare",
    "GatePolicy": "verdryx_core.gating.compare",
    "Grade": "verdryx_core.graders.base",
    "GradeContext": "verdryx_core.graders.base",
    "ModelCallError": "verdryx_core.errors",
    "Score": "verdryx_core.runs",
    "Store": "verdryx_core.store",
    "StoreError": "verdryx_core.errors",
    "TargetCase": "verdryx_core.targets",
    "TargetResult": "verdryx_core.targets",
    "TargetUsage": "verdryx_core.targets",
    "UsageError": "verdryx_core.errors",
    "VerdryxError": "verdryx_core.errors",
    "compare": "verdryx_core.gating.compare",
    "evaluate": "verdryx_core.evaluation.evaluate",
    "find_baseline": "verdryx_core.gating.baselines",
    "load_evalsets": "verdryx_core.evalsets.load",
    "register_grader": "verdryx_core.graders.registry",
}

__all__ = [  # noqa: RUF022 (the version first, then the API in its order of use)
    "__version__",
    "load_evalsets",
    "evaluate",
    "compare",
    "conclude",
    "find_baseline",
    "save_baseline",
    "register_grader",
    "EvaluationInterrupted",
    "EvalSettings",
    "GatePolicy",
    "GateOutcome",
    "RunPolicy",
    "Selection",
    "Conclusion",
    "EvalSet",
    "EvalCase",
    "Score",
    "EvalRun",
    "Baseline",
    "Store",
    "TargetCase",
    "TargetResult",
    "TargetUsage",
    "Grade",
    "GradeContext",
    "VerdryxError",
    "UsageError",
    "EvalSetError",
    "StoreError",
    "ModelCallError",
]


#: Names kept resolvable for code written against 0.2, now where they belong (not in
#: `__all__`): `Evaluation` is a face author's (`verdryx_core.face`).
_MOVED: Final = {"Evaluation": "verdryx_core.face"}


__getattr__ = first_use(__name__, {**_HOMES, **_MOVED})


def __dir__() -> list[str]:
    return sorted(__all__)
