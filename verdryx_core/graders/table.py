"""The graders of one run, by kind: the built-ins configured for it, then custom graders."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from verdryx_core.cases import CHECKS_GRADER, GRADER_KINDS
from verdryx_core.errors import CLI_FLAGS
from verdryx_core.graders.base import Grader
from verdryx_core.graders.checks import ChecksGrader
from verdryx_core.graders.contains import ContainsGrader, IContainsGrader
from verdryx_core.graders.exact import ExactGrader
from verdryx_core.graders.f1 import F1Grader
from verdryx_core.graders.json_output import JsonGrader
from verdryx_core.graders.numeric import NumericGrader
from verdryx_core.graders.outcome_tag import OutcomeTagGrader
from verdryx_core.graders.regex import RegexGrader
from verdryx_core.graders.registry import custom_grader_names, is_grader, load_custom_grader
from verdryx_core.graders.tool_trace import ToolTraceGrader

if TYPE_CHECKING:
    from verdryx_core.addons.typed.client import TypryxClient
    from verdryx_core.llm.base import ModelAdapter

__all__ = ["GraderTable", "build_graders"]

#: Built-in kinds never resolve to a custom grader, configured for this run or not (an
#: unconfigured llm_judge stays "missing", with its reason).
_BUILTIN_NAMES = frozenset(GRADER_KINDS)


class GraderTable(Mapping[str, Grader]):
    """The graders of one run: the built-ins configured for it, then custom graders
    (registered or installed), looked up by name only when a case uses them."""

    def __init__(
        self, builtins: Mapping[str, Grader], flags: Mapping[str, str] = CLI_FLAGS
    ) -> None:
        self._builtins = dict(builtins)
        self._builtins[CHECKS_GRADER] = ChecksGrader(self, flags)

    def __getitem__(self, name: str) -> Grader:
        found = self._builtins.get(name)
        if found is not None:
            return found
        if name in self._builtins or not is_grader(name) or name in _BUILTIN_NAMES:
            raise KeyError(name)
        return load_custom_grader(name)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        return name in self._builtins or (name not in _BUILTIN_NAMES and is_grader(name))

    def __iter__(self) -> Iterator[str]:
        yield from self._builtins
        yield from (name for name in custom_grader_names() if name not in self._builtins)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def build_graders(
    *,
    outcome_map: Mapping[str, float] | None = None,
    judge: ModelAdapter | None = None,
    typed_client: TypryxClient | None = None,
    flags: Mapping[str, str] = CLI_FLAGS,
) -> GraderTable:
    """The graders for one run. Graders that cost money (the LLM judge, the typed verdict
    service) are present only when their dependency is given: nothing is paid by default."""
    graders: dict[str, Grader] = {
        "exact": ExactGrader(),
        "regex": RegexGrader(),
        "outcome_tag": OutcomeTagGrader(outcome_map),
        "tool_trace": ToolTraceGrader(),
        "contains": ContainsGrader(),
        "icontains": IContainsGrader(),
        "json": JsonGrader(),
        "numeric": NumericGrader(),
        "f1": F1Grader(),
    }
    # Free and deterministic, so always present; imported lazily like the paid graders.
    from verdryx_core.addons.contracts.grader import ContractGrader

    graders["contract"] = ContractGrader()
    if judge is not None:
        from verdryx_core.graders.llm_judge import LLMJudgeGrader

        graders["llm_judge"] = LLMJudgeGrader(judge)
    if typed_client is not None:
        from verdryx_core.addons.typed.grader import TypedGrader

        graders["typed"] = TypedGrader(typed_client)
    return GraderTable(graders, flags)
