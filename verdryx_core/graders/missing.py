"""Why a case whose grader is not configured for this run is skipped, naming the flag that
enables it in the words of the face that runs it (`flags`, see verdryx_core.errors)."""

from __future__ import annotations

from collections.abc import Mapping

from verdryx_core.errors import word_hint

__all__ = ["missing_grader_reason"]


def missing_grader_reason(kind: str, flags: Mapping[str, str]) -> str:
    """Why a case whose grader is not configured is skipped, naming the face's flag."""
    if kind == "llm_judge":
        return word_hint(
            "llm_judge cases need a judge model and are never paid for by default: "
            "pass {judge} MODEL ({judge} stub names the offline stub judge)",
            flags,
        )
    return f"no grader is configured for kind {kind!r}"
