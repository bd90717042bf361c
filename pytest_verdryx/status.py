"""`-v` shows each case's score beside its outcome (`PASSED (score 0.950)`), from the score
the plugin put on the report, so it also works on the xdist controller."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

__all__ = ["pytest_report_teststatus"]


@pytest.hookimpl(wrapper=True)
def pytest_report_teststatus(
    report: pytest.TestReport, config: pytest.Config
) -> Generator[None, Any, Any]:
    result = yield
    if result is None or report.when != "call" or config.get_verbosity() <= 0:
        return result
    score = next((value for name, value in report.user_properties if name == "verdryx.score"), None)
    if not score:  # not a verdryx case, or unmeasured (its reason is shown already)
        return result
    category, letter, word = result
    shown = f"(score {float(str(score)):.3f})"
    if isinstance(word, tuple):
        return category, letter, (f"{word[0]} {shown}", word[1])
    return category, letter, f"{word} {shown}" if word else word
