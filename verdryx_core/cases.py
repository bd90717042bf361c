"""What an eval set holds: its cases (`EvalCase`), their checks and tool calls, and the
identity cases are compared by over time (`case_key`).

All are frozen; each crosses process and file boundaries through `to_dict` / `from_dict`,
which produce and accept only JSON-ready builtins (xdist workers send these).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from verdryx_core.transcript import TRANSCRIPT_HEAD, quoted
from verdryx_core.untrusted.text import printable_json

__all__ = [
    "CHECKS_GRADER",
    "COMBINES",
    "DEFAULT_OUTCOME_SCORES",
    "DIALOGUE_ENDINGS",
    "GRADER_KINDS",
    "MODEL_FREE_GRADERS",
    "OPTION_FIELDS",
    "TOOL_EXPECTATIONS",
    "CaseOutput",
    "Check",
    "EvalCase",
    "ToolCall",
    "case_key",
    "declare_model_free",
    "expected_text",
    "message_lines",
    "output_text",
    "transcript_text",
]

#: Declaration order is the order error messages list them in.
GRADER_KINDS: Final = (
    "exact",
    "regex",
    "outcome_tag",
    "llm_judge",
    "tool_trace",
    "contains",
    "icontains",
    "json",
    "numeric",
    "f1",
    "exec",
    "final_state",
)

#: The grader kind of a case graded by several `checks` (never written in a file).
CHECKS_GRADER: Final = "checks"

#: How a multi-check case's check scores make its score (docs/scenarios.md).
COMBINES: Final = ("mean", "all")

#: Grader options a case (or a check, or a set's `defaults`) may carry as fields of its own;
#: they travel on `EvalCase.options`. `options` itself is the free-form object of a custom
#: grader.
OPTION_FIELDS: Final = (
    "ignore_case",
    "normalize_whitespace",
    "ignore_punctuation",
    "unicode_normalize",
    "schema",
    "fields",
    "tolerance",
    "relative",
    "argument_match",
    "tool_match",
    "tests",
    "command",
    "timeout",
    "check_types",
    "options",
)

#: The fields a tool_trace case (or check) gives its expectation in, one of them.
TOOL_EXPECTATIONS: Final = ("expected_tools", "expected_tool_calls", "expected_tool_calls_any")

#: Graders whose output never comes from the model under evaluation: the built-in
#: `outcome_tag`, and plugged-in graders that declare it (`declare_model_free`, called when
#: the grader is loaded; verdryx_core.graders.plugins).
MODEL_FREE_GRADERS: Final[set[str]] = {"outcome_tag"}


def declare_model_free(grader: str) -> None:
    """`grader`'s cases read their output from the world (a workspace), never the model."""
    MODEL_FREE_GRADERS.add(grader)


DEFAULT_OUTCOME_SCORES: Final[Mapping[str, float]] = {
    "case_resolved": 1.0,
    "escalated": 0.5,
    "abandoned": 0.0,
}


