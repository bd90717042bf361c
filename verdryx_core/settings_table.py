"""The one table of verdryx's settings: each setting's name (the pytest option's dest and ini
key), kind, default, range, help, the `verdryx` commands that take it too (with their flag),
and the fields it fills (pytest_verdryx's `Settings`, `EvalSettings`, `GatePolicy`,
`RunPolicy`). The pytest options and ini keys and the shared command-line arguments are
generated from it, so each default is written here once (docs/options.md, docs/cli.md); so
are the words each face's hints name a setting in (`hint_words`, verdryx_core.errors).

It imports nothing but the defaults module: the pytest plugin defines its options in every
session, eval cases or not, and must not pay for the core to do it (docs/options.md, "When
verdryx turns on"). A help text's `{default}` is the setting's default, as it reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from verdryx_core.defaults import (
    DEFAULT_FDR,
    DEFAULT_MIN_COVERAGE,
    DEFAULT_MIN_SCORE,
    DEFAULT_THRESHOLD,
    GATES,
)
from verdryx_core.option_numbers import option_float

__all__ = [
    "SETTINGS",
    "Setting",
    "default_of",
    "fields_for",
    "hint_words",
    "setting",
]

#: The `verdryx` commands that gate a run against a baseline (docs/cli.md).
_GATING: Final = ("eval", "drift", "gate")


@dataclass(frozen=True, slots=True)
class Setting:
    name: str  # the pytest option's dest, also the ini key: verdryx_model
    help: str  # as the pytest face shows it (`%%`: argparse's escaped `%`)
    default: Any = None
    kind: str = "string"  # string | bool (flag) | int | float | choice | repeat (int or auto)
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    metavar: str | None = None
    #: The `verdryx` commands that take it too (docs/cli.md), with this flag (None:
    #: `--KEY`, e.g. `--concurrency` for `--verdryx-concurrency`) and this help (None: the
    #: pytest help, in the command line's flags).
    commands: tuple[str, ...] = ()
    cli_flag: str | None = None
    cli_help: str | None = None
    #: The field of pytest_verdryx's `Settings` it fills ("": its key; None: read by hand).
    field: str | None = ""
    #: The field of `EvalSettings`, `GatePolicy` or `RunPolicy` it fills (None: none).
    evaluation: str | None = None
    gate: str | None = None
    run: str | None = None
    #: How a hint names it in a face where that is not its flag (the command line's
    #: `--KEY`, pytest's `--verdryx-KEY`) or its field (the Python API's `EvalSettings.FIELD`,
    #: `GatePolicy(FIELD=True)` for a switch). A setting no command takes is in the hints
    #: only when it has the command line's words here.
    hint_cli: str | None = None
    hint_pytest: str | None = None
    hint_python: str | None = None

    @property
    def key(self) -> str:
        """Its name without the `verdryx_` prefix: how a core message names it."""
        return self.name.removeprefix("no_").removeprefix("verdryx_")

    @property
    def flag(self) -> str:
        """The pytest flag."""
        return "--" + self.name.replace("_", "-")

    @property
    def text(self) -> str:
        """The pytest help, its `{default}` filled in."""
        return _filled(self.help, self.default)

    @property
    def command_flag(self) -> str:
        return self.cli_flag or "--" + self.key.replace("_", "-")

    @property
    def python_words(self) -> str | None:
        """How a hint names it to a Python caller: the field it fills, a switch set to True."""
        if self.hint_python is not None:
            return self.hint_python
        for owner, field in (
            ("EvalSettings", self.evaluation),
            ("GatePolicy", self.gate),
            ("RunPolicy", self.run),
        ):
            if field is not None:
                return f"{owner}({field}=True)" if self.kind == "bool" else f"{owner}.{field}"
        return None

    @property
    def command_dest(self) -> str:
        """The attribute argparse gives its command-line value (from the flag)."""
        return self.command_flag.removeprefix("--").replace("-", "_")

    @property
    def command_text(self) -> str:
        """The command line's help, its `{default}` filled in."""
        if self.cli_help is not None:
            return _filled(self.cli_help, self.default)
        return self.text.replace("--verdryx-", "--")

    def read(self, raw: object) -> Any:
        """`raw` (a flag's or an ini key's text) as this setting's value: the default when
        unset or empty; ValueError with the problem in words (the caller names the source)."""
        if raw is None or raw == "":
            return self.default
        if self.kind == "bool":
            return bool(raw)
        text = str(raw).strip()
        if self.kind == "repeat" and text == "auto":
            return "auto"
        if self.kind == "float":
            # One rule for every float option of both faces: finite, within its range.
            return option_float(text, minimum=self.minimum, maximum=self.maximum)
        value: Any = text
        if self.kind in ("int", "repeat"):
            try:
                value = int(text)
            except ValueError:
                expected = "a whole number or auto" if self.kind == "repeat" else "a whole number"
                raise ValueError(f"{text!r} is not {expected}") from None
        if self.kind == "choice" and value not in self.choices:
            raise ValueError(f"{text!r} is not one of {', '.join(self.choices)}")
        if self.minimum is not None and value < self.minimum:
            raise ValueError(f"{text} is below the minimum {self.minimum:g}")
        if self.maximum is not None and value > self.maximum:
            raise ValueError(f"{text} is above the maximum {self.maximum:g}")
        return value


