"""The agent under test as an output source: each case (and repeat) is one call of the target
its eval set names, or the run's (docs/targets.md).

Calls go through one `TargetRunner` (one event loop, one bound, the per-call timeout) and,
under a declared target version, the store's cache. A failed call (an exception, a timeout,
a bad return value, a replay miss) raises `TargetCallError`: the item's error, never a score.
Cases with no target in effect go to the fallback source (the model), unchanged.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any, Final

from verdryx_core.cases import CaseOutput, EvalCase
from verdryx_core.errors import TargetCallError, VerdryxError
from verdryx_core.evaluation.sources import OutputSource, Produced, target_of
from verdryx_core.graders.base import GradeContext
from verdryx_core.lazy_names import renamed
from verdryx_core.llm.prices import PriceBook
from verdryx_core.store import Store
from verdryx_core.targets import Target, TargetCache, TargetCase, TargetRunner
from verdryx_core.targets.case import conversation_id
from verdryx_core.targets.dialogue import dialogue_target
from verdryx_core.targets.handoff import TargetHandoff, handoff_key
from verdryx_core.targets.users import SimulatedUsers

__all__ = ["TargetSource"]


#: What to do, by kind of failure, in the face's own flags.
_HINTS: Final[Mapping[str, str]] = {
    "timeout": "raise {timeout} if it needs longer",
    "not_recorded": "record it first with {cache} on under that {target_version}",
    "workspace_replay": "run it with {cache} on or off",
    "bad_spans": "pass {otel} off to grade only what it returns",
}


class TargetSource:
    """The output source that calls the target in effect for each case (the fallback, the
    model's `ModelSource`, for cases without one). Thread-safe: the pool's threads call
    `produce` concurrently; each waits on its own call while the runner keeps at most
    `concurrency` in flight."""

    samples = True
    remote = True

    def __init__(
        self,
        *,
        default: str | None,
        fallback: OutputSource | None,
        built: Target | None = None,
        replaced_by: str | None = None,
        concurrency: int,
        timeout: float,
        root: Path | None,
        cache_mode: str,
        version: str | None,
        open_store: Callable[[], Store | None] | None,
        prices: PriceBook | None = None,
        users: SimulatedUsers | None = None,
        handoff: TargetHandoff | None = None,
        otel: str = "auto",
    ) -> None:
        self.default = default
        #: The challenger: called instead of whichever target is in effect for a case.
        self.replaced_by = replaced_by
        #: The run's target answers, called by one process (docs/targets.md, "Under pytest-xdist"):
        #: the caller writes each answer there; a reader takes it instead of calling.
        self.handoff = handoff
        #: Who answers the agent in a case with a simulated user (docs/scenarios.md).
        self.users = users if users is not None else SimulatedUsers()
        self.fallback = fallback
        #: Prices a call whose usage names its model and no cost of its own.
        self.prices = prices or PriceBook.default()
        self.root = root
        store = open_store() if open_store is not None and version is not None else None
        #: Why no target call can be made (replay without a version): each target case's error.
        self.refused: str | None = None
        try:
            self.cache = TargetCache(store, mode=cache_mode, version=version)
        except VerdryxError as exc:
            self.refused = str(exc)
            self.cache = TargetCache(None, mode="off", version=None)
        self.runner = TargetRunner(
            concurrency=concurrency, timeout=timeout, cache=self.cache, otel=otel
        )
        self._targets: dict[str, Target | VerdryxError] = {}
        if built is not None:  # built in code: found under its name, never imported
            self._targets[built.spec] = built
        self._lock = threading.Lock()

    def uses_target(self, case: EvalCase) -> bool:
        return case.needs_model and target_of(case, self.default) is not None

    def load(self, spec: str) -> Target:
        """The loaded target (once per name); a name that does not load raises, every time."""
        with self._lock:
            found = self._targets.get(spec)
            if found is None:
                try:
                    found = Target.load(spec, rootdir=self.root)
                except VerdryxError as exc:
                    found = exc
                self._targets[spec] = found
        if isinstance(found, VerdryxError):
            raise found
        return found

    def produce(
        self, case: EvalCase, *, repeat: int, context: GradeContext | None = None
    ) -> Produced:
        spec = target_of(case, self.default)
        if spec is not None and self.replaced_by is not None:
            spec = self.replaced_by
        if spec is None:
            if self.fallback is None:
                raise RuntimeError(f"case {case.id!r} needs a model and none is configured")
            return self.fallback.produce(case, repeat=repeat, context=context)
        if self.refused is not None:
            raise TargetCallError(self.refused)
        eval_set_id = context.eval_set_id if context is not None else ""
        workspace = context.workspace if context is not None else None
        call = TargetCase.from_eval_case(
            case,
            eval_set_id=eval_set_id,
            repeat=repeat,
            workspace=None if workspace is None else str(workspace),
            conversation_id=conversation_id(
                context.run_id if context is not None else "", eval_set_id, case.id, repeat
            ),
        )
        # A workspace case's result is the files its call left here: never handed.
        handed_key = None
        if self.handoff is not None and workspace is None:
            variant = (
                None
                if case.user is None
                else {"user": dict(case.user), "user_model": self.users.identity(case.user)}
            )
            handed_key = handoff_key(spec, call, variant)
        handed = self.handoff.get(handed_key) if self.handoff and handed_key else None
        if handed is not None:
            answer = handed  # called by another process of this run: the target is not loaded
        else:
            target = self.load(spec)
            if case.user is not None:
                target = dialogue_target(target, case.user, self.users)
            try:
                answer = self.runner.submit(target, call).result()
            except CancelledError:
                raise TargetCallError(f"target {target.spec}: the call was cancelled") from None
            if self.handoff is not None and handed_key is not None:
                self.handoff.put(handed_key, answer)
        if answer.result is None:
            raise TargetCallError(
                answer.error or f"target {spec} failed",
                hint=_HINTS.get(answer.error_kind or ""),
            )
        result = answer.result
        usage = result.usage
        if case.checks is not None or result.transcript is not None:
            # One call (one dialogue), graded every way: each check reads its part
            # (docs/scenarios.md); a single grader its own (CaseOutput.part_for).
            output: Any = CaseOutput(
                text=result.output,
                tool_calls=result.tool_calls,
                metadata=result.metadata,
                state=result.state,
                transcript=result.transcript,
                ended=result.ended,
            )
        elif case.grader == "tool_trace":
            output = list(result.tool_calls)
        elif case.grader == "final_state":
            output = result.state
        else:
            output = result.output
        cost = usage.cost_usd
        if not cost and usage.model is not None:
            cost = self.prices.cost(usage.model, usage.input_tokens, usage.output_tokens)
        return Produced(
            output=output,
            tokens=usage.input_tokens + usage.output_tokens,
            cost_usd=cost,
            latency_s=answer.latency_s,
        )

    def abort(self) -> None:
        """Ctrl-C: give up on what is in flight, at once."""
        self.runner.abort()

    def close(self) -> None:
        self.runner.close()

    def stats(self) -> dict[str, Any]:
        cache = self.cache
        return {"hits": cache.hits, "misses": cache.misses, "saved_usd": cache.saved_usd}


#: Old names, kept resolvable with a DeprecationWarning (docs/python-api.md, "Renamed").
__getattr__ = renamed(__name__, {"TargetOutput": "TargetSource"})
