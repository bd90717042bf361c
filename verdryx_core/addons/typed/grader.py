"""`typed`: a typed verdict from typryx on whether the output met the task.

The service gets `{"task": prompt, "final_answer": output}` under the client's template and
the run id. A yes/no (`noul`) answer scores p(true); a `score` answer scores the
probability-weighted mean level over the highest level, in [0, 1]. A `choice` template has
options with no order, so no score: it is refused. An unanswered verdict is unmeasured,
never a 0.0, when the service says the fault is its own (`backend_error`); for any other
reason (it timed out on this output, its probabilities could not be read) the output scores
0 (docs/outcomes.md, "What counts as unmeasured"). When the case carries a label
(`expected`), it is checked against the answer's type and posted as the outcome for that
answer, so the service can calibrate.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Mapping
from typing import Any, ClassVar, Final, final

from verdryx_core.addons.errors import TypedGradeError
from verdryx_core.addons.typed.client import DEFAULT_TEMPLATE, TypryxClient, read_key_file
from verdryx_core.cases import EvalCase
from verdryx_core.errors import ModelCallError, UsageError
from verdryx_core.graders.base import Grade, GradeContext
from verdryx_core.graders.plugins import GraderUnavailable
from verdryx_core.limits import cost_problem

__all__ = ["LABEL_SOURCE", "TypedGrader", "label_truth", "score_value"]


LABEL_SOURCE: Final = "verdryx:evalset"
#: typryx checks its probabilities sum to 1 within 1e-6; rounding may leave p just past 1.
_TOLERANCE: Final = 1e-6
_YES: Final = frozenset({"true", "yes"})
_NO: Final = frozenset({"false", "no"})
#: Unanswered reasons that are the service's own failing, not about the output: such a case
#: is unmeasured (docs/typed-grader.md, "Unanswered verdicts").
_SERVICE_FAULTS: Final = frozenset({"backend_error"})


def _malformed(template: str, why: str) -> ModelCallError:
    return ModelCallError(
        f"typryx answered a malformed verdict for template {template!r}: {why}; "
        "is the service a compatible typryx version?"
    )


def _probability(value: Any, template: str, label: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _malformed(template, f"probability of {label!r} is {value!r}, not a number")
    if not -_TOLERANCE <= value <= 1 + _TOLERANCE:
        raise _malformed(template, f"probability of {label!r} is {value!r}, outside [0, 1]")
    return min(1.0, max(0.0, float(value)))


def _score_levels(answer: Mapping[str, Any], template: str) -> list[float]:
    """The probabilities of a score answer, by level 0..n-1."""
    probabilities = answer.get("probabilities")
    if not isinstance(probabilities, Mapping) or not probabilities:
        raise _malformed(template, "a score answer without probabilities")
    expected = {str(level) for level in range(len(probabilities))}
    if set(probabilities) != expected:
        raise _malformed(
            template,
            f"score levels {sorted(probabilities)!r} are not 0..{len(probabilities) - 1}",
        )
    if len(probabilities) < 2:
        raise _malformed(template, "a score template with one level has nothing to rank")
    return [
        _probability(probabilities[str(level)], template, str(level))
        for level in range(len(probabilities))
    ]


def score_value(answer: Mapping[str, Any], template: str) -> tuple[float, str]:
    """(value in [0, 1], reason) for an answered verdict; refuses a type with no order."""
    kind = answer.get("type")
    if kind == "noul":
        probabilities = answer.get("probabilities")
        if not isinstance(probabilities, Mapping) or "true" not in probabilities:
            raise _malformed(template, "a yes/no answer without probabilities['true']")
        value = _probability(probabilities["true"], template, "true")
        return value, f"p(true) = {value:.4g}"
    if kind == "score":
        levels = _score_levels(answer, template)
        top = len(levels) - 1
        value = min(1.0, math.fsum(level * p for level, p in enumerate(levels)) / top)
        return value, f"expected level {value * top:.4g} of {top} (levels 0..{top})"
    if kind == "choice":
        raise TypedGradeError(
            f"typed template {template!r} is a choice template: its options have no order, so "
            "no score in [0, 1] can be read from them",
            hint="use a yes/no (noul) or score template, for example {typed_template} "
            "eval.outcome_met",
        )
    raise _malformed(template, f"unrecognized answer type {kind!r} (expected noul or score)")


def label_truth(label: str, answer: Mapping[str, Any], template: str, case_id: str) -> bool | int:
    """The truth to post for a case's label, checked against the answer's type first."""
    kind = answer.get("type")
    text = label.strip()
    if kind == "noul":
        lowered = text.lower()
        if lowered in _YES or lowered in _NO:
            return lowered in _YES
        raise TypedGradeError(
            f"case {case_id!r}: label {label!r} is not a yes or a no, and template {template!r} "
            "is yes/no; set expected to 'true' or 'false' (or leave it out)"
        )
    if kind == "score":
        levels = len(answer.get("probabilities") or ())
        top = levels - 1
        if not (text.isdecimal() and text.isascii()) or not 0 <= int(text) <= top:
            raise TypedGradeError(
                f"case {case_id!r}: label {label!r} is not a level of template {template!r}; "
                f"set expected to a decimal integer from 0 to {top} (or leave it out)"
            )
        return int(text)
    raise TypedGradeError(
        f"case {case_id!r}: a label cannot be posted for template {template!r} of type {kind!r}"
    )


@final
class TypedGrader:
    """Grades `typed` cases through a `TypryxClient`; safe to share between threads."""

    kind: ClassVar[str] = "typed"
    #: Grading asks the service: prefetched, in the bounded pool.
    remote: ClassVar[bool] = True
    calls: ClassVar[str] = "typed service calls"

    def __init__(self, client: TypryxClient) -> None:
        self.client = client
        self._lock = threading.Lock()
        #: The type (and score levels) of the first answer: later cases are checked against it
        #: before asking, so a choice template or a label that cannot fit spends nothing more.
        self._shape: Mapping[str, Any] | None = None

    def __repr__(self) -> str:
        return f"TypedGrader({self.client!r})"

    @classmethod
    def for_run(cls, settings: Any) -> TypedGrader:
        """The grader of one run, from its `grader_options["typed"]` (`typed_options`): the
        service URL, the key file and the template (docs/typed-grader.md)."""
        options = settings.grader_options.get("typed") or {}
        if not options.get("url"):
            raise GraderUnavailable(
                "typed cases need the typed grading service: pass {typed_url} URL "
                "(and a key file with {typed_key_file} or $VERDRYX_TYPRYX_KEY_FILE)"
            )
        if not options.get("key_file"):
            raise UsageError(
                "a typed grading service URL was given with no key",
                hint="pass {typed_key_file} PATH or set $VERDRYX_TYPRYX_KEY_FILE",
            )
        client = TypryxClient(
            options["url"],
            read_key_file(options["key_file"]),
            template=options.get("template") or DEFAULT_TEMPLATE,
            timeout=settings.call_timeout,
        )
        return cls(client)

    def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Grade:
        template = self.client.template
        with self._lock:
            shape = self._shape
        if shape is not None:
            self._check(case, shape, template)
        answer = self.client.ask(
            {"task": case.prompt, "final_answer": _text(output)}, context.run_id or None
        )
        cost = _cost(answer, template)
        answer_id = answer.get("answer_id")
        if answer.get("unanswered"):
            reason = answer.get("reason") or "no reason given"
            why = f"typryx did not answer ({reason}; answer_id {answer_id})"
            if reason in _SERVICE_FAULTS:
                return Grade.unmeasured_because(why, cost_usd=cost)
            # Any other reason is about this output (it timed out on it, its probabilities
            # could not be read): the output's failure, never unmeasured (docs/outcomes.md).
            return Grade.output_failure(why, cost_usd=cost)
        if shape is None and answer.get("type") in ("noul", "score", "choice"):
            with self._lock:
                self._shape = {
                    "type": answer.get("type"),
                    "probabilities": dict.fromkeys(answer.get("probabilities") or ()),
                }
        value, why = score_value(answer, template)
        if case.expected is not None:
            truth = label_truth(case.expected, answer, template, case.id)
            if not isinstance(answer_id, str) or not answer_id:
                raise _malformed(template, "an answer without answer_id, so no label can be posted")
            self.client.post_outcome(answer_id, truth, LABEL_SOURCE)
            why += f"; label {truth!r} posted"
        version = answer.get("template_version")
        name = f"{template} v{version}" if version else template
        return Grade(
            value=value, reason=f"typryx {name}: {why} (answer_id {answer_id})", cost_usd=cost
        )

    @staticmethod
    def _check(case: EvalCase, shape: Mapping[str, Any], template: str) -> None:
        if shape.get("type") == "choice":
            score_value(shape, template)  # raises the refusal
        if case.expected is not None:
            label_truth(case.expected, shape, template, case.id)


def _text(output: Any) -> str:
    """The output as the text the service reads; a recorded list or object as JSON."""
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    return json.dumps(output, ensure_ascii=False, default=str)


def _cost(answer: Mapping[str, Any], template: str) -> float:
    cost = answer.get("cost_usd", 0.0)
    if isinstance(cost, bool) or not isinstance(cost, (int, float)) or not math.isfinite(cost):
        raise _malformed(template, f"cost_usd {cost!r} is not a number")
    if cost < 0:
        raise _malformed(template, f"cost_usd {cost!r} is negative")
    problem = cost_problem(cost)  # one verdict's cost, bounded as any call's (docs/store.md)
    if problem is not None:
        raise _malformed(template, f"cost_usd: {problem}")
    return float(cost)
