"""`verdryx_baseline` in the ini (docs/options.md): inert in a session with no eval cases,
a first `--verdryx-save-baseline` of that label works with a warning, and otherwise an unknown
label refuses the gate at the end; on the command line an unknown label is exit 4 at start."""

from __future__ import annotations

import pytest
from junitparser import Error, JUnitXml
from plugin_support import exact_case, stored_runs, write_evalset

INI = "[pytest]\nverdryx_baseline = v1\nverdryx_db = store.db\n"


def test_the_ini_baseline_is_inert_without_eval_cases(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_plain="def test_one():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1)
    assert "unknown baseline" not in result.stdout.str() + result.stderr.str()


def test_a_first_save_of_the_ini_baseline_works_with_a_warning(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini(INI)
    write_evalset(pytester.path, "s", "s", [exact_case("a", "yes"), exact_case("b", "yes")])
    result = pytester.runpytest("--verdryx-save-baseline=v1")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    result.stdout.fnmatch_lines(
        [
            "baseline saved: v1 *",
            "WARNING: baseline 'v1' (verdryx_baseline in the ini) was not found, "
            "so nothing was gated",
        ]
    )
    assert (pytester.path / ".verdryx" / "baselines" / "v1.json").is_file()
    (run,) = stored_runs(pytester.path / "store.db")
    assert run.complete
    # The next session finds it and gates against it.
    gated = pytester.runpytest()
    assert gated.ret == pytest.ExitCode.OK
    gated.stdout.fnmatch_lines(["verdict: ON-TRACK*"])


def test_an_unknown_ini_baseline_refuses_the_gate_at_the_end(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    write_evalset(pytester.path, "s", "s", [exact_case("a", "yes")])
    result = pytester.runpytest("--junitxml=out.xml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        ["gate refused: unknown baseline 'v1'; known baselines: none yet*verdryx_baseline*"]
    )
    # The run itself is measured and stored; only the gate is refused.
    assert len(stored_runs(pytester.path / "store.db")) == 1
    suite = next(iter(JUnitXml.fromfile(str(pytester.path / "out.xml"))))
    (gate,) = [case for case in suite if case.classname == "verdryx" and case.name == "gate"]
    (error,) = gate.result
    assert isinstance(error, Error)
    assert "unknown baseline 'v1'" in (error.message or "")


def test_saving_another_label_still_refuses_an_unknown_ini_baseline(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini(INI)
    write_evalset(pytester.path, "s", "s", [exact_case("a", "yes")])
    result = pytester.runpytest("--verdryx-save-baseline=v2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["gate refused: unknown baseline 'v1'*"])


def test_an_unknown_flag_baseline_is_exit_4_at_start_listing_the_labels(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini(INI)
    write_evalset(pytester.path, "s", "s", [exact_case("a", "yes")])
    assert pytester.runpytest("--verdryx-save-baseline=v1").ret == pytest.ExitCode.OK
    result = pytester.runpytest("--verdryx-baseline=nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown baseline 'nope'; known baselines: v1*"])
    assert "collected" not in result.stdout.str()  # refused before collection
    assert len(stored_runs(pytester.path / "store.db")) == 1
