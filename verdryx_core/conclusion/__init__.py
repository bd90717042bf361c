"""The conclusion of a run: stored, judged against its baseline, saved as one, and whether it
fails and why, decided once for every face (docs/outcomes.md, docs/cli.md "Exit codes")."""

from verdryx_core.conclusion.conclude import (
    EXITS,
    BaselineRefusedError,
    Conclusion,
    Exit,
    Keep,
    SavedBaseline,
    conclude,
    save_baseline,
)
from verdryx_core.conclusion.policy import (
    FAIL_ON,
    MissingBaseline,
    RunPolicy,
    Selection,
    Standing,
    edited,
    standing,
)

__all__ = [
    "EXITS",
    "FAIL_ON",
    "BaselineRefusedError",
    "Conclusion",
    "Exit",
    "Keep",
    "MissingBaseline",
    "RunPolicy",
    "SavedBaseline",
    "Selection",
    "Standing",
    "conclude",
    "edited",
    "save_baseline",
    "standing",
]
