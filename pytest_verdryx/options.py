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

# Only the table of settings, from a module that imports nothing else of the core: the
# options are defined in every session, eval cases or not, and the rest of the core is
# imported when it is used (docs/options.md, "When verdryx turns on").
from verdryx_core.settings_table import SETTINGS, Setting, fields_for

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
    "settings_fields",
    "worded",
]


DEFAULT_PATTERNS: Final = ("*.evalset.json", "*.evalset.jsonl", "*.evalset.csv")


#: The pytest face's options, one per setting of the one table (verdryx_core.settings_table):
#: name, kind, default, range and help are written there once.
_Option = Setting
OPTIONS: Final = SETTINGS


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
            option.name.removeprefix("verdryx_"): option.hint_pytest or option.flag
            for option in all_options()
            if option.name.startswith("verdryx_")
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
    fail_on: str
    min_coverage: float
    detect: float
    require_power: bool
    #: `--verdryx-sequential`: a seeded random order, stopping once the verdict is settled.
    sequential: bool
    sequential_seed: int
    gate_metric: str
    labels: str | None
    judge_correction: bool
    require_calibrated_judge: bool
    concurrency: int
    cache: str
    repeat: int
    #: `--verdryx-repeat=auto`: samples per case from the baseline's per-case variance.
    repeat_auto: bool
    max_samples: int | None
    fdr: float
    agent_id: str | None
    report: str | None
    allow_model_change: bool
    store: bool
    label: str | None
    allow_partial_baseline: bool
    baseline_runs: int
    patterns: tuple[str, ...]
    prices: str | None
    shard: ShardSpec | None
    run_group: str | None
    batch: bool
    target: str | None
    target_version: str | None
    challenger: str | None
    challenger_version: str | None
    pairwise_judge: str | None
    user_model: str
    otel: str
    timeout: float
    unsafe_exec: bool
    exec_disk_mib: int
    keep_workspaces: bool
    #: The add-ons' options by name (`events`, `typed_url`...; None when unset):
    #: verdryx_core.hooks.
    addons: Mapping[str, Any] = field(default_factory=dict)

    @property
    def judge_model(self) -> str | None:
        from verdryx_core.evaluation import judge_in_effect

        return judge_in_effect(self.judge)


def settings_fields(target: str, settings: Settings) -> dict[str, Any]:
    """The keyword arguments of `target` (`evaluation`, `gate`, `run`: `EvalSettings`,
    `GatePolicy`, `RunPolicy`) the session's settings fill, by the table's fields."""
    return fields_for(target, lambda entry: getattr(settings, entry.field or entry.key))


def eval_settings(
    settings: Settings,
    prices_base: Path,
    target_root: Path | None = None,
    *,
    answers_prefetched: bool = False,
) -> EvalSettings:
    """What the pipeline needs; a relative price file is read from `prices_base` (the ini
    file's folder, as pytest reads an ini key's relative path). `answers_prefetched`: an xdist
    worker whose model answers the controller prefetched."""
    from verdryx_core.evaluation import EvalSettings
    from verdryx_core.hooks import grader_options

    prices = None
    if settings.prices:
        path = Path(settings.prices)
        prices = path if path.is_absolute() else prices_base / path
    return EvalSettings(
        # The table's evaluation settings (model, judge, cache, timeout...), by its fields.
        **settings_fields("evaluation", settings),
        prices=prices,
        grader_options=grader_options(settings.addons),
        target_root=target_root,
        answers_prefetched=answers_prefetched,
        flags=FLAGS,
    )


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("verdryx", "verdryx: eval cases, stored runs and the drift gate")
    for option in all_options():
        if option.kind == "bool":
            group.addoption(
                option.flag, action="store_true", dest=option.name, default=None, help=option.text
            )
            parser.addini(option.name, option.text, type="bool", default=option.default)
            continue
        group.addoption(
            option.flag,
            dest=option.name,
            default=None,
            metavar=option.metavar or option.name.removeprefix("verdryx_").upper(),
            help=f"{option.text}. ini: {option.name}",
        )
        parser.addini(option.name, option.text.replace("%%", "%"), default=option.default)
    parser.addini(
        "verdryx_evalset_patterns",
        "extra glob patterns of eval set files (besides *.evalset.json)",
        type="linelist",
        default=list(_INI_ONLY["verdryx_evalset_patterns"]),
    )
    parser.addini(
        "verdryx_prices",
        "JSON price file overriding the built-in price book (model -> $ per million tokens)",
        default=_INI_ONLY["verdryx_prices"],
    )


def _convert(option: _Option, raw: object, source: str) -> Any:
    """The table's one reading rule, a bad value one usage line naming its source."""
    try:
        return option.read(raw)
    except ValueError as exc:
        raise pytest.UsageError(f"{source}: {exc}") from None


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
    repeat = get("verdryx_repeat")
    return Settings(
        # Each table setting into its field; the few below are read by hand.
        **{
            option.field or option.key: get(option.name)
            for option in OPTIONS
            if option.field is not None
        },
        repeat=1 if repeat == "auto" else repeat,
        repeat_auto=repeat == "auto",
        store=not get("no_verdryx_store"),
        patterns=patterns,
        prices=config.getini("verdryx_prices") or None,
        shard=shard,
        run_group=get("verdryx_run_group") or (_default_run_group(env) if shard else None),
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


#: Ini keys without a flag, with their defaults (`add_options` gives them, `explicitly_asked`
#: compares with them).
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
