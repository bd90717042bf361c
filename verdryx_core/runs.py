"""What a run produced: one `Score` per case, the `EvalRun` that holds them, and the
`Baseline` a run is compared with.

All are frozen; each crosses process and file boundaries through `to_dict` / `from_dict`,
which produce and accept only JSON-ready builtins (xdist workers send these).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from verdryx_core.cases import case_key, output_text
from verdryx_core.limits import MAX_TOTAL_COST_USD, MAX_TOTAL_TOKENS, cost_problem, token_problem
from verdryx_core.untrusted.text import clean_text

__all__ = [
    "Baseline",
    "BaselineCase",
    "CheckResult",
    "EvalRun",
    "Score",
    "iso_utc",
    "joined_targets",
    "parse_iso",
    "pool_values",
    "set_targets_problem",
]


def iso_utc(moment: datetime) -> str:
    """ISO-8601 in UTC; a naive datetime is taken to be UTC already."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat()


def parse_iso(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckResult:
    """What one check of a multi-check case scored (kept on the Score, shown and stored)."""

    grader: str
    weight: float
    value: float | None
    unmeasured: str | None = None
    reason: str | None = None
    #: The part of the result it read (`Check.reads`); None in runs stored before checks
    #: said what they read.
    on: str | None = None
    #: Why the check could not grade what the agent produced, which scored it 0
    #: (`Score.failed_by_output`); None otherwise.
    failed_by_output: str | None = None
    #: Its own pass bar (the check's `min_score`, else its grader's own), which the case's
    #: pass needs it to reach; None: it has none (docs/graders.md, "Multi-check cases").
    bar: float | None = None

    @property
    def short(self) -> bool:
        """Measured below its own bar."""
        return self.bar is not None and self.value is not None and self.value < self.bar

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "grader": self.grader,
            "weight": self.weight,
            "value": self.value,
            "unmeasured": self.unmeasured,
            "reason": self.reason,
        }
        if self.on is not None:
            data["on"] = self.on
        if self.failed_by_output is not None:
            data["failed_by_output"] = self.failed_by_output
        if self.bar is not None:
            data["bar"] = self.bar
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CheckResult:
        value = data.get("value")
        return cls(
            grader=data["grader"],
            weight=float(data.get("weight", 1.0)),
            value=None if value is None else float(value),
            unmeasured=data.get("unmeasured"),
            reason=data.get("reason"),
            on=data.get("on"),
            failed_by_output=data.get("failed_by_output"),
            bar=None if data.get("bar") is None else float(data["bar"]),
        )


_SCORE_TEXT: Final = (
    "case_id",
    "eval_set_id",
    "grader",
    "unmeasured",
    "output",
    "expected",
    "reason",
    "failed_by_output",
)
#: Free text a reader sees beside the score (docs/store.md): kept as text whatever it was.
_SCORE_FREE_TEXT: Final = ("output", "expected", "reason")
_RUN_TEXT: Final = (
    "id",
    "model",
    "judge_model",
    "agent_id",
    "plugin_version",
    "target",
    "target_version",
)


#: The grader whose model is the run's judge (`EvalRun.judge_model`).
_JUDGE: Final = "llm_judge"