def _tool_calls_out(calls: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [dict(call) for call in calls]


def case_key(eval_set_id: str, case_id: str) -> str:
    """The identity cases are compared by over time: eval set id and case id."""
    return f"{eval_set_id}::{case_id}"


def _canonical_hash(payload: object) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One tool call: its name and the arguments it was called with (None: not recorded).

    `str()` is its compact JSON, so a trace joined for display reads as JSON objects.
    `result` is what the tool answered, when a target reports it (any JSON value; None:
    not reported): a dialogue's later turns see it (docs/scenarios.md, "Simulated users").
    It is not what a trace is graded on, so it is neither compared nor written by
    `to_dict` or `str()`.
    """

    name: str
    arguments: Mapping[str, Any] | None = None
    result: Any = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name}
        if self.arguments is not None:
            data["arguments"] = dict(self.arguments)
        return data

    @classmethod
    def from_value(cls, value: Any, *, made: bool = False) -> ToolCall:
        """From a name, a `{"name", "arguments"}` mapping, or a ToolCall. A call `made` (a
        recorded or answered one) written as an object without arguments had none, `{}`; an
        expected one without arguments leaves them unchecked, None. A bare name is None."""
        if isinstance(value, ToolCall):
            return value
        if isinstance(value, Mapping):
            arguments = value.get("arguments")
            if isinstance(arguments, Mapping):
                return cls(name=str(value["name"]), arguments=dict(arguments))
            return cls(name=str(value["name"]), arguments={} if made else None)
        return cls(name=str(value))

    def __str__(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    """One check of a multi-check case: a grader, what it expects, its options and weight."""

    grader: str
    expected: str | None = None
    rubric: str | None = None
    weight: float = 1.0
    options: Mapping[str, Any] = field(default_factory=dict)
    #: A tool_trace check's expectation (one of the three), as on a tool_trace case.
    expected_tools: tuple[str, ...] | None = None
    expected_tool_calls: tuple[Mapping[str, Any], ...] | None = None
    expected_tool_calls_any: tuple[tuple[Mapping[str, Any], ...], ...] | None = None
    #: What part of the result it reads (`output`, `tool_calls`, `metadata.<path>`,
    #: `output.<path>`); None: its grader's own part (`CaseOutput.part`).
    on: str | None = None

    @property
    def reads(self) -> str:
        """The part it reads, its default filled in."""
        if self.on is not None:
            return self.on
        return "tool_calls" if self.grader == "tool_trace" else "output"

    #: A contract check's criteria (a case with a workspace checks them against it).
    contract: Mapping[str, Any] | None = None
    #: This check's own pass bar; None: its grader's own (tool_trace, final_state and exec
    #: 1.0), or none. A case passes only when every check with a bar reaches it
    #: (docs/graders.md, "Multi-check cases").
    min_score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"grader": self.grader}
        if self.on is not None:
            data["on"] = self.on
        if self.min_score is not None:
            data["min_score"] = self.min_score
        if self.expected is not None:
            data["expected"] = self.expected
        if self.rubric is not None:
            data["rubric"] = self.rubric
        if self.weight != 1.0:
            data["weight"] = self.weight
        if self.expected_tools is not None:
            data["expected_tools"] = list(self.expected_tools)
        if self.expected_tool_calls is not None:
            data["expected_tool_calls"] = _tool_calls_out(self.expected_tool_calls)
        if self.expected_tool_calls_any is not None:
            data["expected_tool_calls_any"] = [
                _tool_calls_out(calls) for calls in self.expected_tool_calls_any
            ]
        if self.contract is not None:
            data["contract"] = dict(self.contract)
        data.update(self.options)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Check:
        names = data.get("expected_tools")
        calls = data.get("expected_tool_calls")
        calls_any = data.get("expected_tool_calls_any")
        return cls(
            grader=data["grader"],
            expected=data.get("expected"),
            rubric=data.get("rubric"),
            weight=float(data.get("weight", 1.0)),
            options={name: data[name] for name in OPTION_FIELDS if name in data},
            expected_tools=tuple(names) if names is not None else None,
            expected_tool_calls=tuple(calls) if calls is not None else None,
            expected_tool_calls_any=(
                tuple(tuple(seq) for seq in calls_any) if calls_any is not None else None
            ),
            on=data.get("on"),
            contract=data.get("contract"),
            min_score=None if data.get("min_score") is None else float(data["min_score"]),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class CaseOutput:
    """One run of the agent, whole: its reply text, the tool calls it made and the metadata
    it reported. A multi-check case's checks each read their part of it (docs/scenarios.md,
    "Checks over the whole result"): by default tool_trace the calls, every other grader the
    text. A simulated dialogue's (docs/scenarios.md, "Simulated users") is all of it: the
    final reply, the calls of every turn, the end state the target reported, and the
    transcript, which a judge reads."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    metadata: Mapping[str, Any] | None = None
    #: The end state the target reported (`final_state` grades it); None: none reported.
    state: Any = None
    #: A simulated dialogue's messages, in the neutral form of a case's `messages`.
    transcript: tuple[Mapping[str, Any], ...] | None = None
    #: Why the dialogue ended (`DIALOGUE_ENDINGS`).
    ended: str | None = None

    def __str__(self) -> str:
        return self.text

    def part_for(self, grader: str) -> Any:
        """What a check of `grader` grades by default."""
        if grader == "tool_trace":
            return list(self.tool_calls)
        if grader == "final_state":
            return self.state
        if grader == "llm_judge" and self.transcript is not None:
            return transcript_text(self.transcript, self.ended)
        return self.text


#: Why a simulated dialogue ended: the user said it was done, the agent said it was done,
#: or it reached the user block's `max_turns`.
DIALOGUE_ENDINGS: Final = ("user_done", "agent_done", "max_turns")
_ENDING_TEXT: Final[Mapping[str, str]] = {
    "user_done": "the user is done",
    "agent_done": "the agent ended the dialogue",
    "max_turns": "max_turns reached",
}


