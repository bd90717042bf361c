"""The `verdryx` option group: every flag is also an ini key (`--verdryx-x-y` -> `verdryx_x_y`).

Flags beat ini keys; converters turn a bad value into a `pytest.UsageError` naming the value
and the form expected, so a typo is exit 4 with one line, never a traceback.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pytest

# Only the defaults, from a module that imports nothing: the options are defined in every
# session, eval cases or not, and the rest of the core is imported when it is used
# (docs/options.md, "When verdryx turns on").
from verdryx_core.defaults import (
    DEFAULT_MIN_COVERAGE,
    DEFAULT_MIN_SCORE,
    DEFAULT_THRESHOLD,
    GATES,
)
from verdryx_core.option_numbers import option_float

if TYPE_CHECKING:
    from verdryx_core.errors import VerdryxError
    from verdryx_core.evaluation import EvalSettings
    from verdryx_core.evaluation.sharding import ShardSpec
    from verdryx_core.hooks import AddonOption

__all__ = [
    "DEFAULT_PATTERNS",
    "FLAGS",
    "OPTIONS",
    "Settings",
    "add_options",
    "eval_settings",
    "evalset_patterns",
    "explicitly_asked",
    "read_settings",
    "worded",
]


DEFAULT_PATTERNS: Final = ("*.evalset.json", "*.evalset.jsonl", "*.evalset.csv")


@dataclass(frozen=True, slots=True)
class _Option:
    name: str  # dest, also the ini key
    help: str
    default: Any = None
    kind: str = "string"  # string | bool (flag) | int | float | choice | repeat (int or auto)
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    metavar: str | None = None

    @property
    def flag(self) -> str:
        if self.name == "no_verdryx_store":
            return "--no-verdryx-store"
        return "--" + self.name.replace("_", "-")


OPTIONS: Final = (
    _Option(
        "verdryx_model",
        "model under evaluation: 'stub' (offline, deterministic) or a real model id",
        "stub",
        metavar="MODEL",
    ),
    _Option(
        "verdryx_judge",
        "model for llm_judge cases ('stub': the offline stub judge); unset: those cases are "
        "unmeasured (skipped), whatever the model, never paid for",
        metavar="MODEL",
    ),
    _Option(
        "verdryx_db",
        "the store; default $VERDRYX_DB, else $TAIPAN_HOME/verdryx.db when that folder "
        "exists, else ./verdryx.db",
        metavar="PATH",
    ),
    _Option("verdryx_baseline", "gate this run against the baseline LABEL", metavar="LABEL"),
    _Option(
        "verdryx_save_baseline",
        "save this run as baseline LABEL in the store and in .verdryx/baselines/LABEL.json",
        metavar="LABEL",
    ),
    _Option(
        "verdryx_baseline_runs",
        "with --verdryx-save-baseline, pool each case's samples over this run and the K-1 "
        "newest earlier complete runs of the same eval sets, model, judge, target and target "
        "version (default 1)",
        1,
        "int",
        minimum=1,
        maximum=100,
        metavar="K",
    ),
    _Option(
        "verdryx_window",
        "pool this run with the N-1 previous complete runs of the same eval sets, model, "
        "judge, target and target version (default 1)",
        1,
        "int",
        minimum=1,
        metavar="N",
    ),
    _Option(
        "verdryx_gate",
        "verdict rule: 'significant' (default: the 95%% interval lies below zero) or "
        "'threshold' (delta <= -threshold, or the interval below zero)",
        "significant",
        "choice",
        choices=GATES,
    ),
    _Option(
        "verdryx_threshold",
        f"drop that the threshold gate calls regressed (default {DEFAULT_THRESHOLD})",
        DEFAULT_THRESHOLD,
        "float",
        minimum=0.0,
        maximum=1.0,
        metavar="F",
    ),
    _Option(
        "verdryx_min_effect",
        "smallest drop the significant gate calls regressed (default 0)",
        0.0,
        "float",
        minimum=0.0,
        maximum=1.0,
        metavar="F",
    ),
    _Option(
        "verdryx_fail_on",
        "with a baseline, what fails the session: 'verdict' (default: a regressed or refused "
        "gate, or a required case below its bar; other cases below their bar are reported as "
        "dropped) or 'cases' (every case below its bar fails, as without a baseline)",
        "verdict",
        "choice",
        choices=("verdict", "cases"),
    ),
    _Option(
        "verdryx_min_coverage",
        "refuse a gate that compared no more than this share of the baseline's cases "
        f"(default {DEFAULT_MIN_COVERAGE})",
        DEFAULT_MIN_COVERAGE,
        "float",
        minimum=0.0,
        maximum=1.0,
        metavar="F",
    ),
    _Option(
        "verdryx_detect",
        "the smallest drop you need the gate to see; an on-track verdict that cannot see it "
        "is labelled underpowered (default 0.05)",
        0.05,
        "float",
        minimum=0.001,
        maximum=1.0,
        metavar="D",
    ),
    _Option(
        "verdryx_require_power",
        "refuse the gate when the run cannot see a drop of --verdryx-detect",
        False,
        "bool",
    ),
    _Option(
        "verdryx_sequential",
        "grade the eval cases in a seeded random order and stop calling once a confidence "
        "sequence settles the verdict against the baseline (regressed, or no drop of "
        "--verdryx-detect); the cases left are not needed",
        False,
        "bool",
    ),
    _Option(
        "verdryx_sequential_seed",
        "the seed of --verdryx-sequential's case order (default 0)",
        0,
        "int",
        minimum=0,
        metavar="N",
    ),
    _Option(
        "verdryx_labels",
        "human labels of judged outputs: a *.labels.jsonl file, or a folder of them; the "
        "summary then shows how well the judge agrees with them",
        metavar="PATH",
    ),
    _Option(
        "verdryx_judge_correction",
        "gate the judged cases' pass rate corrected for the judge's TPR / TNR on the labels "
        "(refused with too few labels)",
        False,
        "bool",
    ),
    _Option(
        "verdryx_require_calibrated_judge",
        "refuse the gate when the judge's kappa on the labels fell significantly below its "
        "stored figure (else a warning)",
        False,
        "bool",
    ),
    _Option(
        "verdryx_gate_metric",
        "what the gate compares per case: 'score' (default: mean scores) or 'pass' (pass "
        "rates, in points)",
        "score",
        "choice",
        choices=("score", "pass"),
    ),
    _Option(
        "verdryx_min_score",
        "pass bar for cases without their own min_score (default: the grader's own bar, "
        f"1.0 for tool_trace, else {DEFAULT_MIN_SCORE})",
        None,
        "float",
        minimum=0.0,
        maximum=1.0,
        metavar="F",
    ),
    _Option(
        "verdryx_concurrency",
        "model calls in flight before the first item runs (default 8)",
        8,
        "int",
        minimum=1,
        maximum=256,
        metavar="N",
    ),
    _Option(
        "verdryx_cache",
        "model response cache: 'on' (default), 'off', or 'replay' (never call; a miss is an error)",
        "on",
        "choice",
        choices=("on", "off", "replay"),
    ),
    _Option(
        "verdryx_repeat",
        "sample every model case N times; its score is the mean (default 1); 'auto': "
        "spend --verdryx-max-samples where the baseline's cases varied",
        1,
        "repeat",
        minimum=1,
        maximum=100,
        metavar="N|auto",
    ),
    _Option(
        "verdryx_max_samples",
        "with --verdryx-repeat=auto, the samples of one run in all (default 3 per case)",
        None,
        "int",
        minimum=1,
        metavar="N",
    ),
    _Option(
        "verdryx_fdr",
        "the false discovery rate of the per-case drop tests: a case is a significant drop "
        "at this rate, Benjamini-Hochberg corrected (default 0.1)",
        0.1,
        "float",
        minimum=0.0001,
        maximum=1.0,
        metavar="Q",
    ),
    _Option(
        "verdryx_agent_id",
        "the agent this run measures (agent://...), for events and SLO joins",
        metavar="ID",
    ),
    _Option(
        "verdryx_target",
        "the agent under test, module:callable, called once per case and repeat (an eval "
        "set's own target wins; unset: the model answers)",
        metavar="MODULE:CALLABLE",
    ),
    _Option(
        "verdryx_target_version",
        "the target's version: its results are cached under it (unset: never cached)",
        metavar="VERSION",
    ),
    _Option(
        "verdryx_challenger",
        "a second agent, module:callable, called on every case the target answers, with the "
        "same inputs, graded the same way and gated against the target (paired)",
        metavar="MODULE:CALLABLE",
    ),
    _Option(
        "verdryx_challenger_version",
        "the challenger's version: its results are cached under it (unset: never cached)",
        metavar="VERSION",
    ),
    _Option(
        "verdryx_pairwise_judge",
        "with a challenger: a judge model that compares the target's and the challenger's "
        "replies to each case, in both orders, and reports the challenger's win rate",
        metavar="MODEL",
    ),
    _Option(
        "verdryx_user_model",
        "who plays a case's simulated user with a persona: stub (offline, deterministic) or "
        "a model id",
        "stub",
        metavar="MODEL",
    ),
    _Option(
        "verdryx_otel",
        "auto: a target call's OpenTelemetry GenAI spans give its result the tool calls, "
        "usage and model it does not return (when opentelemetry-sdk is installed); off: "
        "never read",
        "auto",
        "choice",
        choices=("auto", "off"),
    ),
    _Option(
        "verdryx_timeout",
        "seconds any one call may take: target, model, judge, typed (default 120)",
        120.0,
        "float",
        minimum=0.001,
        metavar="SECONDS",
    ),
    _Option("verdryx_report", "write a self-contained HTML report to PATH", metavar="PATH"),
    _Option(
        "verdryx_allow_model_change",
        "compare against a baseline of another model or judge anyway",
        False,
        "bool",
    ),
    _Option("no_verdryx_store", "do not save this run to the store", False, "bool"),
    _Option(
        "verdryx_shard",
        "run shard K of N: keep the eval cases a stable hash of (eval set id, case id) puts "
        "in shard K, deselect the rest; the run is stored for `verdryx gate`, not gated",
        metavar="K/N",
    ),
    _Option(
        "verdryx_run_group",
        "the run group a shard's run is stored under (default: the CI's run id, e.g. "
        "github-RUNID-ATTEMPT)",
        metavar="ID",
    ),
    _Option(
        "verdryx_batch",
        "send the model and judge calls as Anthropic Message Batches (half price, slower) "
        "before the items run",
        False,
        "bool",
    ),
    _Option(
        "verdryx_unsafe_exec",
        "run exec cases without kernel isolation where the machine offers none (default: "
        "refused there)",
        False,
        "bool",
    ),
    _Option(
        "verdryx_exec_disk",
        "the work folder's total size of an exec case, MiB (default 256): a case that fills "
        "it fails with that reason",
        256,
        "int",
        minimum=1,
        maximum=1 << 20,
        metavar="MIB",
    ),
    _Option(
        "verdryx_label",
        "a free label stored with this run (shown by verdryx runs/show and the report)",
        metavar="TEXT",
    ),
    _Option(
        "verdryx_keep_workspaces",
        "leave each case's workspace folder in place after grading and print the folders "
        "of failed cases (default: removed once graded)",
        False,
        "bool",
    ),
    _Option(
        "verdryx_allow_partial_baseline",
        "let --verdryx-save-baseline save a subset run (-k, -m, --lf, --deselect, node ids)",
        False,
        "bool",
    ),
)


@cache
def _addon_options() -> tuple[tuple[_Option, AddonOption], ...]:
    """The add-ons' options in this face (`--verdryx-NAME`, ini `verdryx_NAME`), each with
    its declaration (verdryx_core.hooks): listed once a process, when options are defined."""
    from verdryx_core.hooks import addon_options

    taken = {option.name.removeprefix("verdryx_") for option in OPTIONS}
    try:
        found = addon_options("pytest", taken=taken.__contains__)
    except Exception as exc:
        # The error family is imported only when there is an error: every session lists the
        # add-ons, and one without eval cases imports nothing else of the core.
        from verdryx_core.errors import VerdryxError

        if isinstance(exc, VerdryxError):
            raise pytest.UsageError(str(exc)) from None
        raise
    return tuple(
        (
            _Option("verdryx_" + option.name, option.help, option.default, metavar=option.metavar),
            option,
        )
        for option in found
    )


def all_options() -> tuple[_Option, ...]:
    """verdryx's own options, then the add-ons'."""
    return OPTIONS + tuple(option for option, _ in _addon_options())


class _Flags(Mapping[str, str]):
    """How this face spells each setting a core message may point at (`--verdryx-cache`...,
    an add-on's too): built on first use, once the add-ons are listed."""

    @cached_property
    def _flags(self) -> dict[str, str]:
        return {
            **{
                option.name.removeprefix("verdryx_"): option.flag
                for option in all_options()
                if option.name.startswith("verdryx_")
            },
            "save_baseline": "--verdryx-save-baseline=LABEL",
        }

    def __getitem__(self, key: str) -> str:
        return self._flags[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._flags)

    def __len__(self) -> int:
        return len(self._flags)


FLAGS: Final[Mapping[str, str]] = _Flags()


def worded(exc: VerdryxError) -> str:
    """A core error in this face's words."""
    return exc.worded(FLAGS)


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    model: str
    judge: str | None
    db: str | None
    baseline: str | None
    save_baseline: str | None
    window: int
    gate: str
    threshold: float
    min_effect: float
    min_score: float | None
    fail_on: str = "verdict"
    min_coverage: float = DEFAULT_MIN_COVERAGE
    detect: float = 0.05
    require_power: bool = False
    #: `--verdryx-sequential`: a seeded random order, stopping once the verdict is settled.
    sequential: bool = False
    sequential_seed: int = 0
    gate_metric: str = "score"
    labels: str | None = None
    judge_correction: bool = False
    require_calibrated_judge: bool = False
    concurrency: int
    cache: str
    repeat: int
    #: `--verdryx-repeat=auto`: samples per case from the baseline's per-case variance.
    repeat_auto: bool = False
    max_samples: int | None = None
    fdr: float = 0.1
    agent_id: str | None
    report: str | None
    allow_model_change: bool
    store: bool
    label: str | None = None
    allow_partial_baseline: bool = False
    baseline_runs: int = 1
    patterns: tuple[str, ...]
    prices: str | None
    shard: ShardSpec | None = None
    run_group: str | None = None
    batch: bool = False
    target: str | None = None
    target_version: str | None = None
    challenger: str | None = None
    challenger_version: str | None = None
    pairwise_judge: str | None = None
    user_model: str = "stub"
    otel: str = "auto"
    timeout: float = 120.0
    unsafe_exec: bool = False
    exec_disk_mib: int = 256
    keep_workspaces: bool = False
    #: The add-ons' options by name (`events`, `typed_url`...; None when unset):
    #: verdryx_core.hooks.
    addons: Mapping[str, Any] = field(default_factory=dict)

    @property
    def judge_model(self) -> str | None:
        from verdryx_core.evaluation import judge_in_effect

        return judge_in_effect(self.judge)


def eval_settings(
    settings: Settings,
    prices_base: Path,
    target_root: Path | None = None,
    *,
    answered_ahead: bool = False,
) -> EvalSettings:
    """What the pipeline needs; a relative price file is read from `prices_base` (the ini
    file's folder, as pytest reads an ini key's relative path). `answered_ahead`: an xdist
    worker whose model answers the controller calls ahead."""
    from verdryx_core.evaluation import EvalSettings
    from verdryx_core.hooks import grader_options

    prices = None
    if settings.prices:
        path = Path(settings.prices)
        prices = path if path.is_absolute() else prices_base / path
    return EvalSettings(
        model=settings.model,
        judge=settings.judge,
        cache=settings.cache,
        concurrency=settings.concurrency,
        repeat=settings.repeat,
        prices=prices,
        grader_options=grader_options(settings.addons),
        min_score=settings.min_score,
        agent_id=settings.agent_id,
        batch=settings.batch,
        unsafe_exec=settings.unsafe_exec,
        exec_disk_mib=settings.exec_disk_mib,
        call_timeout=settings.timeout,
        target=settings.target,
        target_version=settings.target_version,
        challenger=settings.challenger,
        challenger_version=settings.challenger_version,
        user_model=settings.user_model,
        otel=settings.otel,
        target_root=target_root,
        keep_workspaces=settings.keep_workspaces,
        answers_prefetched=answered_ahead,
        flags=FLAGS,
    )


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("verdryx", "verdryx: eval cases, stored runs and the drift gate")
    for option in all_options():
        if option.kind == "bool":
            group.addoption(
                option.flag, action="store_true", dest=option.name, default=None, help=option.help
            )
            parser.addini(option.name, option.help, type="bool", default=option.default)
            continue
        group.addoption(
            option.flag,
            dest=option.name,
            default=None,
            metavar=option.metavar or option.name.removeprefix("verdryx_").upper(),
            help=f"{option.help}. ini: {option.name}",
        )
        parser.addini(option.name, option.help.replace("%%", "%"), default=option.default)
    parser.addini(
        "verdryx_evalset_patterns",
        "extra glob patterns of eval set files (besides *.evalset.json)",
        type="linelist",
        default=[],
    )
    parser.addini(
        "verdryx_prices",
        "JSON price file overriding the built-in price book (model -> $ per million tokens)",
        default=None,
    )


def _convert(option: _Option, raw: object, source: str) -> Any:
    if raw is None or raw == "":
        return option.default
    if option.kind == "bool":
        return bool(raw)
    text = str(raw).strip()
    if option.kind == "repeat" and text == "auto":
        return "auto"
    if option.kind == "float":
        # One rule for every float option of both faces: finite, within its range.
        try:
            return option_float(text, minimum=option.minimum, maximum=option.maximum)
        except ValueError as exc:
            raise pytest.UsageError(f"{source}: {exc}") from None
    try:
        if option.kind in ("int", "repeat"):
            value: Any = int(text)
        else:
            value = text
    except ValueError:
        expected = {"int": "a whole number", "repeat": "a whole number or auto"}.get(
            option.kind, "a number"
        )
        raise pytest.UsageError(f"{source}: {text!r} is not {expected}") from None
    if option.kind == "choice" and value not in option.choices:
        raise pytest.UsageError(f"{source}: {text!r} is not one of {', '.join(option.choices)}")
    if option.minimum is not None and value < option.minimum:
        raise pytest.UsageError(f"{source}: {text} is below the minimum {option.minimum:g}")
    if option.maximum is not None and value > option.maximum:
        raise pytest.UsageError(f"{source}: {text} is above the maximum {option.maximum:g}")
    return value


def read_settings(config: pytest.Config, env: Mapping[str, str] | None = None) -> Settings:
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    for option in all_options():
        flag_value = config.getoption(option.name)
        if flag_value is not None and flag_value is not False:
            values[option.name] = _convert(option, flag_value, option.flag)
        else:
            values[option.name] = _convert(option, config.getini(option.name), option.name)
    get: Callable[[str], Any] = values.__getitem__
    patterns = evalset_patterns(config)
    shard = _shard(config)
    return Settings(
        model=get("verdryx_model"),
        judge=get("verdryx_judge"),
        db=get("verdryx_db"),
        baseline=get("verdryx_baseline"),
        save_baseline=get("verdryx_save_baseline"),
        window=get("verdryx_window"),
        gate=get("verdryx_gate"),
        threshold=get("verdryx_threshold"),
        min_effect=get("verdryx_min_effect"),
        fail_on=get("verdryx_fail_on"),
        min_coverage=get("verdryx_min_coverage"),
        detect=get("verdryx_detect"),
        require_power=get("verdryx_require_power"),
        sequential=get("verdryx_sequential"),
        sequential_seed=get("verdryx_sequential_seed"),
        gate_metric=get("verdryx_gate_metric"),
        labels=get("verdryx_labels"),
        judge_correction=get("verdryx_judge_correction"),
        require_calibrated_judge=get("verdryx_require_calibrated_judge"),
        min_score=get("verdryx_min_score"),
        concurrency=get("verdryx_concurrency"),
        cache=get("verdryx_cache"),
        repeat=1 if get("verdryx_repeat") == "auto" else get("verdryx_repeat"),
        repeat_auto=get("verdryx_repeat") == "auto",
        max_samples=get("verdryx_max_samples"),
        fdr=get("verdryx_fdr"),
        agent_id=get("verdryx_agent_id"),
        report=get("verdryx_report"),
        allow_model_change=get("verdryx_allow_model_change"),
        store=not get("no_verdryx_store"),
        label=get("verdryx_label"),
        allow_partial_baseline=get("verdryx_allow_partial_baseline"),
        baseline_runs=get("verdryx_baseline_runs"),
        patterns=patterns,
        prices=config.getini("verdryx_prices") or None,
        shard=shard,
        run_group=get("verdryx_run_group") or (_default_run_group(env) if shard else None),
        batch=get("verdryx_batch"),
        target=get("verdryx_target"),
        target_version=get("verdryx_target_version"),
        challenger=get("verdryx_challenger"),
        challenger_version=get("verdryx_challenger_version"),
        pairwise_judge=get("verdryx_pairwise_judge"),
        user_model=get("verdryx_user_model") or "stub",
        otel=get("verdryx_otel"),
        timeout=get("verdryx_timeout"),
        unsafe_exec=get("verdryx_unsafe_exec"),
        exec_disk_mib=get("verdryx_exec_disk"),
        keep_workspaces=get("verdryx_keep_workspaces"),
        addons={
            addon.name: get(option.name) or (env.get(addon.env) if addon.env else None) or None
            for option, addon in _addon_options()
        },
    )


def _shard(config: pytest.Config) -> ShardSpec | None:
    """`--verdryx-shard K/N` (or ini `verdryx_shard`), parsed; a bad value is one line."""
    flag_value = config.getoption("verdryx_shard")
    raw, source = (
        (flag_value, "--verdryx-shard")
        if flag_value
        else (config.getini("verdryx_shard"), "verdryx_shard")
    )
    if not raw:
        return None
    from verdryx_core.errors import VerdryxError
    from verdryx_core.evaluation.sharding import parse_shard

    try:
        return parse_shard(str(raw), flag=source)
    except VerdryxError as exc:
        raise pytest.UsageError(worded(exc)) from None


def _default_run_group(env: Mapping[str, str]) -> str | None:
    from verdryx_core.reporting.ci.provenance import default_run_group

    return default_run_group(env)


def evalset_patterns(config: pytest.Config) -> tuple[str, ...]:
    """The file names collected as eval sets: the defaults and the ini's extra patterns."""
    return DEFAULT_PATTERNS + tuple(config.getini("verdryx_evalset_patterns") or ())


#: Ini keys without a flag, with the defaults `add_options` gives them.
_INI_ONLY: Final[Mapping[str, Any]] = {"verdryx_evalset_patterns": [], "verdryx_prices": None}


def explicitly_asked(config: pytest.Config) -> bool:
    """Whether this session asked for verdryx itself: a verdryx flag on the command line (or
    in `addopts`, or PYTEST_ADDOPTS), or a verdryx ini key (or `-o`) set to something other
    than its default. Then the plugin turns on at configure time, so a bad value is exit 4
    before anything is collected; otherwise it waits for an eval case (docs/options.md)."""
    for option in all_options():
        if config.getoption(option.name) is not None:
            return True
    # A key set to its default (or left empty) asks for nothing that could fail, and
    # changes nothing. Some pytest versions give an unset key without a default as "".
    defaults = {option.name: option.default for option in all_options()}
    for name, default in {**defaults, **_INI_ONLY}.items():
        value = config.getini(name)
        if value != default and value not in ("", None, []):
            return True
    return False
