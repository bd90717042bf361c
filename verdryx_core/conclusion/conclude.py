"""The run concluded once, for every face: stored, checked against the judge's labels, gated
against its baseline, saved as a baseline, and the one answer whether it fails and why
(docs/outcomes.md, "Who decides the exit status"; docs/cli.md, "Exit codes"). A baseline is
saved by the same rules everywhere (`save_baseline`: docs/ci.md, "Baselines"): a run that is
incomplete, or that measured a selection of the cases, is no baseline.

`conclude` is what the pytest plugin's session end, `verdryx eval`, `drift` and `gate` call;
each only maps the `Conclusion` to its exit status and words.
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, TypeAlias

from verdryx_core.conclusion.policy import MissingBaseline, RunPolicy, Selection, standing
from verdryx_core.errors import (
    PYTHON_FLAGS,
    AfterSaveError,
    RunNotStoredError,
    StoreError,
    UsageError,
    VerdryxError,
)
from verdryx_core.gating.baselines import check_label, write_baseline_file
from verdryx_core.runs import Baseline, EvalRun
from verdryx_core.untrusted.text import printable

if TYPE_CHECKING:
    from verdryx_core.gating.compare import GateOutcome
    from verdryx_core.judge.calibration.judge_check import JudgeCheck
    from verdryx_core.judge.calibration.labels import Label
    from verdryx_core.store import CacheEntry, Store

__all__ = [
    "EXITS",
    "BaselineRefusedError",
    "Conclusion",
    "Exit",
    "Keep",
    "SavedBaseline",
    "conclude",
    "save_baseline",
]

#: What a run's conclusion does to a face's exit: nothing, fail it, or refuse it (the run
#: could not be judged as asked: a usage error).
Exit = Literal["ok", "failed", "refused"]
EXITS: Final = ("ok", "failed", "refused")

#: What `conclude` does with the store: `save` the run (and a baseline) in it; the run is
#: `stored` there already (read from it, or saved by `evaluate`), baselines go there too;
#: `read` it only (earlier runs, judge figures), writing nothing.
Keep = Literal["save", "stored", "read"]

#: A store, how to open it on first use (opening may fail: that is the run's error), or a
#: SQLite path or `postgresql://` URL, opened and closed by `conclude`.
StoreSource: TypeAlias = "Store | Callable[[], Store] | str | os.PathLike[str] | None"


#: What a partial run measured, when the face cannot say more.
SELECTION_WORDS = "file arguments, -k, -m, --lf, --deselect or node ids"


class BaselineRefusedError(UsageError):
    """The run is no baseline: it is incomplete, or measured a selection of the cases."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SavedBaseline:
    baseline: Baseline
    #: The committed file written (None: none was asked for).
    path: Path | None = None
    #: The earlier runs its cases' samples were pooled from, newest first (their ids).
    pooled: tuple[str, ...] = ()
    #: How the pooling went, in words (None: one run was asked for).
    pooled_words: str | None = None
    #: Why one sample per case will carry this run's luck into every gate, with what `plan`
    #: predicts for more baseline runs and for repeats (None: nothing to warn of).
    warning: str | None = None

    def words(self) -> str:
        """`v1 (mean 0.812; pooled with 2 earlier runs (1a2b3c4d, 5e6f7a8b)) ->
        .verdryx/baselines/v1.json`."""
        where = f" -> {self.path}" if self.path is not None else ""
        pooled = f"; {self.pooled_words}" if self.pooled_words else ""
        return f"{self.baseline.label} (mean {self.baseline.mean:.3f}{pooled}){where}"