def _unit(value: object) -> bool:
    """A number in [0, 1] (finite; a bool is not a score)."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0.0 <= value <= 1.0
    )


def _clean_fields(instance: object, names: tuple[str, ...]) -> None:
    for name in names:
        value = getattr(instance, name)
        # ASCII holds no lone surrogate: most text is left as it is without a look.
        if isinstance(value, str) and not value.isascii():
            cleaned = clean_text(value)
            if cleaned is not value:
                object.__setattr__(instance, name, cleaned)


@dataclass(frozen=True, slots=True, kw_only=True)
class Score:
    """The graded result of one case in one run.

    `value` is None exactly when the case was unmeasured, and `unmeasured` then says why:
    an unmeasured case is counted apart, never as 0.0. Unmeasured is for what the agent does
    not control (no judge configured, no isolation); an output that could not be graded is
    the output's failure: it scores 0 and `failed_by_output` says why (docs/outcomes.md,
    "What counts as unmeasured").
    """

    case_id: str
    eval_set_id: str
    value: float | None
    grader: str
    tokens: int = 0
    #: Spend on the model under evaluation.
    cost_usd: float = 0.0
    #: Spend on grading (the LLM judge, the typed verdict service), kept apart from model spend.
    judge_cost_usd: float = 0.0
    unmeasured: str | None = None
    #: `EvalCase.fingerprint()` of the case as graded; "" for custom cases without content.
    fingerprint: str = ""
    passed: bool | None = None
    #: The pass bar `passed` was decided against (see `verdryx_core.evaluation.scoring`). Not
    #: stored: a run read back from the store keeps `passed`, and its bar is not compared.
    bar: float | None = field(default=None, compare=False)
    #: Per-sample values when the case was sampled several times (`--verdryx-repeat`).
    samples: tuple[float, ...] = ()
    #: What a reader needs to judge the grade: output, expected, judge reason.
    output: str | None = None
    expected: str | None = None
    reason: str | None = None
    #: A multi-check case's per-check results, in the case's order.
    checks: tuple[CheckResult, ...] = ()
    #: Seconds the case's calls took (model or target, and judge; all samples), when it made
    #: any. Not stored: it is the item's duration (`--durations`, JUnit `time`).
    latency_s: float | None = field(default=None, compare=False)
    #: What a plugged-in grader keeps of this case for its own tables (a contract's task and
    #: agent ids), JSON-ready strings; it travels with the score (xdist), never into the
    #: scores table (verdryx_core.graders.plugins, `after_save`).
    notes: Mapping[str, str] | None = field(default=None, compare=False)
    #: The case is required (`EvalCase.required`): below its bar it fails the session.
    required: bool = field(default=False, compare=False)
    #: The case's `cluster` (cases that share a source): the gate resamples whole clusters
    #: (docs/statistics.md, "Clustered cases"); None: a cluster of its own.
    cluster: str | None = None
    #: The folders its samples were graded in, when kept (`--verdryx-keep-workspaces`); it
    #: travels with the score (xdist), never into the store.
    workspaces: tuple[str, ...] = field(default=(), compare=False)
    #: Whether each sample passed, when a multi-check case's checks have bars of their own
    #: (a sample passes when it reaches the case's bar and each check its own); empty: each
    #: sample's value against `bar` says it. The store keeps `sample_passes()` here, so a
    #: run read back gates on the pass metric as it did live (`bar` is not kept).
    passes: tuple[bool, ...] = field(default=(), compare=False)
    #: Why what the agent produced (its output, its tool calls, the workspace it left)
    #: could not be graded: a grader's time bound on it, a contract check it made fail to
    #: run, a judge answer about it that cannot be read. Such a sample scores 0 and the case
    #: is not passed, never unmeasured; None when every sample was graded.
    failed_by_output: str | None = None

    def __post_init__(self) -> None:
        # The text rule (untrusted/text.py): an agent's or a provider's answer may hold a lone
        # surrogate; every score passes here on its way to the store, JUnit and the terminal,
        # so the run is kept with U+FFFD in its place instead of being lost to an encode error.
        for name in _SCORE_FREE_TEXT:
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                # Whatever a grader accepted (a list of calls, an object) is kept as its
                # text: a value the store cannot bind must never lose the run.
                object.__setattr__(self, name, output_text(value))
        _clean_fields(self, _SCORE_TEXT)
        if (self.value is None) == (self.unmeasured is None):
            raise ValueError(
                f"score for case {self.case_id!r}: exactly one of value and unmeasured is set"
            )
        if self.value is not None and not _unit(self.value):
            raise ValueError(f"score for case {self.case_id!r}: value {self.value!r} not in [0, 1]")
        if self.failed_by_output is not None and self.value is None:
            raise ValueError(
                f"score for case {self.case_id!r}: a case failed by its output is measured"
            )
        # A score sums its samples' calls: held to the total bounds (verdryx_core/limits.py),
        # so no sum of scores overflows the store's 64-bit columns unnoticed. The plain
        # comparisons are the common path (every score passes here); limits words a failure.
        tokens = self.tokens
        if not (type(tokens) is int and 0 <= tokens <= MAX_TOTAL_TOKENS):
            problem = token_problem(tokens, limit=MAX_TOTAL_TOKENS)
            if problem is not None:  # else an int subclass within the bounds
                raise ValueError(f"score for case {self.case_id!r}: tokens: {problem}")
        for name in ("cost_usd", "judge_cost_usd"):
            cost = getattr(self, name)
            if not (type(cost) in (float, int) and 0 <= cost <= MAX_TOTAL_COST_USD):
                problem = cost_problem(cost, limit=MAX_TOTAL_COST_USD)
                if problem is not None:  # else a float subclass within the bounds
                    raise ValueError(f"score for case {self.case_id!r}: {name}: {problem}")
        for sample in self.samples:
            if not _unit(sample):
                raise ValueError(
                    f"score for case {self.case_id!r}: sample {sample!r} not in [0, 1]"
                )

    @property
    def key(self) -> str:
        return case_key(self.eval_set_id, self.case_id)

    def sample_passes(self) -> tuple[bool, ...]:
        """Whether each of `samples` passed (`passes`, else each value against `bar`); empty
        without samples or a bar."""
        if len(self.passes) == len(self.samples):
            return self.passes
        if self.bar is None:
            return ()
        return tuple(value >= self.bar for value in self.samples)

    @property
    def measured(self) -> bool:
        return self.value is not None

    @property
    def uses_judge(self) -> bool:
        """Graded by the LLM judge: an `llm_judge` case, or a case one of whose `checks` is
        (its judge is the run's judge, recorded and compared like an `llm_judge` case's)."""
        return self.grader == _JUDGE or any(check.grader == _JUDGE for check in self.checks)

    @property
    def judged(self) -> bool:
        """The judge graded it: the case's value, or its `llm_judge` check's, was measured."""
        if self.grader == _JUDGE:
            return self.value is not None
        return any(check.grader == _JUDGE and check.value is not None for check in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return (
            {
                "case_id": self.case_id,
                "eval_set_id": self.eval_set_id,
                "value": self.value,
                "grader": self.grader,
                "tokens": self.tokens,
                "cost_usd": self.cost_usd,
                "judge_cost_usd": self.judge_cost_usd,
                "unmeasured": self.unmeasured,
                "fingerprint": self.fingerprint,
                "passed": self.passed,
                "samples": list(self.samples),
                "output": self.output,
                "expected": self.expected,
                "reason": self.reason,
                "checks": [check.to_dict() for check in self.checks],
            }
            | ({"notes": dict(self.notes)} if self.notes else {})
            | ({"required": True} if self.required else {})
            | ({"cluster": self.cluster} if self.cluster is not None else {})
            | ({"workspaces": list(self.workspaces)} if self.workspaces else {})
            | ({"passes": list(self.passes)} if self.passes else {})
            | (
                {"failed_by_output": self.failed_by_output}
                if self.failed_by_output is not None
                else {}
            )
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Score:
        return cls(
            case_id=data["case_id"],
            eval_set_id=data["eval_set_id"],
            value=data.get("value"),
            grader=data["grader"],
            tokens=int(data.get("tokens") or 0),
            cost_usd=float(data.get("cost_usd") or 0.0),
            judge_cost_usd=float(data.get("judge_cost_usd") or 0.0),
            unmeasured=data.get("unmeasured"),
            fingerprint=data.get("fingerprint") or "",
            passed=data.get("passed"),
            samples=tuple(data.get("samples") or ()),
            output=data.get("output"),
            expected=data.get("expected"),
            reason=data.get("reason"),
            checks=tuple(CheckResult.from_dict(item) for item in data.get("checks") or ()),
            notes=data.get("notes") or None,
            required=bool(data.get("required", False)),
            cluster=data.get("cluster"),
            workspaces=tuple(data.get("workspaces") or ()),
            passes=tuple(bool(item) for item in data.get("passes") or ()),
            failed_by_output=data.get("failed_by_output"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class EvalRun:
    """One graded run over one or more eval sets. `complete` is False for an interrupted run.

    The provenance fields say where a run came from: a free `label`, the VCS `commit` and
    `branch`, the CI job's `ci_url`, the `run_group` its shards share, this run's `shard`
    ("2/3"), and `partial` when it ran a subset of the cases on purpose (one shard, a `-k`).
    """

    id: str
    model: str
    started_at: datetime
    finished_at: datetime | None = None
    eval_set_ids: tuple[str, ...] = ()
    judge_model: str | None = None
    agent_id: str | None = None
    scores: tuple[Score, ...] = ()
    complete: bool = True
    plugin_version: str = ""
    label: str | None = None
    commit: str | None = None
    branch: str | None = None
    ci_url: str | None = None
    run_group: str | None = None
    shard: str | None = None
    partial: bool = False
    #: What produced the outputs besides `model`: the agent under test (its `module:callable`,
    #: several joined by ", " when eval sets name their own) and its declared version.
    target: str | None = None
    target_version: str | None = None
    #: A shard run's share of the cases when they were collected (before `-k` and the like):
    #: fewer scores than this, and the shard was narrowed (docs/sharding.md).
    shard_share: int | None = None
    #: The agent under test of each eval set whose cases were given to a live source, by eval
    #: set id: its `module:callable` (several joined by ", " when its cases name their own),
    #: or None for the model alone; `target_version` is theirs when they have one. Targets
    #: are compared per eval set (docs/targets.md, "One target per eval set"). None: a run
    #: recorded before they were kept, which `target` alone describes.
    set_targets: Mapping[str, str | None] | None = field(default=None, hash=False)
    #: Cases that errored instead of scoring ("set::case: why", one line each): they make the
    #: run incomplete. Not stored; what reaches the store is the run's `complete` flag.
    errors: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        # The eval sets are a set: the store keeps them sorted (runs are matched by the exact
        # set) and "" is no agent, so both are normalised here, or a run read back from the
        # store would not equal the run that was saved.
        object.__setattr__(
            self, "eval_set_ids", tuple(sorted({clean_text(item) for item in self.eval_set_ids}))
        )
        object.__setattr__(self, "agent_id", self.agent_id or None)
        _clean_fields(self, _RUN_TEXT)
        object.__setattr__(self, "set_targets", _cleaned_targets(self.set_targets))

    @property
    def measured(self) -> tuple[Score, ...]:
        return tuple(score for score in self.scores if score.value is not None)

    @property
    def unmeasured(self) -> tuple[Score, ...]:
        return tuple(score for score in self.scores if score.value is None)

    @property
    def mean_score(self) -> float | None:
        """Mean over measured cases; None when nothing was measured (never a made-up 0.0)."""
        values = [score.value for score in self.scores if score.value is not None]
        return math.fsum(values) / len(values) if values else None

    @property
    def total_tokens(self) -> int:
        return sum(score.tokens for score in self.scores)

    @property
    def model_cost_usd(self) -> float:
        return math.fsum(score.cost_usd for score in self.scores)

    @property
    def judge_cost_usd(self) -> float:
        return math.fsum(score.judge_cost_usd for score in self.scores)

    @property
    def total_cost_usd(self) -> float:
        return self.model_cost_usd + self.judge_cost_usd

    def totals_problem(self) -> str | None:
        """Why the run's totals cannot be stored or shown (past the maxima of
        docs/store.md, "Maxima"), in words; None when they can. Each score is within the
        bounds already; this is the check of their sum."""
        tokens = self.total_tokens
        if tokens > MAX_TOTAL_TOKENS:
            return f"its total tokens ({tokens:,}) pass the maximum of {MAX_TOTAL_TOKENS:,}"
        # Summed as exact integers of micro-dollars would be; fsum of bounded costs cannot
        # overflow, so the comparison is safe.
        for name, total in (
            ("model cost", self.model_cost_usd),
            ("judge cost", self.judge_cost_usd),
            ("total cost", self.total_cost_usd),
        ):
            if total > MAX_TOTAL_COST_USD:
                return f"its {name} (${total:,.2f}) passes the maximum of ${MAX_TOTAL_COST_USD:,}"
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "model": self.model,
            "started_at": iso_utc(self.started_at),
            "finished_at": iso_utc(self.finished_at) if self.finished_at else None,
            "eval_set_ids": list(self.eval_set_ids),
            "judge_model": self.judge_model,
            "agent_id": self.agent_id,
            "scores": [score.to_dict() for score in self.scores],
            "complete": self.complete,
            "plugin_version": self.plugin_version,
            "label": self.label,
            "commit": self.commit,
            "branch": self.branch,
            "ci_url": self.ci_url,
            "run_group": self.run_group,
            "shard": self.shard,
            "partial": self.partial,
            "target": self.target,
            "target_version": self.target_version,
            "shard_share": self.shard_share,
            "set_targets": None if self.set_targets is None else dict(self.set_targets),
        }

    @property
    def produced_by(self) -> str:
        """What produced the outputs, as summaries say it: `target=orders:answer@v2` first
        for an agent under test (its cases' outputs), then `model=NAME` (the cases without a
        target, and what a target falls back to). A target run none of whose eval sets went
        to the model names no model: `model=stub` beside a target and a real judge reads as
        if something had been graded by the stub."""
        if self.target:
            version = f"@{self.target_version}" if self.target_version else ""
            produced = f"target={self.target}{version}"
            if self.set_targets is not None and None not in self.set_targets.values():
                return produced
            return f"{produced}  model={self.model}"
        return f"model={self.model}"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvalRun:
        finished = data.get("finished_at")
        return cls(
            id=data["id"],
            model=data["model"],
            started_at=parse_iso(data["started_at"]),
            finished_at=parse_iso(finished) if finished else None,
            eval_set_ids=tuple(data.get("eval_set_ids") or ()),
            judge_model=data.get("judge_model"),
            agent_id=data.get("agent_id") or None,
            scores=tuple(Score.from_dict(item) for item in data.get("scores") or ()),
            complete=bool(data.get("complete", True)),
            plugin_version=data.get("plugin_version") or "",
            label=data.get("label"),
            commit=data.get("commit"),
            branch=data.get("branch"),
            ci_url=data.get("ci_url"),
            run_group=data.get("run_group"),
            shard=data.get("shard"),
            partial=bool(data.get("partial", False)),
            target=data.get("target"),
            target_version=data.get("target_version"),
            shard_share=data.get("shard_share"),
            set_targets=data.get("set_targets"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class BaselineCase:
    """What a baseline remembers of one case: its score and the fingerprint it was measured on."""

    eval_set_id: str
    case_id: str
    value: float
    fingerprint: str = ""
    passed: bool | None = None
    #: Its samples' scores when the run sampled it more than once: the per-case variance
    #: `--verdryx-repeat=auto` allocates by, and the per-case drop test's baseline side.
    #: Empty in baselines saved before they were kept (docs/statistics.md).
    samples: tuple[float, ...] = ()
    #: The case's `cluster`, as measured (None: a cluster of its own).
    cluster: str | None = None
    #: Whether each of `samples` reached its bar (`Score.sample_passes`): the pass metric's
    #: share of passing samples. Empty in baselines saved before they were kept, whose pass
    #: metric is `passed` (docs/statistics.md, "What the gate compares").
    passes: tuple[bool, ...] = ()

    @property
    def key(self) -> str:
        return case_key(self.eval_set_id, self.case_id)

    def to_dict(self) -> dict[str, Any]:
        return (
            {
                "eval_set_id": self.eval_set_id,
                "case_id": self.case_id,
                "value": self.value,
                "fingerprint": self.fingerprint,
                "passed": self.passed,
            }
            | ({"samples": list(self.samples)} if self.samples else {})
            | ({"cluster": self.cluster} if self.cluster is not None else {})
            | ({"passes": list(self.passes)} if self.passes else {})
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BaselineCase:
        return cls(
            eval_set_id=data["eval_set_id"],
            case_id=data["case_id"],
            value=float(data["value"]),
            fingerprint=data.get("fingerprint") or "",
            passed=data.get("passed"),
            samples=tuple(float(item) for item in data.get("samples") or ()),
            cluster=data.get("cluster"),
            passes=tuple(bool(item) for item in data.get("passes") or ()),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Baseline:
    """A frozen snapshot of a run's measured cases, never a live pointer to the run."""

    id: str
    label: str
    run_id: str
    mean: float
    created_at: datetime
    model: str
    judge_model: str | None = None
    plugin_version: str = ""
    cases: tuple[BaselineCase, ...] = ()
    #: The agent under test of the baseline's run, and its declared version (None: none).
    target: str | None = None
    target_version: str | None = None
    #: Its run's agent under test per eval set (`EvalRun.set_targets`); None: not recorded.
    set_targets: Mapping[str, str | None] | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "set_targets", _cleaned_targets(self.set_targets))

    @classmethod
    def from_run(
        cls, run: EvalRun, *, id: str, label: str, created_at: datetime | None = None
    ) -> Baseline:
        mean = run.mean_score
        if mean is None:
            raise ValueError(
                f"eval run {run.id!r} has zero measured cases "
                f"({len(run.unmeasured)} unmeasured): a baseline of an unmeasured mean "
                "would be a fabricated number"
            )
        seen: set[str] = set()
        for score in run.measured:
            if score.key in seen:
                # A baseline remembers one score per case; which of two would it keep?
                raise ValueError(
                    f"eval run {run.id!r} scores case {score.key!r} more than once (was an "
                    "eval set given twice?): a baseline needs one score per case"
                )
            seen.add(score.key)
        return cls(
            id=id,
            label=label,
            run_id=run.id,
            mean=mean,
            created_at=created_at or datetime.now(UTC),
            model=run.model,
            judge_model=run.judge_model,
            plugin_version=run.plugin_version,
            target=run.target,
            target_version=run.target_version,
            set_targets=run.set_targets,
            cases=tuple(
                BaselineCase(
                    eval_set_id=score.eval_set_id,
                    case_id=score.case_id,
                    value=score.value,
                    fingerprint=score.fingerprint,
                    passed=score.passed,
                    samples=score.samples,
                    cluster=score.cluster,
                    passes=score.sample_passes(),
                )
                for score in run.scores
                if score.value is not None
            ),
        )

    def case_map(self) -> dict[str, BaselineCase]:
        return {case.key: case for case in self.cases}

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "label": self.label,
            "run_id": self.run_id,
            "mean": self.mean,
            "created_at": iso_utc(self.created_at),
            "model": self.model,
            "judge_model": self.judge_model,
            "plugin_version": self.plugin_version,
            "cases": [case.to_dict() for case in self.cases],
        } | {
            name: value
            for name, value in (
                ("target", self.target),
                ("target_version", self.target_version),
                ("set_targets", None if self.set_targets is None else dict(self.set_targets)),
            )
            if value is not None
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Baseline:
        return cls(
            id=data["id"],
            label=data.get("label") or "",
            run_id=data["run_id"],
            mean=float(data["mean"]),
            created_at=parse_iso(data["created_at"]),
            model=data["model"],
            judge_model=data.get("judge_model"),
            plugin_version=data.get("plugin_version") or "",
            cases=tuple(BaselineCase.from_dict(item) for item in data.get("cases") or ()),
            target=data.get("target"),
            target_version=data.get("target_version"),
            set_targets=data.get("set_targets"),
        )


def set_targets_problem(value: object) -> str | None:
    """Why `value` is not a run's targets per eval set (an object of eval set id -> target
    or null); None when it is one."""
    if not isinstance(value, Mapping):
        return "expected an object of eval set id -> target (or null)"
    for set_id, target in value.items():
        if not isinstance(set_id, str) or not (target is None or isinstance(target, str)):
            return f"eval set {set_id!r} has target {target!r}, expected text or null"
    return None


def _cleaned_targets(
    value: Mapping[str, str | None] | None,
) -> Mapping[str, str | None] | None:
    """A plain dict in eval set order, its text cleaned (the text rule, untrusted/text.py)."""
    if value is None:
        return None
    problem = set_targets_problem(value)
    if problem is not None:
        raise ValueError(f"set_targets: {problem}")
    return {
        clean_text(set_id): None if target is None else clean_text(target)
        for set_id, target in sorted(value.items())
    }


def joined_targets(set_targets: Mapping[str, str | None]) -> str | None:
    """The run's `target` from its targets per eval set: every one, sorted, joined by ", "
    (None when every set was the model alone)."""
    specs = {
        spec.strip()
        for target in set_targets.values()
        if target
        for spec in target.split(",")
        if spec.strip()
    }
    return ", ".join(sorted(specs)) or None


def pool_values(runs: Iterable[EvalRun]) -> list[float]:
    return [score.value for run in runs for score in run.scores if score.value is not None]
