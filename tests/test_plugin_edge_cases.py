"""Edge cases of the plugin's session found in review: each test names the bug it pins down.
Real pytest sessions (pytester) and a real SQLite store."""

from __future__ import annotations

import pytest
from plugin_support import exact_case, stored_runs, write_evalset

#: Without xdist here, with it in the slow step (README.md): what these tests check is read on
#: the controller from the reports that reach it, the path the default step checks under xdist
#: in test_the_summary_counts_xfailed_cases_as_pytest_reports_them,
#: test_custom_cases_beside_an_eval_set_are_not_reported_removed and test_plugin_activation.py's
#: collection error under xdist.
XDIST_SLOW = [
    pytest.param([], id="no-xdist"),
    pytest.param(["-n", "2"], id="xdist-2", marks=pytest.mark.slow),
]


def test_collect_only_stores_no_run(pytester: pytest.Pytester) -> None:
    # Listing the cases is not a measurement: no empty "incomplete" run in the history.
    db = pytester.path / "store.db"
    write_evalset(pytester.path, "agent", "agent", [exact_case("c0", "yes")])
    result = pytester.runpytest(f"--verdryx-db={db}", "--collect-only")
    assert result.ret == pytest.ExitCode.OK
    assert "INCOMPLETE" not in result.stdout.str()
    assert not db.exists() or stored_runs(db) == []


@pytest.mark.parametrize("mode", XDIST_SLOW)
def test_a_skipped_custom_case_leaves_the_run_complete(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    db = pytester.path / "store.db"
    write_evalset(pytester.path, "agent", "agent", [exact_case("c0", "yes")])
    pytester.makepyfile(
        test_custom="""
        import pytest

        @pytest.mark.skip(reason="not today")
        @pytest.mark.verdryx(case_id="later")
        def test_later(verdryx):
            verdryx.record(1.0)
        """
    )
    result = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-save-baseline=v1", *mode)
    result.assert_outcomes(passed=1, skipped=1)
    assert result.ret == pytest.ExitCode.OK
    assert "INCOMPLETE" not in result.stdout.str()
    assert stored_runs(db)[0].complete
    assert (pytester.path / ".verdryx" / "baselines" / "v1.json").is_file()


def test_a_marked_test_that_never_grades_fails_with_a_clear_message(
    pytester: pytest.Pytester,
) -> None:
    db = pytester.path / "store.db"
    pytester.makepyfile(
        test_custom="""
        import pytest

        @pytest.mark.verdryx(case_id="silent")
        def test_silent(verdryx):
            pass
        """
    )
    result = pytester.runpytest(f"--verdryx-db={db}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*never called verdryx.grade(...) or verdryx.record(...)*"])


