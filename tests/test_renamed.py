"""Renamed public names still resolve, each with a DeprecationWarning naming the new one
(docs/python-api.md, "Renamed"); the new names are the ones exported."""

from __future__ import annotations

import importlib
import warnings
from datetime import UTC, datetime

import pytest

import verdryx_core.face
from verdryx_core.gating.comparison import Comparison
from verdryx_core.runs import Baseline

RENAMED = [
    ("verdryx_core.face", "DriftReport", "DriftStats"),
    ("verdryx_core.face", "GateResult", "Comparison"),
    ("verdryx_core.gating.drift", "DriftReport", "DriftStats"),
    ("verdryx_core.gating.comparison", "GateResult", "Comparison"),
    ("verdryx_core.targets", "TargetAnswer", "TargetCall"),
    ("verdryx_core.targets.runner", "TargetAnswer", "TargetCall"),
    ("verdryx_core.evaluation", "TargetOutput", "TargetSource"),
    ("verdryx_core.evaluation.target_output", "TargetOutput", "TargetSource"),
]


@pytest.mark.parametrize(("module", "old", "new"), RENAMED)
def test_an_old_name_warns_and_is_the_new_one(module: str, old: str, new: str) -> None:
    found = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=rf"{module}\.{old} is renamed {new}"):
        value = getattr(found, old)
    assert value is getattr(found, new)
    assert old not in getattr(found, "__all__", ())


def test_the_new_names_resolve_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert verdryx_core.face.DriftStats.__name__ == "DriftStats"
        assert verdryx_core.face.Comparison is Comparison
    with pytest.raises(AttributeError):
        verdryx_core.face.NoSuchName  # noqa: B018


def test_a_comparisons_statistics_keep_their_old_name() -> None:
    baseline = Baseline(
        id="b", label="v1", run_id="r", mean=1.0, created_at=datetime.now(UTC), model="m"
    )
    comparison = Comparison(
        baseline=baseline, stats=None, matched=0, added=(), removed=(), changed=(), deltas=()
    )
    with pytest.warns(DeprecationWarning, match=r"Comparison\.report is renamed Comparison\.stats"):
        assert comparison.report is None