def transcript_text(messages: Iterable[Mapping[str, Any]], ended: str | None = None) -> str:
    """A dialogue as a reader (or a judge) reads it, its roles kept as data
    (`verdryx_core.transcript`): one `role: "words"` line per turn, the words a JSON string
    whatever they say, an assistant's calls each on a line of its own under it, then how it
    ended. Untrusted text: whoever prints it passes it through the printable rule."""
    lines = [TRANSCRIPT_HEAD, *message_lines(messages, quoted)]
    if ended is not None:
        lines.append(f"[ended: {_ENDING_TEXT.get(ended, ended)}]")
    return "\n".join(lines)


def message_lines(messages: Iterable[Mapping[str, Any]], words: Any) -> list[str]:
    """One line per message, `words` writing a turn's text (and a tool's name)."""
    lines = []
    for message in messages:
        role = str(message.get("role", ""))
        if role == "tool":
            lines.append(f"tool {words(str(message.get('name', '')))}: {words(_text(message))}")
            continue
        # A turn of calls alone still has its role line: its calls are read under it, never
        # under the turn before (another speaker's).
        lines.append(f"{role}: {words(_text(message))}")
        for call in message.get("tool_calls") or ():
            lines.append(f"  -> {printable_json(str(ToolCall.from_value(call, made=True)))}")
    return lines


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    return "" if content is None else str(content)


