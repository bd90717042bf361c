"""The spine of an evaluation: eval sets in, one stored run out.

    Evaluation(settings, store=...)      the run's identity, its scorers and its call tally
      .work(evalset, case)  -> Work      one case to score, with its grading context
      .scorer(cases)        -> CaseScorer (graders + where outputs come from)
      prefetch / CaseScorer.score         calls in the bounded pool, scores in order
      .run(scores, complete=...) -> EvalRun
      .save(store, run)                   model answers first, then the run

`evaluate()` is all of it in one call (the Python API and `verdryx eval`); the pytest plugin
drives the same object one item at a time. Nothing here knows which face it serves.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verdryx_core.cases import EvalCase
from verdryx_core.errors import (
    AfterSaveError,
    GraderError,
    RunNotStoredError,
    StoreError,
    UsageError,
    VerdryxError,
    located,
)
from verdryx_core.evalsets.load import EvalSet, check_unique_ids, checked_evalset, load_evalsets
from verdryx_core.evaluation.aggregate import aggregate_k, samples_problem
from verdryx_core.evaluation.calls import CallTally, ModelCalls
from verdryx_core.evaluation.prefetch import Work, start_prefetch
from verdryx_core.evaluation.scoring import CaseScorer
from verdryx_core.evaluation.settings import EvalSettings
from verdryx_core.evaluation.sources import ModelSource, OutputSource, target_of
from verdryx_core.evaluation.workspaces import Workspaces
from verdryx_core.graders import GradeContext, Grader, build_graders
from verdryx_core.graders.plugins import GraderUnavailable, plugin
from verdryx_core.graders.registry import (
    check_installed_graders,
    checked_grader,
    load_custom_grader,
)
from verdryx_core.runs import EvalRun, Score, joined_targets
from verdryx_core.untrusted.text import printable
from verdryx_core.version import __version__

if TYPE_CHECKING:
    # What only some runs use comes with the first that does: the targets (a case a target
    # answers), the store (a run saved, a model's answers cached) and the model calls'
    # cache and prices (a model other than the stub).
    from verdryx_core.evaluation.target_output import TargetSource
    from verdryx_core.llm.progress import TextStream
    from verdryx_core.store import CacheEntry, Store
    from verdryx_core.targets.handoff import TargetHandoff
    from verdryx_core.targets.users import SimulatedUsers

__all__ = ["Evaluation", "EvaluationInterrupted", "evaluate"]


class EvaluationInterrupted(KeyboardInterrupt):
    """A Ctrl-C during `evaluate`: what was scored is stored as an incomplete `run`."""

    def __init__(self, run: EvalRun, *, total: int) -> None:
        super().__init__(f"interrupted: {len(run.scores)} of {total} cases scored")
        self.run = run
        self.total = total


class Evaluation:
    """One evaluation: its run id and start, the scorers for its cases (the model and judge
    adapters exist only when a case needs them), and the tally of what their calls did."""

    def __init__(
        self,
        settings: EvalSettings | None = None,
        *,
        store: Store | Callable[[], Store] | None = None,
        run_id: str | None = None,
        started_at: datetime | None = None,
        tally: CallTally | None = None,
        target_handoff: TargetHandoff | None = None,
        repeats_for: Callable[[str], int] | None = None,
    ) -> None:
        self.settings = EvalSettings() if settings is None else settings
        self.run_id = run_id or str(uuid.uuid4())
        self.started_at = started_at or datetime.now(UTC)
        self.tally = CallTally() if tally is None else tally
        self._store = store
        self._calls: list[ModelCalls] = []
        self._targets: list[TargetSource] = []
        #: Plugged-in graders built for this run (or why they cannot be), by name.
        self._plugged: dict[str, Grader | GraderUnavailable] = {}
        self._plug_lock = threading.Lock()
        #: Samples per case by key (`set::case`), when they differ (`--verdryx-repeat=auto`,
        #: verdryx_core/evaluation/allocation.py); None: `settings.repeat` for every case.
        self.repeats_for = repeats_for
        #: The run's workspace folders (docs/workspaces-and-execution.md).
        self.workspaces = Workspaces(keep=self.settings.keep_workspaces)
        #: Target outcomes one process of the run calls for all of them (docs/targets.md,
        #: "Under pytest-xdist"), read by every scorer; a fresh one (a rerun's) never reads
        #: it.
        self.target_handoff = target_handoff

    # -- the store -------------------------------------------------------------------------

    def open_store(self) -> Store | None:
        """The store the response cache goes to; None when caching is off and no store was
        given (nothing is read from it or written to it then)."""
        from verdryx_core.store import Store

        if isinstance(self._store, Store):
            return self._store
        if self._store is None:
            if self.settings.cache == "off":
                return None
            raise UsageError(
                f"cache mode {self.settings.cache!r} needs a store",
                hint="pass a store, or {cache} off",
            )
        return self._store()

    # -- the work --------------------------------------------------------------------------

    def context(self, evalset: EvalSet | None = None, *, eval_set_id: str = "") -> GradeContext:
        """What a grader is told about where a case comes from."""
        timeout_s = self.settings.call_timeout
        if evalset is None:
            return GradeContext(eval_set_id=eval_set_id, run_id=self.run_id, timeout_s=timeout_s)
        return GradeContext(
            eval_set_id=evalset.id,
            eval_set_path=evalset.path,
            run_id=self.run_id,
            timeout_s=timeout_s,
        )

    def work(self, evalset: EvalSet, case: EvalCase, *, key: str | None = None) -> Work:
        """One case to score; `key` names it for whoever waits on it (default `set::case`)."""
        return Work(key or f"{evalset.id}::{case.id}", case, self.context(evalset))

    # -- the scorers -----------------------------------------------------------------------

    def scorer(
        self,
        cases: Sequence[EvalCase],
        *,
        judge_wanted: bool = False,
        fresh: bool = False,
        challenger: bool = False,
        handoff: TargetHandoff | None = None,
        repeats_for: Callable[[str], int] | None = None,
    ) -> CaseScorer:
        """A scorer for `cases` (`judge_wanted`: a case outside them may ask for the judge;
        `handoff`: the target outcomes this one writes or reads, instead of the run's;
        `repeats_for`: its samples per case key, instead of the run's).
        A `fresh` one (a rerun's) calls again whatever the cache holds, and remembers the new
        answers; a replay stays a replay. The `challenger`'s scores the cases a target
        answers (`challenged`) with the challenger instead, graded by the same graders."""
        settings = self.settings
        if fresh and settings.cache == "on":
            from verdryx_core.llm.cache import REFRESH

            settings = dataclasses.replace(settings, cache=REFRESH)
        if challenger:
            cases = [case for case in cases if self.challenged(case)]
        # A case with a target in effect asks the agent, not the model.
        targeted = any(self.uses_target(case) for case in cases)
        needs_model = any(case.needs_model and not self.uses_target(case) for case in cases)
        judge_name = settings.judge_model
        needs_judge = judge_name is not None and (
            judge_wanted or any(_judged(case) for case in cases)
        )
        calls = ModelCalls(settings, self.open_store)
        self._calls.append(calls)
        live: OutputSource | None = None
        if needs_model:
            live = ModelSource(calls.adapter(settings.model, cache_checked_first=True))
        if targeted:
            from verdryx_core.targets.users import STUB_USER_MODEL, SimulatedUsers

            users = None
            if settings.user_model != STUB_USER_MODEL and any(c.user for c in cases):
                users = SimulatedUsers(settings.user_model, calls.adapter(settings.user_model))
            live = self._target_output(
                settings,
                fallback=live,
                users=users,
                handoff=None if fresh else handoff or self.target_handoff,
                challenger=challenger,
            )
        judge = (
            calls.adapter(judge_name, cache_checked_first=True)
            if needs_judge and judge_name is not None
            else None
        )
        graders = build_graders(
            judge=judge,
            flags=settings.flags,
            plug_in=self.plug_in,
            unsafe_exec=settings.unsafe_exec,
            exec_disk_mib=settings.exec_disk_mib,
        )
        graders.prepare({case.grader for case in cases})
        return CaseScorer(
            graders=graders,
            live=live,
            repeat=settings.repeat,
            min_score=settings.min_score,
            flags=settings.flags,
            repeats_for=self._repeats_for(
                repeats_for if repeats_for is not None else self.repeats_for
            ),
            workspaces=self.workspaces,
        )

    @staticmethod
    def _repeats_for(
        allocated: Callable[[str], int] | None,
    ) -> Callable[[EvalCase, GradeContext], int] | None:
        if allocated is None:
            return None
        return lambda case, context: allocated(f"{context.eval_set_id}::{case.id}")

    def plug_in(self, name: str) -> Grader:
        """The plugged-in grader `name` for this run, built once from the run's settings
        (`for_run`, verdryx_core.graders.plugins), else as registered. Raises
        GraderUnavailable when the settings do not configure it, VerdryxError when they are
        wrong."""
        with self._plug_lock:
            found = self._plugged.get(name)
            if found is None:
                found = self._plugged[name] = self._build_plugged(name)
        if isinstance(found, GraderUnavailable):
            raise found
        return found

    def _build_plugged(self, name: str) -> Grader | GraderUnavailable:
        for_run = getattr(plugin(name), "for_run", None)
        if for_run is None:
            return load_custom_grader(name)
        try:
            return checked_grader(name, for_run(self.settings))
        except GraderUnavailable as exc:
            return exc
        except VerdryxError:
            raise
        except Exception as exc:  # a bug in the add-on: one line naming it, not a traceback
            raise GraderError(
                f"grader {name!r}: for_run raised {type(exc).__name__}: {exc}"
            ) from exc

    def check_graders(self) -> None:
        """At start: every plugged-in grader the settings configure builds (a wrong option is
        a UsageError of one line now, not at the first case)."""
        check_installed_graders()
        for name in self.settings.grader_options:
            self.plug_in(name)

    def check_target(self, *, load: bool = True) -> None:
        """At start: the run's target loads, and a replay can replay it (a UsageError or a
        TargetLoadError of one line, before anything is collected or called). Without `load`
        (a process whose calls another one makes, having checked it) only the settings."""
        settings = self.settings
        if settings.challenger is None and settings.target is None:
            return  # no agent under test: the targets are never imported
        from verdryx_core.targets import Target, TargetCache

        if settings.challenger is not None:
            # The challenger is loaded and its replay checked as the target is: a typo is
            # one line before anything is called, whatever the target's own name.
            if load:
                Target.load(settings.challenger, rootdir=settings.target_root)
            TargetCache(None, mode=settings.cache, version=settings.challenger_version)
        if settings.target is None:
            return
        if load and settings.built_target is None:
            Target.load(settings.target, rootdir=settings.target_root)
        TargetCache(None, mode=settings.cache, version=settings.target_version)

    def check_aggregates(self, cases: Iterable[tuple[EvalSet, EvalCase]]) -> None:
        """At start: each `pass@K` case gets at least K samples from the run's repeats (a
        UsageError naming the file, the case and the field)."""
        repeat = self.settings.repeat
        for evalset, case in cases:
            problem = samples_problem(case.aggregate, repeat)
            if problem is not None:
                place = str(evalset.path) if evalset.path is not None else evalset.id
                k = aggregate_k(case.aggregate)
                raise UsageError(
                    located(place, f"{problem} (repeat {repeat})", case=case.id, field="aggregate"),
                    hint=f"pass {{repeat}} {k} or more",
                )

    def uses_target(self, case: EvalCase) -> bool:
        """Whether `case`'s output comes from the agent under test."""
        return case.needs_model and target_of(case, self.settings.target) is not None

    def challenged(self, case: EvalCase) -> bool:
        """Whether the challenger answers `case` too: every case a target answers, when the
        run has a challenger (docs/targets.md, "A challenger")."""
        return self.settings.challenger is not None and self.uses_target(case)

    @property
    def targets_cached(self) -> bool:
        """Whether target results go through the store's cache (a declared version, cache
        not off): only then can one process's calls serve another's items."""
        settings = self.settings
        return settings.target_version is not None and settings.cache != "off"

    @property
    def paid(self) -> bool:
        """Whether some scorer built so far calls a real (not stub) model."""
        return any(calls.paid for calls in self._calls)

    def finish_calls(self) -> CallTally:
        """Move what the calls did into `tally` (once they are done)."""
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
            self.tally.unpriced.update(source.prices.unpriced)
            self.tally.span_results += source.runner.span_results
            self.tally.span_overridden += source.runner.span_overridden
        self._targets.clear()
        # Whatever a sample could not remove itself (a call given up on a Ctrl-C) goes now.
        self.workspaces.close()
        return self.tally

    def _target_output(
        self,
        settings: EvalSettings,
        *,
        fallback: OutputSource | None,
        users: SimulatedUsers | None = None,
        handoff: TargetHandoff | None = None,
        challenger: bool = False,
    ) -> TargetSource:
        from verdryx_core.evaluation.target_output import TargetSource
        from verdryx_core.llm.prices import PriceBook

        version = settings.challenger_version if challenger else settings.target_version
        source = TargetSource(
            default=settings.target,
            built=settings.built_target,
            replaced_by=settings.challenger if challenger else None,
            fallback=fallback,
            concurrency=settings.concurrency,
            timeout=settings.call_timeout,
            root=settings.target_root,
            cache_mode=settings.cache,
            version=version,
            open_store=self.open_store if version is not None and settings.cache != "off" else None,
            users=users,
            prices=PriceBook.from_file(settings.prices) if settings.prices else None,
            handoff=handoff,
            otel=settings.otel,
        )
        self._targets.append(source)
        return source

    # -- the run ---------------------------------------------------------------------------

    def run(
        self,
        scores: Sequence[Score],
        *,
        complete: bool,
        eval_set_ids: Iterable[str] = (),
        errors: Sequence[str] = (),
        targets: Mapping[str, str | None] | Iterable[str] = (),
    ) -> EvalRun:
        """The run of `scores`, in their order; its eval sets are the scored ones plus
        `eval_set_ids`. The judge is recorded only when it graded something; `targets` are
        the agents under test its cases were given to, per eval set (`targets_of`; a plain
        list of them records no eval set's own)."""
        if isinstance(targets, Mapping):
            set_targets: Mapping[str, str | None] | None = targets
            target = joined_targets(targets)
        else:
            set_targets, target = None, ", ".join(sorted(set(targets))) or None
        # A judge inside `checks` is the run's judge too (docs/models-and-judges.md).
        judged = any(score.judged for score in scores)
        settings = self.settings
        return EvalRun(
            id=self.run_id,
            model=settings.model,
            judge_model=settings.judge_model if judged else None,
            agent_id=settings.agent_id,
            started_at=self.started_at,
            finished_at=datetime.now(UTC),
            eval_set_ids=tuple({score.eval_set_id for score in scores} | set(eval_set_ids)),
            scores=tuple(scores),
            complete=complete and not errors,
            plugin_version=__version__,
            errors=tuple(errors),
            target=target,
            target_version=settings.target_version if target else None,
            set_targets=set_targets,
        )

    def targets_of(self, cases: Iterable[tuple[str, EvalCase]]) -> dict[str, str | None]:
        """The agent under test of each eval set among these (eval set id, case) pairs whose
        cases need an output: its `module:callable` (several joined by ", "), or None for the
        model alone. A set whose every case was recorded has no entry: nothing produced it."""
        default = self.settings.target
        specs: dict[str, set[str | None]] = {}
        for set_id, case in cases:
            if case.needs_model:
                specs.setdefault(set_id, set()).add(target_of(case, default))
        return {
            set_id: ", ".join(sorted(spec for spec in found if spec)) or None
            for set_id, found in sorted(specs.items())
        }

    def save(
        self,
        store: Store,
        run: EvalRun,
        *,
        cache_entries: Iterable[CacheEntry] | None = None,
    ) -> None:
        """Store `run` with the model answers its calls got (all of this evaluation's, by
        default). Raises RunNotStoredError; the answers go first, so a run that is stored never
        misses them. Raises AfterSaveError when the run is stored but a plugged-in grader's
        `after_save` failed (verdryx_core.evaluation.saving)."""
        from verdryx_core.evaluation.saving import save_run

        entries = self.tally.take_entries() if cache_entries is None else cache_entries
        try:
            save_run(store, run, cache_entries=entries)
        except StoreError as exc:
            # Both faces say it in these words (docs/troubleshooting.md, "Reliability").
            raise RunNotStoredError(str(exc), run=run) from None