def _filled(template: str, default: Any) -> str:
    shown = f"{default:g}" if isinstance(default, float) else str(default)
    return template.replace("{default}", shown)


SETTINGS: Final = (
    Setting(
        "verdryx_model",
        "model under evaluation: 'stub' (offline, deterministic) or a real model id",
        "stub",
        metavar="MODEL",
        commands=("eval",),
        cli_help="'stub' (default: offline, deterministic) or a real model id",
        evaluation="model",
    ),
    Setting(
        "verdryx_judge",
        "model for llm_judge cases ('stub': the offline stub judge); unset: those cases are "
        "unmeasured (skipped), whatever the model, never paid for",
        metavar="MODEL",
        commands=("eval",),
        cli_help=(
            "judge model for llm_judge cases ('stub': the offline stub judge); without it those "
            "cases are unmeasured"
        ),
        evaluation="judge",
    ),
    Setting(
        "verdryx_db",
        "the store; default $VERDRYX_DB, else $TAIPAN_HOME/verdryx.db when that folder "
        "exists, else ./verdryx.db",
        metavar="PATH",
        hint_cli="--db",
        hint_python="store=",
    ),
    Setting("verdryx_baseline", "gate this run against the baseline LABEL", metavar="LABEL"),
    Setting(
        "verdryx_save_baseline",
        "save this run as baseline LABEL in the store and in .verdryx/baselines/LABEL.json",
        metavar="LABEL",
        run="save_baseline",
        hint_cli="`verdryx baseline RUN_ID --label LABEL`",
        hint_pytest="--verdryx-save-baseline=LABEL",
        hint_python="save_baseline(run, LABEL)",
    ),
    Setting(
        "verdryx_baseline_runs",
        "with --verdryx-save-baseline, pool each case's samples over this run and the K-1 "
        "newest earlier complete runs of the same eval sets, model, judge, target and target "
        "version (default {default})",
        1,
        "int",
        minimum=1,
        maximum=100,
        metavar="K",
        commands=("baseline",),
        cli_flag="--runs",
        cli_help=(
            "pool each case's samples over this run and the K-1 newest earlier complete runs of the"
            " same eval sets, model, judge, target and target version (default {default}; "
            "docs/statistics.md, 'Baselines from several runs')"
        ),
        run="baseline_runs",
    ),
    Setting(
        "verdryx_window",
        "pool this run with the N-1 previous complete runs of the same eval sets, model, "
        "judge, target and target version (default {default})",
        1,
        "int",
        minimum=1,
        metavar="N",
        commands=("eval", "drift"),
        cli_help="pool N runs (default {default})",
        gate="window",
    ),
    Setting(
        "verdryx_gate",
        "verdict rule: 'significant' (default: the 95%% interval lies below zero) or "
        "'threshold' (delta <= -threshold, or the interval below zero)",
        "significant",
        "choice",
        choices=GATES,
        commands=(*_GATING, "report"),
        cli_help="verdict rule",
        gate="rule",
    ),
    Setting(
        "verdryx_threshold",
        "drop that the threshold gate calls regressed (default {default})",
        DEFAULT_THRESHOLD,
        "float",
        minimum=0.0,
        maximum=1.0,
        metavar="F",
        commands=(*_GATING, "report"),
        gate="threshold",
    ),
    Setting(
        "verdryx_min_effect",
        "smallest drop the significant gate calls regressed (default {default})",
        0.0,
        "float",
        minimum=0.0,
        maximum=1.0,
        metavar="F",
        commands=(*_GATING, "report"),
        gate="min_effect",
    ),
    Setting(
        "verdryx_fail_on",
        "with a baseline, what fails the session: 'verdict' (default: a regressed or refused "
        "gate, or a required case below its bar; other cases below their bar are reported as "
        "dropped) or 'cases' (every case below its bar fails, as without a baseline)",
        "verdict",
        "choice",
        choices=("verdict", "cases"),
        commands=_GATING,
        cli_help=(
            "with a baseline, what fails: 'verdict' (default: a regressed gate, a required case "
            "below its bar or not measured, a case new since the baseline below its bar) or 'cases'"
            " (every case below its bar, as without a baseline)"
        ),
        run="fail_on",
    ),
    Setting(
        "verdryx_min_coverage",
        "refuse a gate that compared no more than this share of the baseline's cases "
        "(default {default})",
        DEFAULT_MIN_COVERAGE,
        "float",
        minimum=0.0,
        maximum=1.0,
        metavar="F",
        commands=_GATING,
        gate="min_coverage",
    ),
    Setting(
        "verdryx_detect",
        "the smallest drop you need the gate to see; an on-track verdict that cannot see it "
        "is labelled underpowered (default {default})",
        0.05,
        "float",
        minimum=0.001,
        maximum=1.0,
        metavar="D",
        commands=_GATING,
        cli_help=(
            "the smallest drop you need to see; an on-track verdict that cannot see it is labelled "
            "underpowered (default {default})"
        ),
        gate="detect",
    ),
    Setting(
        "verdryx_require_power",
        "refuse the gate when the run cannot see a drop of --verdryx-detect",
        False,
        "bool",
        commands=_GATING,
        gate="require_power",
    ),
    Setting(
        "verdryx_sequential",
        "grade the eval cases in a seeded random order and stop calling once a confidence "
        "sequence settles the verdict against the baseline (regressed, or no drop of "
        "--verdryx-detect); the cases left are not needed",
        False,
        "bool",
    ),
    Setting(
        "verdryx_sequential_seed",
        "the seed of --verdryx-sequential's case order (default {default})",
        0,
        "int",
        minimum=0,
        metavar="N",
    ),
    Setting(
        "verdryx_labels",
        "human labels of judged outputs: a *.labels.jsonl file, or a folder of them; the "
        "summary then shows how well the judge agrees with them",
        metavar="PATH",
        hint_cli="--labels",
        hint_python="RunPolicy.labels",
    ),
    Setting(
        "verdryx_judge_correction",
        "gate the judged cases' pass rate corrected for the judge's TPR / TNR on the labels "
        "(refused with too few labels)",
        False,
        "bool",
        gate="judge_correction",
    ),
    Setting(
        "verdryx_require_calibrated_judge",
        "refuse the gate when the judge's kappa on the labels fell significantly below its "
        "stored figure (else a warning)",
        False,
        "bool",
        gate="require_calibrated_judge",
    ),
    Setting(
        "verdryx_gate_metric",
        "what the gate compares per case: 'score' (default: mean scores) or 'pass' (pass "
        "rates, in points)",
        "score",
        "choice",
        choices=("score", "pass"),
        commands=_GATING,
        cli_help="compare mean scores (default) or pass rates per case",
        gate="metric",
    ),
    Setting(
        "verdryx_min_score",
        "pass bar for cases without their own min_score (default: the grader's own bar, "
        f"1.0 for tool_trace, else {DEFAULT_MIN_SCORE})",
        None,
        "float",
        minimum=0.0,
        maximum=1.0,
        metavar="F",
        commands=("eval",),
        cli_help=(
            "pass bar for cases without one (default: the grader's own bar, 1.0 for tool_trace, "
            "else "
            f"{DEFAULT_MIN_SCORE})"
        ),
        evaluation="min_score",
    ),
    Setting(
        "verdryx_concurrency",
        "model calls in flight before the first item runs (default {default})",
        8,
        "int",
        minimum=1,
        maximum=256,
        metavar="N",
        commands=("eval",),
        cli_help="model calls in flight (default {default})",
        evaluation="concurrency",
    ),
    Setting(
        "verdryx_cache",
        "model response cache: 'on' (default), 'off', or 'replay' (never call; a miss is an error)",
        "on",
        "choice",
        choices=("on", "off", "replay"),
        commands=("eval",),
        cli_help="model cache (default {default})",
        evaluation="cache",
    ),
    Setting(
        "verdryx_repeat",
        "sample every model case N times; its score is the mean (default {default}); 'auto': "
        "spend --verdryx-max-samples where the baseline's cases varied",
        1,
        "repeat",
        minimum=1,
        maximum=100,
        metavar="N|auto",
        commands=("eval",),
        cli_help="sample every model case N times; its score is the mean (default {default})",
        field=None,
        evaluation="repeat",
    ),
    Setting(
        "verdryx_max_samples",
        "with --verdryx-repeat=auto, the samples of one run in all (default 3 per case)",
        None,
        "int",
        minimum=1,
        metavar="N",
    ),
    Setting(
        "verdryx_fdr",
        "the false discovery rate of the per-case drop tests: a case is a significant drop "
        "at this rate, Benjamini-Hochberg corrected (default {default})",
        DEFAULT_FDR,
        "float",
        minimum=0.0001,
        maximum=1.0,
        metavar="Q",
        commands=_GATING,
        cli_help=(
            "the false discovery rate of the per-case drop tests (`case_drops`; default {default})"
        ),
        gate="fdr",
    ),
    Setting(
        "verdryx_agent_id",
        "the agent this run measures (agent://...), for events and SLO joins",
        metavar="ID",
        commands=("eval",),
        cli_help="the agent this run measures (for SLO joins)",
        evaluation="agent_id",
    ),
    Setting(
        "verdryx_target",
        "the agent under test, module:callable, called once per case and repeat (an eval "
        "set's own target wins; unset: the model answers)",
        metavar="MODULE:CALLABLE",
        commands=("eval",),
        cli_help=(
            "the agent under test, called once per case and repeat (an eval set's own target wins; "
            "imported from the current folder first)"
        ),
        evaluation="target",
        hint_python="evaluate(..., target=...)",
    ),
    Setting(
        "verdryx_target_version",
        "the target's version: its results are cached under it (unset: never cached)",
        metavar="VERSION",
        commands=("eval",),
        cli_help="cache the target's results under this version (unset: never cached)",
        evaluation="target_version",
    ),
    Setting(
        "verdryx_challenger",
        "a second agent, module:callable, called on every case the target answers, with the "
        "same inputs, graded the same way and gated against the target (paired)",
        metavar="MODULE:CALLABLE",
        evaluation="challenger",
    ),
    Setting(
        "verdryx_challenger_version",
        "the challenger's version: its results are cached under it (unset: never cached)",
        metavar="VERSION",
        evaluation="challenger_version",
    ),
    Setting(
        "verdryx_pairwise_judge",
        "with a challenger: a judge model that compares the target's and the challenger's "
        "replies to each case, in both orders, and reports the challenger's win rate",
        metavar="MODEL",
    ),
    Setting(
        "verdryx_user_model",
        "who plays a case's simulated user with a persona: stub (offline, deterministic) or "
        "a model id",
        "stub",
        metavar="MODEL",
        commands=("eval",),
        cli_help=(
            "who plays a case's simulated user with a persona: stub (offline, deterministic; "
            "default) or a model id (docs/scenarios.md)"
        ),
        evaluation="user_model",
    ),
    Setting(
        "verdryx_otel",
        "auto: a target call's OpenTelemetry GenAI spans give its result the tool calls, "
        "usage and model it does not return (when opentelemetry-sdk is installed); off: "
        "never read",
        "auto",
        "choice",
        choices=("auto", "off"),
        commands=("eval",),
        cli_help=(
            "auto: a target call's OpenTelemetry GenAI spans give its result the tool calls, usage "
            "and model it does not return (when opentelemetry-sdk is installed); off: never read "
            "(docs/targets.md)"
        ),
        evaluation="otel",
    ),
    Setting(
        "verdryx_timeout",
        "seconds any one call may take: target, model, judge, typed (default {default})",
        120.0,
        "float",
        minimum=0.001,
        metavar="SECONDS",
        commands=("eval",),
        cli_help="seconds any one call may take: target, model, judge (default {default})",
        evaluation="call_timeout",
    ),
    Setting("verdryx_report", "write a self-contained HTML report to PATH", metavar="PATH"),
    Setting(
        "verdryx_allow_model_change",
        "compare against a baseline of another model or judge anyway",
        False,
        "bool",
        commands=_GATING,
        gate="allow_model_change",
    ),
    Setting("no_verdryx_store", "do not save this run to the store", False, "bool", field=None),
    Setting(
        "verdryx_shard",
        "run shard K of N: keep the eval cases a stable hash of (eval set id, case id) puts "
        "in shard K, deselect the rest; the run is stored for `verdryx gate`, not gated",
        metavar="K/N",
        field=None,
    ),
    Setting(
        "verdryx_run_group",
        "the run group a shard's run is stored under (default: the CI's run id, e.g. "
        "github-RUNID-ATTEMPT)",
        metavar="ID",
        field=None,
    ),
    Setting(
        "verdryx_batch",
        "send the model and judge calls as Anthropic Message Batches (half price, slower) "
        "before the items run",
        False,
        "bool",
        commands=("eval",),
        cli_help=(
            "send the model and judge calls as Anthropic Message Batches: half price, answers "
            "within the hour rather than seconds (docs/sharding.md)"
        ),
        evaluation="batch",
    ),
    Setting(
        "verdryx_unsafe_exec",
        "run exec cases without kernel isolation where the machine offers none (default: "
        "refused there)",
        False,
        "bool",
        commands=("eval",),
        cli_help=(
            "run exec cases without kernel isolation where the machine offers none (unset: they are"
            " refused there; docs/workspaces-and-execution.md)"
        ),
        evaluation="unsafe_exec",
    ),
    Setting(
        "verdryx_exec_disk",
        "the work folder's total size of an exec case, MiB (default {default}): a case that fills "
        "it fails with that reason",
        256,
        "int",
        minimum=1,
        maximum=1 << 20,
        metavar="MIB",
        commands=("eval",),
        cli_help=(
            "the work folder's total size of an exec case, MiB (default {default}); a case that "
            "fills it fails with that reason"
        ),
        field="exec_disk_mib",
        evaluation="exec_disk_mib",
    ),
    Setting(
        "verdryx_label",
        "a free label stored with this run (shown by verdryx runs/show and the report)",
        metavar="TEXT",
    ),
    Setting(
        "verdryx_keep_workspaces",
        "leave each case's workspace folder in place after grading and print the folders "
        "of failed cases (default: removed once graded)",
        False,
        "bool",
        commands=("eval",),
        cli_help=(
            "leave each case's workspace folder in place after grading and print the folders of "
            "failed cases (default: removed once graded)"
        ),
        evaluation="keep_workspaces",
    ),
    Setting(
        "verdryx_allow_partial_baseline",
        "let --verdryx-save-baseline save a subset run (-k, -m, --lf, --deselect, node ids)",
        False,
        "bool",
        commands=("baseline",),
        cli_flag="--allow-partial",
        cli_help=(
            "save a run that measured a selection of the cases (file arguments, -k, --lf, a shard) "
            "anyway; a baseline of a selection gates later full runs on it alone"
        ),
        run="allow_partial_baseline",
        hint_python=(
            "allow_partial=True to save_baseline (RunPolicy(allow_partial_baseline=True) to "
            "conclude)"
        ),
    ),
)