def save_baseline(
    run: EvalRun,
    label: str,
    *,
    store: Store | None = None,
    root: str | Path | None = None,
    allow_partial: bool = False,
    selection: str = SELECTION_WORDS,
    runs: int = 1,
    history: Store | None = None,
    flags: Mapping[str, str] = PYTHON_FLAGS,
) -> SavedBaseline:
    """Save `run` as baseline `label`: in `store`, and as `.verdryx/baselines/LABEL.json`
    under `root` (each when given). Raises `BaselineRefusedError` for an incomplete run, and
    for a partial one (`selection`: what it measured, in words) unless `allow_partial`;
    `UsageError` for a label that cannot name a file or a run with nothing measured. Hints
    and the warning are worded in `flags` (by default a Python caller's: keyword arguments).

    `runs` > 1 pools each case's samples over this run and the `runs - 1` newest earlier
    complete runs of the same measurement in `history` (default: `store`), the rule
    `--verdryx-window` pools by (docs/statistics.md, "Baselines from several runs"). A
    baseline of one sample per case whose cases vary gets a `warning` (in `flags`' words)."""
    try:
        return _save_baseline(
            run, label, store, root, allow_partial, selection, runs, history, flags
        )
    except VerdryxError as exc:
        exc.in_words(flags)
        raise


