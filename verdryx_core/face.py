"""What a face is built from: the types a front end like the pytest plugin or the `verdryx`
command drives the core with (docs/python-api.md, "Writing a face"). A notebook or a script
needs none of them: `verdryx_core` itself names what they call.

A face scores one case at a time (`Evaluation.work`, `Evaluation.scorer`), may prefetch in
the bounded pool (`start_prefetch`, `Prefetch`), concludes the run once (`conclude` with its
own `flags`, `MissingBaseline` for a baseline named and not found) and words refusals in its
own flags (`VerdryxError.worded`, `CLI_FLAGS`, `PYTHON_FLAGS`). Names are imported on first
use, as `verdryx_core`'s are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from verdryx_core.lazy_names import first_use, renamed

if TYPE_CHECKING:
    from verdryx_core.conclusion import MissingBaseline, SavedBaseline
    from verdryx_core.errors import CLI_FLAGS, PYTHON_FLAGS, word_hint
    from verdryx_core.evaluation.evaluate import Evaluation
    from verdryx_core.evaluation.prefetch import Prefetch, Work, prefetch_all, start_prefetch
    from verdryx_core.gating.comparison import Comparison
    from verdryx_core.gating.drift import DriftStats
    from verdryx_core.untrusted.text import printable

#: Public name -> the module that defines it.
_HOMES: Final = {
    "CLI_FLAGS": "verdryx_core.errors",
    "Comparison": "verdryx_core.gating.comparison",
    "DriftStats": "verdryx_core.gating.drift",
    "Evaluation": "verdryx_core.evaluation.evaluate",
    "MissingBaseline": "verdryx_core.conclusion",
    "PYTHON_FLAGS": "verdryx_core.errors",
    "Prefetch": "verdryx_core.evaluation.prefetch",
    "SavedBaseline": "verdryx_core.conclusion",
    "Work": "verdryx_core.evaluation.prefetch",
    "prefetch_all": "verdryx_core.evaluation.prefetch",
    "printable": "verdryx_core.untrusted.text",
    "start_prefetch": "verdryx_core.evaluation.prefetch",
    "word_hint": "verdryx_core.errors",
}

__all__ = [
    "CLI_FLAGS",
    "PYTHON_FLAGS",
    "Comparison",
    "DriftStats",
    "Evaluation",
    "MissingBaseline",
    "Prefetch",
    "SavedBaseline",
    "Work",
    "prefetch_all",
    "printable",
    "start_prefetch",
    "word_hint",
]


#: Old names, kept resolvable with a DeprecationWarning (docs/python-api.md, "Renamed").
__getattr__ = renamed(
    __name__, {"DriftReport": "DriftStats", "GateResult": "Comparison"}, first_use(__name__, _HOMES)
)


def __dir__() -> list[str]:
    return sorted(__all__)