_BY_NAME: Final[Mapping[str, Setting]] = {entry.name: entry for entry in SETTINGS}


def setting(name: str) -> Setting:
    """The setting named `name` (`verdryx_window`)."""
    return _BY_NAME[name]


def default_of(name: str) -> Any:
    """The default of the setting named `name`, for the Python API's dataclass fields."""
    return _BY_NAME[name].default


def hint_words(face: str) -> dict[str, str]:
    """How the face `cli`, `pytest` or `python` names each setting a hint may point at
    (`{cache}` in a hint reads `--cache`, `--verdryx-cache`, `EvalSettings.cache`): every
    setting a `verdryx` command takes (or that has the command line's words), in the command
    line's and the Python API's words; every setting, in pytest's."""
    if face not in ("cli", "pytest", "python"):
        raise ValueError(f"no face {face!r}")
    words: dict[str, str] = {}
    for entry in SETTINGS:
        if face == "pytest":
            if entry.name.startswith("verdryx_"):
                words[entry.key] = entry.hint_pytest or entry.flag
            continue
        if not entry.commands and entry.hint_cli is None:
            continue
        if face == "cli":
            words[entry.key] = entry.hint_cli or entry.command_flag
        elif entry.python_words is not None:
            words[entry.key] = entry.python_words
        else:
            raise ValueError(f"setting {entry.name}: no words for the Python API's hints")
    return words


def fields_for(
    target: str, value: Callable[[Setting], Any], *, command: str | None = None
) -> dict[str, Any]:
    """The keyword arguments of `target` (`evaluation`, `gate` or `run`: `EvalSettings`,
    `GatePolicy`, `RunPolicy`) that the settings fill, each `value(setting)`; `command`:
    only the settings that `verdryx COMMAND` takes (the others keep the object's default)."""
    fields = {}
    for entry in SETTINGS:
        name = getattr(entry, target)
        if name is not None and (command is None or command in entry.commands):
            fields[name] = value(entry)
    return fields