def _save_baseline(
    run: EvalRun,
    label: str,
    store: Store | None,
    root: str | Path | None,
    allow_partial: bool,
    selection: str,
    runs: int,
    history: Store | None,
    flags: Mapping[str, str],
) -> SavedBaseline:
    label = check_label(label)
    if runs < 1:
        raise UsageError(f"baseline runs {runs!r} is not a positive number of runs")
    if not run.complete:
        raise BaselineRefusedError(
            f"eval run {run.id!r} is incomplete (interrupted, or a case errored): a baseline "
            "of part of a run would judge later runs against the wrong cases",
            hint="re-run it whole",
        )
    if run.partial and not allow_partial:
        raise BaselineRefusedError(
            f"this run measured a subset of the cases ({selection}), and a baseline of a "
            "subset would gate every later full run on it",
            hint="run all the cases, or pass {allow_partial_baseline} to save it anyway",
        )
    try:
        baseline = Baseline.from_run(run, id=str(uuid.uuid4()), label=label)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    pooled: tuple[str, ...] = ()
    pooled_words = warning = None
    source = history if history is not None else store
    if runs > 1 or any(len(case.samples) < 2 for case in baseline.cases):
        # The statistics (numpy) only for a baseline that pools or may warn.
        from verdryx_core.gating.pooled_baseline import Pooled, pool_baseline, variation_warning

        if runs > 1:
            found = (
                pool_baseline(baseline, run, source, runs)
                if source is not None
                else Pooled(baseline=baseline, asked=runs)
            )
            baseline, pooled, pooled_words = found.baseline, found.runs, found.words()
            if source is None:
                pooled_words = "not pooled: there is no store to find earlier runs in"
        warning = variation_warning(baseline, run, flags=flags)
    if store is not None:
        store.save_baseline(baseline)
    path = write_baseline_file(Path(root), baseline) if root is not None else None
    return SavedBaseline(
        baseline=baseline, path=path, pooled=pooled, pooled_words=pooled_words, warning=warning
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Conclusion:
    """What a finished run means: every face maps this, and only this, to its exit status."""

    #: The run, with its provenance and `partial` flag, as stored.
    run: EvalRun
    stored: bool = False
    #: Why the run is not in the store, when it was to be saved there and is not.
    not_stored: str | None = None
    #: Why the run is not a whole measurement (None: it is); an incomplete run is never
    #: gated or saved as a baseline.
    incomplete: str | None = None
    #: The gate's outcome; None when no baseline was named, or the run is one shard of a
    #: group (gated with its group by `verdryx gate`).
    gate: GateOutcome | None = None
    baseline_saved: SavedBaseline | None = None
    #: Why the baseline asked for was not saved.
    baseline_not_saved: str | None = None
    #: Cases that fail the run, by key (below their bar under the policy, or required and
    #: not measured); the others below their bar are `excused` or `dropped`.
    failed: tuple[str, ...] = ()
    excused: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    #: Measured cases the baseline has no score for (new since it), by key.
    new: tuple[str, ...] = ()
    #: The judge checked against human labels (docs/calibrating-the-judge.md).
    judge: JudgeCheck | None = None
    #: The challenger's run (`--verdryx-challenger`; never stored), and its gate against this
    #: run's agent, the champion (docs/targets.md, "A challenger").
    challenger_run: EvalRun | None = None
    challenger: GateOutcome | None = None
    #: Lines for the face to show: `ERROR: ...`, `WARNING: ...` and notes.
    messages: tuple[str, ...] = ()
    exit: Exit = "ok"
    #: Why the run fails or is refused, in one sentence; None when `exit` is `ok`.
    exit_reason: str | None = None

    @property
    def partial(self) -> bool:
        """Whether the run measured a selection of the cases (compared on its own eval sets,
        never a baseline)."""
        return self.run.partial

    def new_line(self, shown: int = 5) -> str | None:
        """The new cases that fail the run (below their bar, with no baseline score to have
        dropped from), apart from the compared ones; None when there are none. (The gate's
        lines list every new case as added.)"""
        failing = set(self.failed)
        below = [key for key in self.new if key in failing]
        if not below:
            return None
        against = f"baseline {self.gate.baseline}" if self.gate is not None else "the baseline"
        listed = ", ".join(below[:shown]) + (" ..." if len(below) > shown else "")
        return (
            f"new since {against} and below the bar: {len(below)} of {len(self.new)} new "
            f"case(s) failed (nothing to drop from): {listed}"
        )

    def render(self) -> str:
        """The conclusion in a few lines, for a notebook or a log."""
        run = self.run
        mean = "n/a" if run.mean_score is None else f"{run.mean_score:.3f}"
        lines = [
            f"run {run.id}: mean {mean} over {len(run.measured)} measured case(s)"
            + (f", {len(run.unmeasured)} unmeasured" if run.unmeasured else "")
            + (" (partial)" if run.partial else "")
            + ("" if self.stored else " (not stored)")
        ]
        if self.incomplete:
            lines.append(f"incomplete: {self.incomplete}")
        if self.gate is not None:
            drift = self.gate.drift
            shown = f", delta {drift.delta:+.3f}" if drift is not None else ""
            lines.append(f"gate vs {self.gate.baseline}: {self.gate.verdict}{shown}")
        if self.challenger is not None and self.challenger_run is not None:
            drift = self.challenger.drift
            shown = f", delta {drift.delta:+.3f}" if drift is not None else ""
            lines.append(
                f"challenger {self.challenger_run.target} vs champion "
                f"{self.challenger.baseline}: {self.challenger.verdict}{shown}"
            )
        if self.failed:
            lines.append(f"failed: {len(self.failed)} case(s): {', '.join(self.failed[:5])}")
        if self.new:
            lines.append(f"new since the baseline (not compared): {len(self.new)} case(s)")
        new = self.new_line()
        if new:
            lines.append(new)
        if self.baseline_saved is not None:
            lines.append(f"baseline saved: {self.baseline_saved.words()}")
        lines.extend(self.messages)
        lines.append(f"exit: {self.exit}" + (f": {self.exit_reason}" if self.exit_reason else ""))
        # Case ids, reasons and messages come from files and agents: printable, one line each.
        return "\n".join(printable(line, keep_newlines=False) for line in lines)

    def __str__(self) -> str:
        return self.render()


def conclude(
    run: EvalRun,
    *,
    baseline: Baseline | MissingBaseline | None = None,
    policy: RunPolicy | None = None,
    selection: Selection | None = None,
    store: StoreSource = None,
    keep: Keep = "save",
    root: str | Path | None = None,
    cache_entries: Iterable[CacheEntry] = (),
    case_labels: Sequence[Label] = (),
    flags: Mapping[str, str] = PYTHON_FLAGS,
    challenger: EvalRun | None = None,
) -> Conclusion:
    """Conclude finished `run`: store it (`keep`, in `store`), check its judge against the
    labels (`policy.labels` and `case_labels`), gate it against `baseline`, save it as
    `policy.save_baseline`, and decide its exit.

    `selection` says which cases it was asked to measure; `root` is the repository root,
    where its provenance (commit, branch, CI job) is read and committed baselines are
    written (None: neither); `cache_entries` are the model answers stored with it; `flags`
    word refusals and hints in the face's flags (by default a Python caller's: keyword
    arguments, `verdryx_core.errors.PYTHON_FLAGS`); `challenger` is a second agent's run of
    the same cases, gated against `run` (docs/targets.md, "A challenger")."""
    policy = RunPolicy() if policy is None else policy
    selection = Selection() if selection is None else selection
    work = _Work(run, policy, selection, flags)
    work.with_provenance(root)
    history = _History(store, keep)
    try:
        work.store(history, cache_entries)
        judged = policy.labels or case_labels
        if judged or policy.judge_correction or policy.require_calibrated_judge:
            work.check_judge(case_labels, history)
        if work.run.shard is None:  # a shard is gated with its group (`verdryx gate`)
            work.gate_against(baseline, history)
        if challenger is not None:
            work.challenge(challenger)
        work.stand(baseline if isinstance(baseline, Baseline) else None)
        work.nothing_measured()
        if policy.save_baseline:
            work.save_baseline(policy.save_baseline, history, root)
    finally:
        history.close()
    return work.conclusion()


class _History:
    """The store as `conclude` reads and writes it: opened once, when first needed (and
    closed at the end when `conclude` opened it from a path)."""

    def __init__(self, source: StoreSource, keep: Keep) -> None:
        self.source = source
        self._store: Store | None = None
        self._owned = False
        self.keep = keep

    def get(self) -> Store | None:
        if self._store is None and self.source is not None:
            # A run that never reaches its store never imports one.
            from verdryx_core.store import Store

            if isinstance(self.source, Store):
                self._store = self.source
            elif callable(self.source):
                self._store = self.source()
            else:
                self._store, self._owned = Store.open(self.source), True
        return self._store

    def close(self) -> None:
        if self._owned and self._store is not None:
            self._store.close()

    @property
    def writable(self) -> Store | None:
        """The store baselines are saved in (None: it is only read, or there is none)."""
        return None if self.keep == "read" else self.get()


class _Work:
    """The conclusion as it is reached, step by step (`conclude` reads in order)."""

    def __init__(
        self, run: EvalRun, policy: RunPolicy, selection: Selection, flags: Mapping[str, str]
    ) -> None:
        self.run, self.policy, self.selection, self.flags = run, policy, selection, flags
        if selection.narrowed is not None and not run.partial:
            self.run = dataclasses.replace(run, partial=True)
        self.incomplete = selection.incomplete or (
            None if run.complete else ("; ".join(run.errors) or "the run did not finish")
        )
        if self.incomplete and self.run.complete:
            # The face knows better (a stop, an unloaded file): never gated, never a baseline.
            self.run = dataclasses.replace(self.run, complete=False)
        self.stored = False
        self.not_stored: str | None = None
        self.gate: GateOutcome | None = None
        self.judge: JudgeCheck | None = None
        self.saved: SavedBaseline | None = None
        self.not_saved: str | None = None
        self.messages: list[str] = []
        self.challenger_run: EvalRun | None = None
        self.challenger: GateOutcome | None = None
        self.failed: list[str] = []
        self.excused: list[str] = []
        self.dropped: list[str] = []
        self.new: list[str] = []
        #: (exit, reason) in the order they were found; the first refusal wins, else the
        #: first failure.
        self.reasons: list[tuple[Exit, str]] = []

    def worded(self, exc: VerdryxError) -> str:
        return exc.worded(self.flags)

    # -- the steps -------------------------------------------------------------------------

    def with_provenance(self, root: str | Path | None) -> None:
        """Where the run came from (docs/ci.md): read under `root`, never overriding what
        the face set (a shard's run group)."""
        if root is None:
            return
        from verdryx_core.reporting.ci.provenance import ci_provenance, default_run_group

        found = ci_provenance(cwd=root)
        run = self.run
        self.run = dataclasses.replace(
            run,
            commit=run.commit or found.commit,
            branch=run.branch or found.branch,
            ci_url=run.ci_url or found.ci_url,
            run_group=run.run_group or default_run_group(),
        )

    def store(self, history: _History, entries: Iterable[CacheEntry]) -> None:
        if history.keep == "stored":
            self.stored = history.source is not None
            return
        if history.keep == "read" or history.source is None:
            return
        from verdryx_core.evaluation.saving import save_run

        try:
            opened = history.get()
            assert opened is not None
            save_run(opened, self.run, cache_entries=entries)
            self.stored = True
            return
        except AfterSaveError as exc:  # stored; what a plugged-in grader keeps of it is not
            self.stored = True
            for line in exc.lines:
                self.messages.append(f"ERROR: {line}")
                self.reasons.append(("failed", line))
            return
        except RunNotStoredError as exc:  # already says "the run was not stored: ..."
            why = self.worded(exc)
        except StoreError as exc:
            why = f"the run was not stored: {self.worded(exc)}"
        except ValueError as exc:  # a value the store cannot encode: a line, not a traceback
            why = f"the run was not stored: {type(exc).__name__}: {exc}"
        self.not_stored = why
        self.messages.append(f"ERROR: {why}")
        self.reasons.append(("failed", why))

    def check_judge(self, case_labels: Sequence[Label], history: _History) -> None:
        """The run's judge against the human labels (the labels files', then the cases'):
        each judge's figure kept in the store, and the calibration the gate's correction
        rests on."""
        from verdryx_core.judge.calibration.figures import save_figures
        from verdryx_core.judge.calibration.judge_check import check_judge
        from verdryx_core.judge.calibration.labels import read_labels

        try:
            labels = [*case_labels, *read_labels(self.policy.labels)]
            store = history.get()
            self.judge = check_judge(self.run, labels, store)
            if store is not None and self.stored and self.run.complete:
                save_figures(store, self.run.id, self.judge.agreement)
        except VerdryxError as exc:
            why = self.worded(exc)
            self.messages.append(f"ERROR: {why}")
            self.reasons.append(("refused", why))

    def gate_against(self, baseline: Baseline | MissingBaseline | None, history: _History) -> None:
        if isinstance(baseline, MissingBaseline):
            self._missing(baseline)
        elif baseline is not None:
            self._compare(baseline, history)
        if self.gate is None:
            self._judge_without_gate()
        elif self.gate.exit == "refused":
            self.reasons.append(("refused", self.gate.exit_reason or "the gate was refused"))
        elif self.gate.exit == "regressed":
            self.reasons.append(("failed", self.gate.exit_reason or "quality regressed"))

    def _compare(self, baseline: Baseline, history: _History) -> None:
        # Imported when a gate runs (numpy and the statistics with it): a run that names no
        # baseline never loads them.
        from verdryx_core.gating.compare import GatePolicy, compare, refused

        gate = self.policy.gate or GatePolicy()
        name = baseline.label or baseline.id
        try:
            earlier = history.get() if gate.window > 1 else None
        except VerdryxError as exc:
            self.gate = refused(name, self.worded(exc))
            return
        self.gate = compare(
            self.run,
            baseline,
            gate=gate,
            history=earlier,
            known_keys=self.selection.known_keys,
            flags=self.flags,
            calibration=self.judge.calibration if self.judge is not None else None,
        )

    def challenge(self, challenger: EvalRun) -> None:
        """The challenger's run, gated against this one by the gate's own rule; its
        regression fails the run and its refusal refuses it, as the gate's. It is not stored:
        the store's history is the target's, and a run of another agent in it would be the
        newest run of these eval sets for every command that reads one."""
        from verdryx_core.gating.challenger import challenger_name, gate_challenger

        run = challenger
        if self.selection.narrowed is not None and not run.partial:
            run = dataclasses.replace(run, partial=True)
        if self.incomplete and run.complete:
            run = dataclasses.replace(run, complete=False)
        run = dataclasses.replace(
            run,
            commit=self.run.commit,
            branch=self.run.branch,
            ci_url=self.run.ci_url,
            run_group=self.run.run_group,
        )
        self.challenger_run = run
        gate = self.policy.gate
        if gate is None:
            from verdryx_core.gating.policy import GatePolicy

            gate = GatePolicy()
        outcome = gate_challenger(self.run, run, gate=gate, flags=self.flags)
        self.challenger = outcome
        who = f"the challenger {challenger_name(run)}"
        if outcome.refused is not None:
            why = f"{who} was refused against the champion {outcome.baseline}: {outcome.refused}"
            self.messages.append(f"ERROR: {why}")
            self.reasons.append(("refused", why))
        elif outcome.regressed:
            drift = outcome.drift
            assert drift is not None
            self.reasons.append(
                (
                    "failed",
                    f"{who} regressed against the champion {outcome.baseline}: delta "
                    f"{drift.delta:+.3f} (gate: {drift.gate})",
                )
            )
        elif outcome.not_gated is not None and not self.incomplete:
            why = "; ".join(run.errors) or "it did not finish"
            self.reasons.append(("failed", f"{who}'s run is incomplete: {why}"))

    def _missing(self, missing: MissingBaseline) -> None:
        """A label that names no baseline: refused, unless this run saves it (a first
        baseline); an incomplete run is not gated anyway."""
        if self.policy.save_baseline == missing.label:
            self.messages.append(
                f"WARNING: baseline {missing.label!r} ({missing.named_in}) was not found, so "
                "nothing was gated"
            )
            return
        if not self.run.complete or self.incomplete:
            return
        from verdryx_core.gating.compare import refused

        self.gate = refused(missing.label, f"{missing.why} ({missing.named_in})")

    def _judge_without_gate(self) -> None:
        """No baseline to gate: the judge's drift and the corrected pass rate still decide,
        as asked, on the run alone."""
        check, policy = self.judge, self.policy
        if check is None:
            return
        if policy.require_calibrated_judge and check.calibration.drift:
            why = f"judge not calibrated: {check.calibration.drift}"
            self.messages.append(f"ERROR: {why}")
            self.reasons.append(("refused", why))
            return
        if not policy.judge_correction:
            return
        from verdryx_core.errors import word_hint
        from verdryx_core.judge.calibration.correction import corrected_rate

        shortfall = check.calibration.shortfall()
        if shortfall is not None:
            why = shortfall + word_hint(" (labels: {labels})", self.flags)
            self.messages.append(f"ERROR: {why}")
            self.reasons.append(("refused", why))
            return
        passed = [
            bool(score.passed)
            for score in self.run.scores
            if score.grader == "llm_judge" and score.passed is not None
        ]
        if passed:
            rate = corrected_rate(passed, check.calibration)
            ci = f" [{rate.ci[0]:.3f}, {rate.ci[1]:.3f}]" if rate.ci else ""
            self.messages.append(
                f"judged pass rate corrected for the judge: {rate.corrected:.3f}{ci} "
                f"(observed {rate.observed:.3f} on {rate.n} judged cases)"
            )

    def stand(self, baseline: Baseline | None) -> None:
        """Each case's standing under the policy: which fail the run."""
        cases = baseline.case_map() if baseline is not None else {}
        gated = baseline is not None
        for score in self.run.scores:
            base = cases.get(score.key)
            if gated and base is None and score.value is not None:
                self.new.append(score.key)
            kind = standing(score, base, fail_on=self.policy.fail_on, gated=gated)
            if kind == "failed":
                self.failed.append(score.key)
            elif kind == "excused":
                self.excused.append(score.key)
            elif kind == "dropped":
                self.dropped.append(score.key)
        if self.failed:
            first = self.failed[0]
            self.reasons.append(("failed", f"{len(self.failed)} case(s) failed (first: {first})"))
        if self.incomplete:
            self.reasons.append(("failed", f"the run is incomplete: {self.incomplete}"))

    def nothing_measured(self) -> None:
        """Nothing unmeasured passes: a run whose every case is unmeasured says nothing of
        the agent, with or without a baseline (docs/statistics.md, "Coverage")."""
        scores = self.run.scores
        if not scores or any(score.value is not None for score in scores):
            return
        first = scores[0]
        why = (
            f"nothing was measured: all {len(scores)} eval case(s) are unmeasured (first: "
            f"{first.key}: {first.unmeasured})"
        )
        self.messages.append(f"ERROR: {why}")
        self.reasons.append(("refused", why))

    def save_baseline(self, label: str, history: _History, root: str | Path | None) -> None:
        store = history.writable
        if self.incomplete or not self.run.complete:
            self.not_saved = f"the run is incomplete ({self.incomplete})"
            self.messages.append(f"baseline {label!r} NOT saved: {self.not_saved}")
            return
        if store is not None and not self.stored:
            self.not_saved = "the run was not stored"
            self.messages.append(f"baseline {label!r} NOT saved: {self.not_saved}")
            return
        try:
            self.saved = save_baseline(
                self.run,
                label,
                store=store,
                root=root,
                allow_partial=self.policy.allow_partial_baseline,
                selection=self.selection.narrowed or SELECTION_WORDS,
                runs=self.policy.baseline_runs,
                history=self._earlier(history),
                flags=self.flags,
            )
            if self.saved.warning:
                self.messages.append(f"WARNING: {self.saved.warning}")
        except BaselineRefusedError as exc:
            why = self.worded(exc)
            self.not_saved = why
            self.messages.append(f"ERROR: baseline {label!r} NOT saved: {why}")
            self.reasons.append(("failed", f"baseline {label!r} NOT saved: {why}"))
        except (ValueError, VerdryxError, OSError) as exc:
            why = self.worded(exc) if isinstance(exc, VerdryxError) else str(exc)
            self.not_saved = why
            self.messages.append(f"ERROR: baseline {label!r} not saved: {why}")
            self.reasons.append(("failed", f"baseline {label!r} not saved: {why}"))

    def _earlier(self, history: _History) -> Store | None:
        """The store earlier runs are pooled from (None: one run is asked for, or there is
        no store)."""
        if self.policy.baseline_runs <= 1:
            return None
        try:
            return history.get()
        except VerdryxError:
            return None  # the run was not stored either: it says so

    def conclusion(self) -> Conclusion:
        refusal = next((why for kind, why in self.reasons if kind == "refused"), None)
        failure = next((why for kind, why in self.reasons if kind == "failed"), None)
        exit_: Exit = "refused" if refusal else ("failed" if failure else "ok")
        return Conclusion(
            run=self.run,
            stored=self.stored,
            not_stored=self.not_stored,
            incomplete=self.incomplete,
            gate=self.gate,
            baseline_saved=self.saved,
            baseline_not_saved=self.not_saved,
            failed=tuple(self.failed),
            excused=tuple(self.excused),
            dropped=tuple(self.dropped),
            new=tuple(self.new),
            judge=self.judge,
            challenger_run=self.challenger_run,
            challenger=self.challenger,
            messages=tuple(self.messages),
            exit=exit_,
            exit_reason=refusal or failure,
        )
