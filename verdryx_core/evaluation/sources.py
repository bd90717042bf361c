"""Where a case's output comes from: one seam, several sources.

A case with a recorded output is graded on that output (one fixed measurement); any other
case asks a live source: the model under evaluation (`ModelSource`), or the agent under test
(`verdryx_core.evaluation.target_output.TargetSource`, which hands cases without a target to
the model).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from verdryx_core.cases import CaseOutput, EvalCase
from verdryx_core.errors import UsageError
from verdryx_core.graders.base import GradeContext

if TYPE_CHECKING:
    from verdryx_core.llm.base import ModelAdapter

__all__ = ["ModelSource", "OutputSource", "Produced", "RecordedSource", "source_for", "target_of"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Produced:
    """One output and what producing it cost."""

    output: Any
    tokens: int = 0
    cost_usd: float = 0.0
    #: Seconds the live call took, when the source measures it (targets do).
    latency_s: float | None = None


class OutputSource(Protocol):
    #: True when each call is a new sample (repeats are worth taking), False for a fixed output.
    samples: bool
    #: True when producing an output goes over the network (worth prefetching in the pool).
    remote: bool

    def produce(
        self, case: EvalCase, *, repeat: int, context: GradeContext | None = None
    ) -> Produced: ...


class RecordedSource:
    """The output written in the eval set (an outcome_tag case's prompt is its outcome; a
    contract case reads its workspace itself)."""

    samples = False
    remote = False

    def produce(
        self, case: EvalCase, *, repeat: int, context: GradeContext | None = None
    ) -> Produced:
        if case.output is not None:
            return Produced(output=case.output)
        if case.grader == "outcome_tag":
            return Produced(output=case.prompt)
        return Produced(output=None)


class ModelSource:
    """The model under evaluation's completion: its text; its tool calls for a tool_trace
    case; both (`CaseOutput`) for a multi-check case with a tool_trace check."""

    samples = True
    remote = True

    def __init__(self, adapter: ModelAdapter) -> None:
        self.adapter = adapter

    def produce(
        self, case: EvalCase, *, repeat: int, context: GradeContext | None = None
    ) -> Produced:
        if case.user is not None:
            raise UsageError(
                f"case {case.id!r}: field 'user': a simulated user talks to an agent under "
                'test, and no target is in effect (docs/scenarios.md, "Simulated users")',
                hint="name the agent under test with {target}",
            )
        # Imported with the first case the model answers: recorded outputs never ask it.
        from verdryx_core.llm.call_request import conversation_arguments

        # The case's system prompt and conversation go as written (docs/evalset-reference.md).
        conversation = conversation_arguments(case.system, case.messages)
        if case.calls_tools:
            if not case.tools:
                # A target owns its tools, so a file need not list them; the model must be
                # offered some (docs/graders.md, "Tool traces").
                raise UsageError(
                    f"case {case.id!r}: field 'tools': its tool calls are graded and no "
                    "target is in effect, so the model is asked, and the case offers it no "
                    "tools; add 'tools' to the case (or the set's defaults), or run it "
                    "against a target",
                    hint="name the agent under test with {target}",
                )
            _refuse_dotted_names(case)
            completion = self.adapter.complete_with_tools(
                case.prompt, list(case.tools), repeat=repeat, **conversation
            )
            calls = tuple(completion.tool_calls)
            return Produced(
                # A multi-check case grades the whole answer: its text and its calls.
                output=(
                    list(calls)
                    if case.grader == "tool_trace"
                    else CaseOutput(text=completion.text, tool_calls=calls)
                ),
                tokens=completion.tokens,
                cost_usd=completion.cost_usd,
            )
        completion = self.adapter.complete(case.prompt, repeat=repeat, **conversation)
        return Produced(
            output=completion.text, tokens=completion.tokens, cost_usd=completion.cost_usd
        )


def _refuse_dotted_names(case: EvalCase) -> None:
    """Both providers' APIs refuse a '.' in a tool name, which an eval set may hold for a
    target or a recorded output (docs/graders.md, "Tool traces")."""
    for index, tool in enumerate(case.tools or ()):
        name = str(tool.get("name", ""))
        if "." in name:
            raise UsageError(
                f"case {case.id!r}: field 'tools[{index}].name': {name!r} holds a '.', which "
                "the model's API refuses in a tool name; rename the tool (for example with "
                "'_'), or run the case against a target, which calls its own tools",
                hint="name the agent under test with {target}",
            )


_RECORDED = RecordedSource()


def source_for(case: EvalCase, live: OutputSource | None) -> OutputSource:
    """The recorded output when the case has one (or needs none), else the live source."""
    if not case.needs_model:
        return _RECORDED
    if live is None:
        raise RuntimeError(f"case {case.id!r} needs a model and none is configured")
    return live


def target_of(case: EvalCase, default: str | None) -> str | None:
    """The target in effect for `case`: its eval set's own, else the run's (whose output
    `TargetSource` asks the agent for)."""
    own = getattr(case, "target", None)
    return own or default