def _judged(case: EvalCase) -> bool:
    return case.grader == "llm_judge" or any(
        check.grader == "llm_judge" for check in case.checks or ()
    )


def evaluate(
    eval_sets: Iterable[EvalSet | str | os.PathLike[str]],
    settings: EvalSettings | None = None,
    *,
    target: Callable[..., Any] | str | None = None,
    store: Store | str | os.PathLike[str] | None = None,
    progress: TextStream | None = None,
    incomplete_because: Sequence[str] = (),
) -> EvalRun:
    """Grade every case of `eval_sets` (loaded sets, or paths to files or folders) and return
    the run; with a `store` (a Store, a path or a postgresql:// URL), save it there. A set
    built in Python is first held to the rules a file is (`checked_evalset`): a bad case is
    an `EvalSetError` naming it, never an unmeasured score. What this raises is worded in
    `settings.flags` (by default a Python caller's).

    `target` is the agent under test (a callable, or `module:callable`); without it, outputs
    come from `settings.model` (default: the offline stub) or are the recorded ones. Calls to
    models and targets run concurrently (`settings.concurrency`); `progress` gets a progress
    line. A case whose call fails is one line of `run.errors` and leaves the run incomplete;
    `incomplete_because` (say, eval set files that did not load) does too. A Ctrl-C stores
    what was scored as an incomplete run and raises `EvaluationInterrupted`. A plugged-in
    grader whose `after_save` fails leaves the run stored without what it keeps, and raises
    `AfterSaveError` (its `run` is the run).
    """
    from verdryx_core.store import Store

    settings = _with_target(EvalSettings() if settings is None else settings, target)
    try:
        sets: list[EvalSet] = []
        for item in eval_sets:
            # A set built in Python is held to the rules a file's is (docs/python-api.md).
            if isinstance(item, EvalSet):
                sets.append(checked_evalset(item))
            else:
                sets.extend(load_evalsets([item]))
        check_unique_ids(sets)
        if store is None or isinstance(store, Store):
            return _evaluate(sets, settings, store, progress, incomplete_because)
        with Store.open(store) as opened:
            return _evaluate(sets, settings, opened, progress, incomplete_because)
    except VerdryxError as exc:
        exc.in_words(settings.flags)  # a refusal in the caller's words, not the CLI's
        raise