@pytest.mark.parametrize("mode", XDIST_SLOW)
def test_same_method_name_in_two_classes_is_two_cases(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    db = pytester.path / "store.db"
    pytester.makepyfile(
        test_custom="""
        import pytest

        class TestA:
            @pytest.mark.verdryx
            def test_x(self, verdryx):
                verdryx.record(1.0)

        class TestB:
            @pytest.mark.verdryx
            def test_x(self, verdryx):
                verdryx.record(0.9)
        """
    )
    result = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-save-baseline=v1", *mode)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    keys = sorted(score.key for score in stored_runs(db)[0].scores)
    assert keys == ["test_custom.py::TestA::test_x", "test_custom.py::TestB::test_x"]


def test_a_parametrized_custom_case_with_a_case_id_is_one_case_per_parameter(
    pytester: pytest.Pytester,
) -> None:
    db = pytester.path / "store.db"
    pytester.makepyfile(
        test_custom="""
        import pytest

        @pytest.mark.parametrize("n", [1, 2])
        @pytest.mark.verdryx(case_id="refund")
        def test_refund(verdryx, n):
            verdryx.record(1.0)
        """
    )
    result = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-save-baseline=v1")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    case_ids = [score.case_id for score in stored_runs(db)[0].scores]
    assert case_ids == ["refund[1]", "refund[2]"]


@pytest.mark.parametrize("mode", [[], ["-n", "2"]], ids=["no-xdist", "xdist-2"])
def test_custom_cases_beside_an_eval_set_are_not_reported_removed(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    db = pytester.path / "store.db"
    write_evalset(pytester.path, "agent", "agent", [exact_case(f"c{i}", "yes") for i in range(2)])
    pytester.makepyfile(
        test_custom="""
        import pytest

        @pytest.mark.verdryx
        def test_custom(verdryx):
            verdryx.record(1.0)
        """
    )
    pytester.runpytest(f"--verdryx-db={db}", "--verdryx-save-baseline=v1").assert_outcomes(passed=3)
    result = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1", *mode)
    result.assert_outcomes(passed=4)  # the cases, and the verdryx::gate test
    result.stdout.fnmatch_lines(["*over 3 matched cases*"])
    assert "removed since the baseline" not in result.stdout.str()
    # A -k subset that leaves the custom case out is a subset, not a removal.
    subset = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1", "-k", "c0", *mode)
    assert "removed since the baseline" not in subset.stdout.str()


@pytest.mark.parametrize("mode", [[], ["-n", "2"]], ids=["no-xdist", "xdist-2"])
def test_the_summary_counts_xfailed_cases_as_pytest_reports_them(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    # c0 scores 0.667: it passed at the bar 0.5 when the baseline was saved, and is below
    # the bar 0.8 of this run, as its baseline score is: pytest calls it xfailed, and so must
    # the verdryx summary (it said "1 failed" and asked to look at a failing case).
    from plugin_support import FULL, PARTIAL, trace_case

    db = pytester.path / "store.db"
    cases = [trace_case("c0", PARTIAL, min_score=None), trace_case("c1", FULL, min_score=None)]
    write_evalset(pytester.path, "agent", "agent", cases)
    pytester.runpytest(
        f"--verdryx-db={db}", "--verdryx-save-baseline=v1", "--verdryx-min-score=0.5"
    ).assert_outcomes(passed=2)
    result = pytester.runpytest(
        f"--verdryx-db={db}", "--verdryx-baseline=v1", "--verdryx-min-score=0.8", *mode
    )
    result.assert_outcomes(passed=2, xfailed=1)  # the cases, and the verdryx::gate test
    result.stdout.fnmatch_lines(["*cases: 1 passed, 0 failed, 1 below the bar as in the baseline*"])
    assert "case(s) failed" not in result.stdout.str()


def test_an_edited_case_below_the_bar_fails_even_if_its_old_version_did(
    pytester: pytest.Pytester,
) -> None:
    # The baseline's score belongs to the old expected answer: an edited case is a different
    # measurement (the gate reports it as changed), so it cannot excuse today's failure.
    db = pytester.path / "store.db"
    write_evalset(pytester.path, "agent", "agent", [exact_case("c0", "no", expected="yes")])
    pytester.runpytest(f"--verdryx-db={db}", "--verdryx-save-baseline=v1")
    write_evalset(pytester.path, "agent", "agent", [exact_case("c0", "no", expected="oui")])
    result = pytester.runpytest(
        f"--verdryx-db={db}", "--verdryx-baseline=v1", "--verdryx-fail-on=cases"
    )
    # The case fails; the gate compared nothing (its one case edited), so it is refused.
    result.assert_outcomes(failed=1, errors=1)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["*nothing compared: 0 of 1 baseline cases compared (1 edited*"])
    # Under the default policy the verdict decides, and it was refused: exit 4 all the same.
    again = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1", "-rx")
    again.assert_outcomes(xfailed=1, errors=1)
    assert again.ret == pytest.ExitCode.USAGE_ERROR
    again.stdout.fnmatch_lines(
        ["*dropped: score 0.000 below the bar 0.5 (edited since the baseline)*"]
    )


def test_no_store_with_a_window_creates_no_store(pytester: pytest.Pytester) -> None:
    # A fresh CI runner gates on the committed file without keeping runs: pooling a window
    # must not leave a new empty database behind (nothing is created as a side effect).
    first = pytester.path / "first.db"
    write_evalset(pytester.path, "agent", "agent", [exact_case(f"c{i}", "yes") for i in range(3)])
    pytester.runpytest(f"--verdryx-db={first}", "--verdryx-save-baseline=v1").assert_outcomes(
        passed=3
    )
    db = pytester.path / "fresh.db"
    result = pytester.runpytest(
        f"--verdryx-db={db}",
        "--no-verdryx-store",
        "--verdryx-baseline=v1",
        "--verdryx-window=3",
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["*verdict: ON-TRACK*"])
    assert not db.exists()


def test_a_store_failure_after_ctrl_c_keeps_the_interrupted_exit_code(
    pytester: pytest.Pytester,
) -> None:
    # The store is a folder, so saving fails; exit 1 would tell CI "tests failed" and hide
    # that the session was interrupted (exit 2).
    db = pytester.path / "not-a-file"
    db.mkdir()
    write_evalset(pytester.path, "a_first", "agent", [exact_case("c0", "yes")])
    pytester.makepyfile(
        test_z_interrupt="""
        import pytest

        @pytest.mark.verdryx(case_id="late")
        def test_interrupt(verdryx):
            raise KeyboardInterrupt
        """
    )
    result = pytester.runpytest_subprocess(f"--verdryx-db={db}")
    result.stdout.fnmatch_lines(["*ERROR: the run was not stored*"])
    assert result.ret == pytest.ExitCode.INTERRUPTED


@pytest.mark.parametrize("mode", XDIST_SLOW)
def test_a_deeply_nested_eval_set_file_is_one_collection_error(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    # The file's own error used to reach pytest's Collector.repr_failure with an argument it
    # does not take: INTERNALERROR, and no summary at all.
    depth = 100_000
    (pytester.path / "deep.evalset.json").write_text(
        '{"id": "deep", "cases": [{"id": "c0", "prompt": "p", "expected": "x", "output": '
        + "[" * depth
        + "]" * depth
        + "}]}"
    )
    write_evalset(pytester.path, "agent", "agent", [exact_case("c0", "yes")])
    result = pytester.runpytest(f"--verdryx-db={pytester.path / 'store.db'}", *mode)
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output
    # Without xdist pytest stops at the collection error; xdist runs the other file's case.
    assert result.ret == (pytest.ExitCode.TESTS_FAILED if mode else pytest.ExitCode.INTERRUPTED)
    assert result.parseoutcomes()["errors"] == 1
    assert "deep.evalset.json: not valid JSON at line 1" in output
    assert "nested deeper than 100 levels" in output
