"""benchmarks/gate_coverage.py's rates carry Wilson intervals: its own small formula, checked
against scipy's (docs/statistics.md, "The alpha budget")."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def coverage() -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))  # the script imports its sibling benchlib
    try:
        spec = importlib.util.spec_from_file_location(
            "gate_coverage", BENCHMARKS / "gate_coverage.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCHMARKS))


@given(n=st.integers(1, 5_000), share=st.floats(0, 1))
def test_the_wilson_interval_is_scipys(coverage: ModuleType, n: int, share: float) -> None:
    hits = round(share * n)
    low, high = coverage.wilson(hits, n)
    expected = stats.binomtest(hits, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert low == pytest.approx(expected.low, abs=1e-9)
    assert high == pytest.approx(expected.high, abs=1e-9)