def _evaluate(
    sets: Sequence[EvalSet],
    settings: EvalSettings,
    store: Store | None,
    progress: TextStream | None,
    incomplete_because: Sequence[str],
) -> EvalRun:
    if store is None and settings.cache == "on":
        settings = dataclasses.replace(settings, cache="off")  # nowhere to keep answers
    if settings.batch:
        from verdryx_core.llm.batch import check_batchable

        check_batchable(settings.model, cache=settings.cache)
    evaluation = Evaluation(settings, store=store)
    evaluation.check_target()
    evaluation.check_graders()
    evaluation.check_aggregates((evalset, case) for evalset in sets for case in evalset.cases)
    work = [evaluation.work(evalset, case) for evalset in sets for case in evalset.cases]
    try:
        scores, errors, interrupted = _score_in_order(evaluation, work, progress)
    finally:
        evaluation.finish_calls()
    run = evaluation.run(
        scores,
        complete=not interrupted and not incomplete_because,
        eval_set_ids=[evalset.id for evalset in sets],
        errors=errors,
        targets=evaluation.targets_of((entry.context.eval_set_id, entry.case) for entry in work),
    )
    if store is not None:
        try:
            evaluation.save(store, run)
        except AfterSaveError:
            if not interrupted:
                raise
            # The run is stored; a Ctrl-C is what the caller must hear of first.
    if interrupted:
        raise EvaluationInterrupted(run, total=len(work))
    return run