@dataclass(frozen=True, slots=True, kw_only=True)
class EvalCase:
    """One case of an eval set, validated by `verdryx_core.evalsets.load` (set defaults applied)."""

    id: str
    #: What the model is asked; when a file gives `messages` and no `prompt`, the content of
    #: the last user message.
    prompt: str
    grader: str = "exact"
    #: The grader's expectation as text (a numeric or json expectation as its JSON text).
    expected: str | None = None
    rubric: str | None = None
    tools: tuple[Mapping[str, Any], ...] | None = None
    expected_tools: tuple[str, ...] | None = None
    #: `[{"name", "arguments"?}]`: the calls expected (arguments absent: not checked).
    expected_tool_calls: tuple[Mapping[str, Any], ...] | None = None
    #: Several acceptable call sequences; the best-scoring one counts.
    expected_tool_calls_any: tuple[tuple[Mapping[str, Any], ...], ...] | None = None
    #: A recorded output (str; for tool_trace a list of names or ToolCall) graded without a model.
    output: Any = None
    min_score: float | None = None
    #: Below its bar it fails the session whatever the verdict (docs/outcomes.md); not part
    #: of what the case measures, so not of its fingerprint.
    required: bool = False
    #: Cases sharing a source name one cluster; the gate resamples whole clusters
    #: (docs/statistics.md). A grouping, not what the case measures: not in its fingerprint.
    cluster: str | None = None
    #: A person's verdict on the recorded `output` (docs/calibrating-the-judge.md): "pass",
    #: "fail", "skip" or a number; not part of what the case measures.
    human_label: str | float | None = None
    tags: tuple[str, ...] = ()
    contract: Mapping[str, Any] | None = None
    #: Grader options (`OPTION_FIELDS`), as written on the case or inherited from the set.
    options: Mapping[str, Any] = field(default_factory=dict)
    #: A multi-check case's checks (then `grader` is "checks").
    checks: tuple[Check, ...] | None = None
    system: str | None = None
    messages: tuple[Mapping[str, Any], ...] | None = None
    metadata: Mapping[str, Any] | None = None
    #: `module:callable` of the agent under test (the set's value when the case has none).
    target: str | None = None
    #: How repeated samples make one value: `mean` (None: the default), `all`, `any`,
    #: `pass@K` (verdryx_core.evaluation.aggregate).
    aggregate: str | None = None
    #: A simulated user (`{"turns"}` or `{"persona", "goal"}`, with `max_turns`): the target
    #: is then driven through a dialogue (docs/scenarios.md, "Simulated users").
    user: Mapping[str, Any] | None = None
    #: How a multi-check case's check scores make its score (`COMBINES`).
    combine: str = "mean"
    #: The folder the agent starts from, as loaded (`verdryx_core.evalsets.workspace`):
    #: `{"folder": absolute path, "sha256"}` or `{"files": {path: text}, "sha256"}`.
    workspace: Mapping[str, Any] | None = None

    @property
    def calls_tools(self) -> bool:
        """Whether grading reads the tool calls of the output: a tool_trace case, or a
        multi-check case with a tool_trace check (the model is then offered `tools`)."""
        return self.grader == "tool_trace" or any(
            check.grader == "tool_trace" for check in self.checks or ()
        )

    @property
    def needs_model(self) -> bool:
        """Whether grading this case asks the model under evaluation for an output."""
        # A workspace case's agent acts in the workspace, so it is called whatever grades it.
        return self.output is None and (
            self.grader not in MODEL_FREE_GRADERS or self.workspace is not None
        )

    def fingerprint(self) -> str:
        """A content hash of what this case measures; the recorded output is what is measured,
        so it is left out (a new recording is a new measurement, not a different case)."""
        payload: dict[str, Any] = {
            # An outcome_tag case's prompt is its recorded outcome: the thing measured.
            "prompt": None if self.grader == "outcome_tag" else self.prompt,
            "grader": self.grader,
            "expected": self.expected,
            "rubric": self.rubric,
            "tools": list(self.tools) if self.tools is not None else None,
            "expected_tools": (
                list(self.expected_tools) if self.expected_tools is not None else None
            ),
            "contract": self.contract,
        }
        # Newer fields enter only when set, so a case written before them keeps its
        # fingerprint (and its baseline comparison).
        extra: dict[str, Any] = {
            "expected_tool_calls": (
                _tool_calls_out(self.expected_tool_calls)
                if self.expected_tool_calls is not None
                else None
            ),
            "expected_tool_calls_any": (
                [_tool_calls_out(calls) for calls in self.expected_tool_calls_any]
                if self.expected_tool_calls_any is not None
                else None
            ),
            "options": dict(self.options) or None,
            "checks": [c.to_dict() for c in self.checks] if self.checks is not None else None,
            "system": self.system,
            "messages": [dict(m) for m in self.messages] if self.messages is not None else None,
            "metadata": self.metadata,
            "target": self.target,
            "aggregate": self.aggregate,
            "user": dict(self.user) if self.user is not None else None,
            "combine": None if self.combine == "mean" else self.combine,
            # The content the agent starts from, never where it lies on this machine.
            "workspace": self.workspace["sha256"] if self.workspace is not None else None,
            # What changes the measurement though not the output: the pass bar (the pass
            # metric, the outcome) and the cluster (the interval). One line of a set's
            # `defaults` changing either is an edit of every case, never a silent change.
            "min_score": float(self.min_score) if self.min_score is not None else None,
            "cluster": self.cluster,
        }
        payload.update({name: value for name, value in extra.items() if value is not None})
        return _canonical_hash(payload)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "prompt": self.prompt, "grader": self.grader}
        for name in ("expected", "rubric", "min_score", "contract"):
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        if self.required:
            data["required"] = True
        if self.cluster is not None:
            data["cluster"] = self.cluster
        if self.human_label is not None:
            data["human_label"] = self.human_label
        if self.output is not None:
            data["output"] = (
                [_output_item(item) for item in self.output]
                if isinstance(self.output, list | tuple)
                else self.output
            )
        if self.tools is not None:
            data["tools"] = [dict(tool) for tool in self.tools]
        if self.expected_tools is not None:
            data["expected_tools"] = list(self.expected_tools)
        if self.expected_tool_calls is not None:
            data["expected_tool_calls"] = _tool_calls_out(self.expected_tool_calls)
        if self.expected_tool_calls_any is not None:
            data["expected_tool_calls_any"] = [
                _tool_calls_out(calls) for calls in self.expected_tool_calls_any
            ]
        if self.tags:
            data["tags"] = list(self.tags)
        data.update(self.options)
        if self.checks is not None:
            data["checks"] = [check.to_dict() for check in self.checks]
        for name in ("system", "metadata", "target", "user", "aggregate"):
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        if self.workspace is not None:
            data["workspace"] = dict(self.workspace)
        if self.messages is not None:
            data["messages"] = [dict(message) for message in self.messages]
        if self.combine != "mean":
            data["combine"] = self.combine
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvalCase:
        """Build from already-validated data (see `evalset.load_evalset` for validation)."""
        tools = data.get("tools")
        expected_tools = data.get("expected_tools")
        calls = data.get("expected_tool_calls")
        calls_any = data.get("expected_tool_calls_any")
        output = data.get("output")
        checks = data.get("checks")
        messages = data.get("messages")
        grader = data.get("grader") or (CHECKS_GRADER if checks is not None else "exact")
        prompt = data.get("prompt")
        if prompt is None:
            prompt = _last_user_content(messages or ())
        return cls(
            id=data["id"],
            prompt=prompt,
            grader=grader,
            expected=data.get("expected"),
            rubric=data.get("rubric"),
            tools=tuple(tools) if tools is not None else None,
            expected_tools=tuple(expected_tools) if expected_tools is not None else None,
            expected_tool_calls=tuple(calls) if calls is not None else None,
            expected_tool_calls_any=(
                tuple(tuple(seq) for seq in calls_any) if calls_any is not None else None
            ),
            output=_output_in(output, grader),
            min_score=data.get("min_score"),
            required=bool(data.get("required", False)),
            cluster=data.get("cluster"),
            human_label=data.get("human_label"),
            tags=tuple(data.get("tags") or ()),
            contract=data.get("contract"),
            options={name: data[name] for name in OPTION_FIELDS if name in data},
            checks=tuple(Check.from_dict(c) for c in checks) if checks is not None else None,
            system=data.get("system"),
            messages=tuple(messages) if messages is not None else None,
            metadata=data.get("metadata"),
            target=data.get("target"),
            aggregate=data.get("aggregate"),
            user=data.get("user"),
            combine=data.get("combine") or "mean",
            workspace=data.get("workspace"),
        )


