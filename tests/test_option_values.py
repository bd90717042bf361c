"""Float options refuse NaN and infinities at start, in both faces (docs/options.md,
"Numbers"): `nan` compares false with every bound, so a range check alone lets it through
(a coverage floor of `nan` is no floor at all). Each is one line naming the option, before
any model call: exit 4 (a pytest usage error) or the command line's usage exit (2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.anthropic_server import FakeAnthropic
from plugin_support import write_evalset

from pytest_verdryx.options import OPTIONS
from verdryx_core.cli import main

#: Every float option of the pytest plugin: one converter reads them all.
PLUGIN_FLOATS = tuple(option for option in OPTIONS if option.kind == "float")
NOT_FINITE = ("nan", "inf", "-inf", "NaN", "+Infinity")


def test_the_plugin_has_the_float_options_the_gate_rests_on() -> None:
    names = {option.name for option in PLUGIN_FLOATS}
    assert {
        "verdryx_min_coverage",
        "verdryx_min_score",
        "verdryx_fdr",
        "verdryx_detect",
        "verdryx_threshold",
        "verdryx_min_effect",
        "verdryx_timeout",
    } <= names


def _live_set(pytester: pytest.Pytester) -> None:
    # A case the model answers: a float option read late would be refused after the call.
    write_evalset(pytester.path, "live", "live", [{"id": "q1", "prompt": "hello", "expected": "x"}])


@pytest.mark.usefixtures("anthropic_env")
@pytest.mark.parametrize("option", PLUGIN_FLOATS, ids=lambda option: option.name)
@pytest.mark.parametrize("value", ["nan", "inf"])
def test_a_plugin_float_flag_refuses_a_value_that_is_not_finite(
    pytester: pytest.Pytester, server: FakeAnthropic, option: object, value: str
) -> None:
    flag = option.flag  # type: ignore[attr-defined]
    _live_set(pytester)
    result = pytester.runpytest(
        f"--verdryx-db={pytester.path / 's.db'}",
        "--verdryx-model=claude-haiku-4-5",
        "--verdryx-baseline=v1",
        f"{flag}={value}",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{flag}: '{value}' is not a finite number*"])
    assert "Traceback" not in result.stderr.str()
    assert server.requests == []  # refused before any model call


@pytest.mark.parametrize("value", NOT_FINITE)
def test_a_plugin_float_ini_key_refuses_a_value_that_is_not_finite(
    pytester: pytest.Pytester, value: str
) -> None:
    write_evalset(pytester.path, "s", "s", [{"id": "c1", "prompt": "p", "output": "yes"}])
    pytester.makeini(f"[pytest]\nverdryx_min_coverage = {value}\n")
    result = pytester.runpytest(f"--verdryx-db={pytester.path / 's.db'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*verdryx_min_coverage: '{value}' is not a finite number*"])


def test_a_finite_value_in_range_is_still_read(pytester: pytest.Pytester) -> None:
    write_evalset(
        pytester.path, "s", "s", [{"id": "c1", "prompt": "p", "expected": "yes", "output": "yes"}]
    )
    result = pytester.runpytest(
        f"--verdryx-db={pytester.path / 's.db'}", "--verdryx-min-score=0.75", "--verdryx-fdr=1e-1"
    )
    result.assert_outcomes(passed=1)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's usage errors exit from the parser
        code = int(exc.code or 0)
    _, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, err


#: Every float option of the command line, with the arguments its command needs besides.
CLI_FLOATS = (
    ("drift", "--threshold", ("--baseline", "v1")),
    ("drift", "--min-effect", ("--baseline", "v1")),
    ("drift", "--min-coverage", ("--baseline", "v1")),
    ("drift", "--detect", ("--baseline", "v1")),
    ("drift", "--fdr", ("--baseline", "v1")),
    ("gate", "--fdr", ("--baseline", "v1", "--group", "g")),
    ("gate", "--min-coverage", ("--baseline", "v1", "--group", "g")),
    ("gate", "--threshold", ("--baseline", "v1", "--group", "g")),
    ("eval", "--min-score", ("x.evalset.json",)),
    ("plan", "--detect", ("--baseline", "v1")),
    ("plan", "--power", ("--baseline", "v1")),
    ("report", "--threshold", ("-o", "r.html")),
    ("report", "--min-effect", ("-o", "r.html")),
    ("slo", "--confidence", ()),
    ("slo", "--quality-floor", ()),
    ("slo", "--cost-multiple", ()),
    ("slo", "--target-task-success", ()),
    ("serve", "--header-timeout", ()),
    ("serve", "--body-timeout", ()),
    ("verify", "--timeout", ("c.json", "--base-path", ".")),
)


@pytest.mark.parametrize(
    ("command", "flag", "rest"), CLI_FLOATS, ids=[f"{c} {f}" for c, f, _ in CLI_FLOATS]
)
@pytest.mark.parametrize("value", ["nan", "-inf"])
def test_a_cli_float_option_refuses_a_value_that_is_not_finite(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    flag: str,
    rest: tuple[str, ...],
    value: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    code, err = _cli(capsys, command, *rest, f"{flag}={value}")
    # The command's usage exit: 2, but 3 for `verify`, whose 2 is a FLAG (docs/cli.md).
    assert code == (3 if command == "verify" else 2)
    lines = err.strip().splitlines()
    assert any(f"argument {flag}: '{value}' is not a finite number" in line for line in lines), err


def test_a_cli_eval_refuses_nan_before_any_model_call(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, anthropic_env: FakeAnthropic
) -> None:
    evalset = write_evalset(tmp_path, "live", "live", [{"id": "q", "prompt": "p", "expected": "x"}])
    code, err = _cli(
        capsys,
        "eval",
        str(evalset),
        "--model",
        "claude-haiku-4-5",
        "--db",
        str(tmp_path / "s.db"),
        "--min-score",
        "nan",
    )
    assert code == 2 and "argument --min-score: 'nan' is not a finite number" in err
    assert anthropic_env.requests == []
    assert not (tmp_path / "s.db").exists()
