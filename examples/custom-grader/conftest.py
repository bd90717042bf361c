"""A custom grader, registered for the eval sets in this folder.

`keywords` scores the fraction of the case's keywords (its `options.keywords`) found in the
output, ignoring case. Registering it here makes `"grader": "keywords"` valid in any eval set
file of this session; a package would instead declare it under the `verdryx.graders` entry
point group (see docs/graders.md).
"""

from __future__ import annotations

from typing import Any

from verdryx_core.cases import EvalCase
from verdryx_core.graders import Grade, GradeContext, register_grader


class KeywordsGrader:
    kind = "keywords"
    #: Its own pass bar: every keyword must be there.
    default_min_score = 1.0

    def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Grade:
        keywords = list((case.options.get("options") or {}).get("keywords") or ())
        if not keywords:
            return Grade.unmeasured_because("no keywords in options.keywords")
        text = str(output or "").casefold()
        missing = [word for word in keywords if word.casefold() not in text]
        value = 1 - len(missing) / len(keywords)
        return Grade(value=value, reason=f"missing: {', '.join(missing)}" if missing else None)


# replace=True: pytest may import this conftest more than once in one process.
register_grader("keywords", KeywordsGrader(), default_min_score=1.0, replace=True)
