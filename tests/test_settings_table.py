"""The one table of settings (verdryx_core.settings_table) is where each setting's default is
written: the pytest options and ini keys, the `verdryx` commands' shared arguments and the
Python API's dataclasses all take it from there (docs/options.md, docs/cli.md)."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import re
from pathlib import Path

import pytest

import pytest_verdryx.options
import verdryx_core.addons.typed
import verdryx_core.errors
from pytest_verdryx.options import FLAGS, OPTIONS, Settings
from verdryx_core.cli.main import build_parser
from verdryx_core.conclusion import RunPolicy
from verdryx_core.errors import CLI_FLAGS, PYTHON_FLAGS
from verdryx_core.evaluation import EvalSettings
from verdryx_core.gating.planning import DEFAULT_DETECT
from verdryx_core.gating.policy import GatePolicy
from verdryx_core.settings_table import SETTINGS, Setting, default_of, fields_for, hint_words

#: Hand-written arguments with a default that share a setting's flag name but not its
#: meaning (or, for `plan --detect`, its help and range): each is allowed one reason here.
#: (`report --model`, `runs --model`, `--db`, `--baseline`... declare no default.)
_NOT_THE_SETTING = {
    ("slo", "--window"): "a time window (28d), not a count of runs",
    ("verify", "--timeout"): "one contract check's call, 60 s",
    ("judge-agreement", "--labels"): "label files, a list",
    ("plan", "--detect"): "the planner's drop to see: its default is the table's (below)",
}


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(subparsers.choices)


def _action(parser: argparse.ArgumentParser, flag: str) -> argparse.Action:
    return next(action for action in parser._actions if flag in action.option_strings)


def test_every_command_takes_its_table_settings_with_the_tables_default() -> None:
    commands = _commands()
    for entry in SETTINGS:
        for command in entry.commands:
            action = _action(commands[command], entry.command_flag)
            expected = False if entry.kind == "bool" else entry.default
            assert action.default == expected, (command, entry.command_flag)
            assert action.dest == entry.command_dest
            if entry.kind == "choice":
                assert tuple(action.choices or ()) == entry.choices


def test_no_command_writes_a_default_of_its_own_for_a_shared_setting() -> None:
    """A hand-written argument named like a table setting (`--threshold`, `--concurrency`...)
    is a second place its default would be written: generate it from the table instead
    (list the command in the setting's `commands`)."""
    by_flag: dict[str, list[Setting]] = {}
    for entry in SETTINGS:
        for flag in {entry.command_flag, "--" + entry.key.replace("_", "-")}:
            by_flag.setdefault(flag, []).append(entry)
    found = set()
    for command, parser in _commands().items():
        for action in parser._actions:
            for flag in action.option_strings:
                for entry in by_flag.get(flag, ()):
                    if command in entry.commands or action.default in (None, False):
                        continue  # generated, or declares no default at all
                    found.add((command, flag))
    assert found == set(_NOT_THE_SETTING)
    assert default_of("verdryx_detect") == DEFAULT_DETECT


def test_the_tables_fields_are_the_fields_of_the_objects_it_fills() -> None:
    """`**fields_for(...)` is not checked by mypy: a renamed field must fail here."""
    targets = {"evaluation": EvalSettings, "gate": GatePolicy, "run": RunPolicy}
    for target, cls in targets.items():
        fields = {field.name: field for field in dataclasses.fields(cls)}
        filled = fields_for(target, lambda entry: entry.default)
        assert filled, target
        for name, default in filled.items():
            # The Python API's default is the table's too.
            assert fields[name].default == default, (cls.__name__, name)
    settings_fields = {field.name for field in dataclasses.fields(Settings)}
    by_table = {entry.field or entry.key for entry in SETTINGS if entry.field is not None}
    by_hand = {"repeat", "repeat_auto", "store", "patterns", "prices", "shard", "run_group"}
    assert by_table <= settings_fields
    assert settings_fields == by_table | by_hand | {"addons"}


def test_the_pytest_options_are_the_table() -> None:
    assert OPTIONS is SETTINGS
    assert len({entry.name for entry in SETTINGS}) == len(SETTINGS)


def test_a_help_text_shows_its_default_from_the_table() -> None:
    """`(default 8)` written in a help text is the default written twice: `{default}`."""
    for entry in SETTINGS:
        if entry.default in (None, False, True) or isinstance(entry.default, str):
            continue
        shown = f"{entry.default:g}" if isinstance(entry.default, float) else str(entry.default)
        for template in (entry.help, entry.cli_help or ""):
            assert not re.search(rf"default:? {re.escape(shown)}\b", template), entry.name
        assert "{" not in entry.text and "{" not in entry.command_text


def test_the_command_lines_hints_name_the_tables_flags() -> None:
    for entry in SETTINGS:
        if entry.commands and entry.key in CLI_FLAGS:
            assert CLI_FLAGS[entry.key] == entry.command_flag, entry.key


def test_each_faces_hint_words_are_the_tables() -> None:
    faces = {"cli": CLI_FLAGS, "python": PYTHON_FLAGS, "pytest": FLAGS}
    for face, words in faces.items():
        table = hint_words(face)
        assert {key: words[key] for key in table} == table, face
    assert set(CLI_FLAGS) == set(PYTHON_FLAGS)
    # The words a field or a flag does not say are written in the table, once.
    assert CLI_FLAGS["save_baseline"] == "`verdryx baseline RUN_ID --label LABEL`"
    assert FLAGS["save_baseline"] == "--verdryx-save-baseline=LABEL"
    assert PYTHON_FLAGS["save_baseline"] == "save_baseline(run, LABEL)"
    assert (CLI_FLAGS["db"], PYTHON_FLAGS["db"]) == ("--db", "store=")
    assert PYTHON_FLAGS["timeout"] == "EvalSettings.call_timeout"
    assert PYTHON_FLAGS["allow_model_change"] == "GatePolicy(allow_model_change=True)"
    assert PYTHON_FLAGS["baseline_runs"] == "RunPolicy.baseline_runs"
    # An add-on's option: the command line's `--NAME`, the Python words the add-on declares.
    assert verdryx_core.addons.typed.typed_options("u", None, None)["typed"]["url"] == "u"
    assert CLI_FLAGS["typed_key_file"] == "--typed-key-file"
    assert PYTHON_FLAGS["typed_url"] == "EvalSettings.grader_options['typed']['url']"


def test_no_face_words_a_setting_by_hand() -> None:
    """No module keeps a map of settings to flags or fields beside the table: no dict keyed
    by settings or holding a flag or a Python field as text, and the error family writes
    none at all."""
    keys = {entry.key for entry in SETTINGS}
    words = re.compile(r"--[a-z]|(EvalSettings|GatePolicy|RunPolicy)\b")
    for module in (verdryx_core.errors, pytest_verdryx.options):
        tree = ast.parse(Path(str(module.__file__)).read_text(encoding="utf-8"))
        texts = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict):
                named = {k.value for k in node.keys if isinstance(k, ast.Constant)}
                assert not named & keys, (module.__name__, sorted(named & keys))
                texts += [v.value for v in node.values if isinstance(v, ast.Constant)]
            elif module is verdryx_core.errors and isinstance(node, ast.Constant):
                texts.append(node.value)
        flags = [text for text in texts if isinstance(text, str) and words.match(text)]
        assert flags == [], module.__name__


@pytest.mark.parametrize(
    ("name", "raw", "expected"),
    [
        ("verdryx_concurrency", "", 8),
        ("verdryx_concurrency", " 3 ", 3),
        ("verdryx_repeat", "auto", "auto"),
        ("verdryx_threshold", "0.1", 0.1),
        ("verdryx_cache", "replay", "replay"),
        ("verdryx_judge", "", None),
    ],
)
def test_a_value_is_read_by_the_tables_rule(name: str, raw: str, expected: object) -> None:
    assert next(e for e in SETTINGS if e.name == name).read(raw) == expected


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["eval", "x", "--concurrency", "0"], "argument --concurrency: 0 is below the minimum 1"),
        (["eval", "x", "--repeat", "auto"], "argument --repeat: 'auto' is not a whole number"),
        (["drift", "--baseline", "v", "--window", "x"], "'x' is not a whole number"),
        (["report", "-o", "r", "--threshold", "2"], "2 is above the maximum 1"),
    ],
)
def test_a_command_refuses_a_value_outside_the_tables_range(
    capsys: pytest.CaptureFixture[str], argv: list[str], words: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(argv)
    assert exit_.value.code == 2
    assert words in capsys.readouterr().err
