"""A score becomes an item's pytest outcome: passed, failed (with a readable report),
xfailed (below the bar in the baseline too) or skipped (unmeasured). Whether it passed was
decided once, by the evaluation (`Score.passed`, against `Score.bar`); this only maps it."""

from __future__ import annotations

import difflib

import pytest

from pytest_verdryx.context import SessionContext
from verdryx_core.cases import EvalCase
from verdryx_core.evaluation import stability
from verdryx_core.runs import Score
from verdryx_core.untrusted.text import printable

__all__ = ["CaseBelowBar", "failure_text", "outcome_for"]


class CaseBelowBar(Exception):
    """Raised by an item whose score is below its pass bar; rendered by `repr_failure`."""

    def __init__(self, text: str) -> None:
        self.text = text
        super().__init__(text)


def outcome_for(
    score: Score,
    context: SessionContext,
    case: EvalCase | None,
    *,
    raise_below: bool = True,
) -> None:
    """Turn a score into a pytest outcome. Items raise `CaseBelowBar` for
    their own `repr_failure`; a custom test (`raise_below=False`) fails with the text alone,
    since its traceback would only show the plugin's internals."""
    if score.value is None:
        pytest.skip(printable(f"unmeasured: {score.unmeasured}", keep_newlines=False))
    if score.passed:
        return
    assert score.bar is not None  # a measured score is decided against its bar
    bar = score.bar
    base = context.excuse(score)
    if base is not None:
        # `pytrace=False`: a custom case's report shows the reason, not the plugin's frames.
        raise pytest.xfail.Exception(
            f"score {score.value:.3f} below the bar {bar:g}, as in baseline "
            f"{context.baseline_name} ({base.value:.3f})",
            pytrace=False,
        )
    text = failure_text(score, bar, case)
    if not raise_below:
        pytest.fail(text, pytrace=False)
    raise CaseBelowBar(text)


def failure_text(score: Score, bar: float, case: EvalCase | None) -> str:
    lines = [
        f"{score.key} scored {score.value:.3f}, below the pass bar {bar:g}  "
        f"[grader: {score.grader}]"
    ]
    if score.samples:
        shown = ", ".join(f"{value:.2f}" for value in score.samples)
        lines.append(f"samples: {shown}  ({stability(score.samples, bar)})")
    expected = score.expected
    output = score.output
    if score.grader == "exact" and expected is not None and output is not None:
        lines.append(f"expected: {expected!r}")
        lines.append(f"output:   {output!r}")
        diff = difflib.unified_diff(
            expected.splitlines(keepends=True) or [""],
            output.splitlines(keepends=True) or [""],
            fromfile="expected",
            tofile="output",
            lineterm="",
        )
        lines.append("diff:")
        lines.extend("  " + line.rstrip("\n") for line in diff)
    else:
        label = {
            "regex": "pattern",
            "llm_judge": "rubric",
            "tool_trace": "expected tools",
            "contract": "contract",
        }.get(score.grader, "expected")
        if expected is not None:
            lines.append(f"{label}: {expected}")
        if score.grader == "outcome_tag" and case is not None:
            lines.append(f"recorded outcome: {case.prompt!r}")
        elif output is not None:
            lines.append(f"output: {output}")
    if score.reason:
        lines.append(f"reason: {score.reason}")
    # An agent's output may hold NUL or terminal escapes: shown escaped, never raw
    # (verdryx_core.untrusted.text).
    return printable("\n".join(lines))