def _score_in_order(
    evaluation: Evaluation, work: Sequence[Work], progress: TextStream | None
) -> tuple[list[Score], list[str], bool]:
    """Every case scored in order, remote ones prefetched in the pool; a case whose call fails is
    one line naming it, and the others are still scored. On a Ctrl-C, the scores of the calls
    that had ended, and True."""
    settings = evaluation.settings
    scorer = evaluation.scorer([entry.case for entry in work])
    prefetch = start_prefetch(
        scorer, work, concurrency=settings.concurrency, stream=progress, batch=settings.batch
    )
    try:
        prefetch.wait()  # aborts what is in flight on a Ctrl-C
    except KeyboardInterrupt:
        ended = prefetch.scores()
        return [ended[entry.key] for entry in work if entry.key in ended], [], True
    prefetch.finish()
    scores: list[Score] = []
    errors: list[str] = []
    for entry in work:
        try:
            if entry.key in prefetch.futures:
                scores.append(prefetch.futures[entry.key].result())
            else:
                scores.append(scorer.score(entry.case, entry.context))
        except Exception as exc:
            # Any failure of one case (a custom grader's own bug included) is that case's
            # line: the others are scored and the run is stored as incomplete, never lost
            # to a traceback (docs/troubleshooting.md, "Reliability: stored data").
            why = str(exc) if isinstance(exc, VerdryxError) else f"{type(exc).__name__}: {exc}"
            line = printable(why, keep_newlines=False)
            errors.append(f"case {entry.context.eval_set_id}::{entry.case.id}: {line}")
    return scores, errors, False


def _with_target(settings: EvalSettings, target: Callable[..., Any] | str | None) -> EvalSettings:
    if target is None:
        return settings
    if isinstance(target, str):
        return dataclasses.replace(settings, target=target, target_root=Path.cwd())
    from verdryx_core.targets import Target

    built = Target.of(target)
    return dataclasses.replace(settings, target=built.spec, built_target=built)
