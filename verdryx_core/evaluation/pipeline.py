"""The evaluation pipeline both faces drive: settings in; scorers (graders + output source)
out; the tally of model calls kept until the run is saved.

    settings -> Pipeline.scorer(cases) -> call_ahead / CaseScorer.score -> Score
             -> assemble_run -> save_run (run + model answers + contract verdicts)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from verdryx_core.addons.typed.client import TypryxClient
from verdryx_core.cases import EvalCase
from verdryx_core.errors import UsageError
from verdryx_core.evaluation.calls import CallTally, ModelCalls
from verdryx_core.evaluation.scoring import CaseScorer
from verdryx_core.evaluation.settings import EvalSettings
from verdryx_core.evaluation.sources import ModelOutput, OutputSource
from verdryx_core.evaluation.target_output import TargetOutput, target_of
from verdryx_core.graders import build_graders
from verdryx_core.llm.cache import REFRESH
from verdryx_core.store import Store

__all__ = ["Pipeline"]


class Pipeline:
    def __init__(
        self,
        settings: EvalSettings,
        open_store: Callable[[], Store],
        *,
        tally: CallTally | None = None,
    ) -> None:
        self.settings = settings
        self.tally = CallTally() if tally is None else tally
        self._open_store = open_store
        self._calls: list[ModelCalls] = []
        self._targets: list[TargetOutput] = []
        self._typed: TypryxClient | None = None

    def typed_client(self) -> TypryxClient | None:
        """The typed grading service client when a URL is set (built once; a missing key is a
        UsageError now, not at the first typed case)."""
        settings = self.settings
        if not settings.typed_url:
            return None
        if self._typed is None:
            from verdryx_core.addons.typed.client import read_key_file

            if not settings.typed_key_file:
                raise UsageError(
                    "a typed grading service URL was given with no key",
                    hint="pass {typed_key_file} PATH or set $VERDRYX_TYPRYX_KEY_FILE",
                )
            key = read_key_file(settings.typed_key_file)
            self._typed = TypryxClient(
                settings.typed_url,
                key,
                template=settings.typed_template,
                timeout=settings.call_timeout,
            )
        return self._typed

    def scorer(
        self, cases: Sequence[EvalCase], *, judge_wanted: bool = False, fresh: bool = False
    ) -> CaseScorer:
        """A scorer for `cases`; the model and judge adapters exist only when some case needs
        them (`judge_wanted`: a case outside `cases` may ask for the judge). A `fresh` one
        (a rerun's) calls again whatever the cache holds, and remembers the new answers; a
        replay stays a replay."""
        settings = self.settings
        if fresh and settings.cache == "on":
            settings = dataclasses.replace(settings, cache=REFRESH)
        # A case with a target in effect asks the agent, not the model.
        targeted = any(self.uses_target(case) for case in cases)
        needs_model = any(case.needs_model and not self.uses_target(case) for case in cases)
        judge_name = settings.judge_model
        needs_judge = judge_name is not None and (
            judge_wanted
            or any(
                case.grader == "llm_judge"
                or any(check.grader == "llm_judge" for check in case.checks or ())
                for case in cases
            )
        )
        calls = ModelCalls(settings, self._open_store)
        self._calls.append(calls)
        live: OutputSource | None = None
        if needs_model:
            live = ModelOutput(calls.adapter(settings.model))
        if targeted:
            live = self._target_output(settings, fallback=live)
        judge = calls.adapter(judge_name) if needs_judge and judge_name is not None else None
        graders = build_graders(judge=judge, typed_client=self.typed_client(), flags=settings.flags)
        return CaseScorer(
            graders=graders,
            live=live,
            repeat=settings.repeat,
            min_score=settings.min_score,
            flags=settings.flags,
        )

    def check_target(self) -> None:
        """At start: the run's target loads, and a replay can replay it (a UsageError or a
        TargetLoadError of one line, before anything is collected or called)."""
        settings = self.settings
        if settings.target is None:
            return
        from verdryx_core.targets import Target, TargetCache

        if settings.built_target is None:
            Target.load(settings.target, rootdir=settings.target_root)
        TargetCache(None, mode=settings.cache, version=settings.target_version)

    def uses_target(self, case: EvalCase) -> bool:
        """Whether `case`'s output comes from the agent under test."""
        return case.needs_model and target_of(case, self.settings.target) is not None

    @property
    def targets_cached(self) -> bool:
        """Whether target results go through the store's cache (a declared version, cache
        not off): only then can one process's calls serve another's items."""
        settings = self.settings
        return settings.target_version is not None and settings.cache != "off"

    def _target_output(
        self, settings: EvalSettings, *, fallback: OutputSource | None
    ) -> TargetOutput:
        source = TargetOutput(
            default=settings.target,
            built=settings.built_target,
            fallback=fallback,
            concurrency=settings.concurrency,
            timeout=settings.call_timeout,
            root=settings.target_root,
            cache_mode=settings.cache,
            version=settings.target_version,
            open_store=self._open_store if self.targets_cached else None,
        )
        self._targets.append(source)
        return source

    @property
    def paid(self) -> bool:
        """Whether some scorer built so far calls a real (not stub) model."""
        return any(calls.paid for calls in self._calls)

    def finish_calls(self) -> CallTally:
        """Move what the model calls did into `tally` (call once the calls are done)."""
        for calls in self._calls:
            calls.harvest(self.tally)
        self._calls.clear()
        for source in self._targets:
            source.close()
            cache = source.cache
            self.tally.hits += cache.hits
            self.tally.misses += cache.misses
            self.tally.saved_usd += cache.saved_usd
            self.tally.entries.extend(cache.take_pending())
        self._targets.clear()
        return self.tally