def _last_user_content(messages: Iterable[Mapping[str, Any]]) -> str:
    contents = [str(m.get("content", "")) for m in messages if m.get("role") == "user"]
    return contents[-1] if contents else ""


def _output_item(item: Any) -> Any:
    return item.to_dict() if isinstance(item, ToolCall) else item


def _output_in(output: Any, grader: str) -> Any:
    if not isinstance(output, list | tuple):
        return output
    if grader == "tool_trace":
        # Recorded calls become ToolCall records: their text in a stored score is JSON.
        return [
            ToolCall.from_value(item, made=True) if isinstance(item, Mapping) else item
            for item in output
        ]
    return list(output)


def _call_text(item: Any) -> str:
    if isinstance(item, ToolCall | Mapping):
        return str(ToolCall.from_value(item, made=True))
    return str(item)


def _calls_text(calls: Iterable[Mapping[str, Any]]) -> str:
    return ", ".join(str(ToolCall.from_value(call)) for call in calls)


def output_text(output: Any) -> str | None:
    """How an output reads in a stored score (`Score.output`): a tool trace's calls as their
    JSON objects joined by ", " (names alone when only names are known), which `verdryx show
    --json` turns back into a list; an expectation of calls reads the same way, several
    acceptable lists separated by " | "; an object as its JSON text; a whole run's output
    (`CaseOutput`) as its text, then a line `[tool calls] ` and its calls; a simulated
    dialogue's as its transcript (`transcript_text`)."""
    if output is None:
        return None
    if isinstance(output, CaseOutput):
        if output.transcript is not None:
            return transcript_text(output.transcript, output.ended)
        if not output.tool_calls:
            return output.text
        return f"{output.text}\n[tool calls] {output_text(list(output.tool_calls))}"
    if isinstance(output, list | tuple):
        return ", ".join(_call_text(item) for item in output)
    if isinstance(output, Mapping):
        return json.dumps(output, ensure_ascii=False, default=str)
    return str(output)


def expected_text(case: EvalCase) -> str | None:
    """How a case's expectation reads in a stored score (`Score.expected`)."""
    if case.grader == "tool_trace":
        return _expected_calls_text(case)
    if case.grader == "llm_judge":
        return case.rubric
    if case.grader == CHECKS_GRADER:
        parts = []
        for check in case.checks or ():
            if check.grader == "tool_trace":
                wanted: str | None = _expected_calls_text(check)
            else:
                wanted = check.expected if check.expected is not None else check.rubric
                if wanted is None and check.contract is not None:
                    wanted = _criteria_text(check.contract)
            parts.append(f"{check.grader}: {wanted}")
        return "; ".join(parts)
    return case.expected


def _expected_calls_text(spec: EvalCase | Check) -> str:
    if spec.expected_tool_calls_any is not None:
        return " | ".join(_calls_text(calls) for calls in spec.expected_tool_calls_any)
    if spec.expected_tool_calls is not None:
        return _calls_text(spec.expected_tool_calls)
    return ", ".join(spec.expected_tools or ())


def _criteria_text(contract: Mapping[str, Any]) -> str:
    """A contract check's expectation: the ids of its success criteria."""
    criteria = contract.get("success_criteria")
    if not isinstance(criteria, list):
        return "its contract"
    return ", ".join(str(c.get("id")) for c in criteria if isinstance(c, Mapping))
