"""When verdryx turns on (docs/options.md, "When verdryx turns on"): at configure time when the
session asks for it by name (a flag, an ini key), else at the first eval case (an eval set
file, a test marked `verdryx`; on the xdist controller, the workers' reports). A session with
neither never imports the evaluation, numpy, jsonschema, asyncio, the store, the SDKs or an
add-on."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from plugin_support import exact_case, stored_runs, write_evalset

XDIST_MODES = [pytest.param([], id="no-xdist"), pytest.param(["-n", "2"], id="xdist-2")]

#: A conftest.py that writes, at the very end of each process of the session, which of the
#: heavy modules it loaded: one file per process (the xdist controller and each worker).
PROBE = textwrap.dedent(
    """
    import json, os, pathlib, sys

    HEAVY = (
        "numpy", "jsonschema", "anthropic", "openai", "asyncio", "verdryx_core.store",
        "verdryx_core.evaluation", "pytest_verdryx.session",
        # The add-ons' options are listed in every session (verdryx_core/hooks.py), through
        # modules of hooks only: no add-on itself, nor what it needs, is imported.
        "rfc8785", "pyarrow", "uvicorn", "starlette", "psycopg", "verdryx_core.addons.events",
        "verdryx_core.addons.typed", "verdryx_core.addons.contracts",
        "verdryx_core.addons.traces", "verdryx_core.addons.slo", "verdryx_core.addons.service",
    )

    def pytest_unconfigure(config):
        role = "worker" if hasattr(config, "workerinput") else "main"
        loaded = sorted(name for name in HEAVY if name in sys.modules)
        out = pathlib.Path(__file__).parent / f"modules-{role}-{os.getpid()}.json"
        out.write_text(json.dumps(loaded))
    """
)

PLAIN_TEST = "def test_plain():\n    assert 1 + 1 == 2\n"


def _loaded(root: Path) -> dict[str, list[str]]:
    """Process file name -> the heavy modules that process had loaded at its end."""
    return {path.name: json.loads(path.read_text()) for path in root.glob("modules-*.json")}


@pytest.mark.parametrize(
    "args",
    [
        pytest.param([], id="plain"),
        pytest.param(["-n", "2"], id="xdist-2"),
        pytest.param(["--collect-only"], id="collect-only"),
        pytest.param(["--help"], id="help"),
    ],
)
def test_a_session_without_eval_cases_imports_none_of_the_machinery(
    pytester: pytest.Pytester, args: list[str]
) -> None:
    pytester.makeconftest(PROBE)
    pytester.makepyfile(test_plain=PLAIN_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    if args == ["--help"]:
        result.stdout.fnmatch_lines(["*--verdryx-model=MODEL*"])  # the options are all there
    elif args == ["--collect-only"]:
        result.stdout.fnmatch_lines(["*<Function test_plain>*"])
    else:
        result.assert_outcomes(passed=1)
    loaded = _loaded(pytester.path)
    assert len(loaded) == (3 if "-n" in args else 1), loaded
    assert all(modules == [] for modules in loaded.values()), loaded


@pytest.mark.parametrize(
    ("asked_by", "ini"),
    [
        pytest.param(["--no-verdryx-store"], "", id="a-flag"),
        pytest.param([], "verdryx_label = nightly\n", id="an-ini-key"),
        pytest.param(["-o", "verdryx_label=nightly"], "", id="an-ini-override"),
    ],
)
def test_asked_for_by_name_verdryx_is_on_from_configure_even_without_eval_cases(
    pytester: pytest.Pytester, asked_by: list[str], ini: str
) -> None:
    pytester.makeini("[pytest]\n" + ini)
    pytester.makeconftest(PROBE)
    pytester.makepyfile(test_plain=PLAIN_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *asked_by)
    result.assert_outcomes(passed=1)
    (modules,) = _loaded(pytester.path).values()
    assert "pytest_verdryx.session" in modules  # the probe sees it when it is there
    assert "verdryx ===" not in result.stdout.str()  # on, but nothing to measure or report


def test_the_first_eval_set_file_turns_it_on(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = pytester.path / "v.db"
    monkeypatch.setenv("VERDRYX_DB", str(db))  # no verdryx flag or ini key at all
    pytester.makeconftest(PROBE)
    pytester.makepyfile(test_plain=PLAIN_TEST)
    write_evalset(pytester.path, "qa", "qa", [exact_case("c1", "yes")])
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    (modules,) = _loaded(pytester.path).values()
    assert {"pytest_verdryx.session", "verdryx_core.store"} <= set(modules)
    # No baseline named, no schema to check: the gate's statistics and jsonschema stay out.
    assert not {"numpy", "jsonschema"} & set(modules)
    (run,) = stored_runs(db)
    assert run.complete and [score.key for score in run.scores] == ["qa::c1"]


def test_an_ini_typo_is_exit_4_before_collection_even_without_eval_cases(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\nverdryx_window = many\n")
    pytester.makepyfile(
        test_plain="import pathlib\n"
        "def test_plain():\n"
        "    pathlib.Path(__file__).with_name('ran').write_text('')\n"
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: verdryx_window: 'many' is not a whole number"])
    assert "collected" not in result.stdout.str()
    assert not (pytester.path / "ran").exists()


MARKED = textwrap.dedent(
    """
    import pytest

    def test_plain():
        pass

    @pytest.mark.verdryx(expected="yes")
    def test_right(verdryx):
        verdryx.grade("yes")

    @pytest.mark.verdryx(expected="yes")
    def test_wrong(verdryx):
        verdryx.grade("no")
    """
)


@pytest.mark.parametrize("mode", XDIST_MODES)
def test_marked_tests_alone_turn_it_on_and_the_fixture_works(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: list[str]
) -> None:
    db = pytester.path / "v.db"
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("VERDRYX_DB", str(db))
    # A CI view from the environment alone: under xdist the controller turns on at the first
    # case's report, and the job summary must still count every case.
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    pytester.makepyfile(test_marked=MARKED)
    result = pytester.runpytest_subprocess(*mode, "-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=2, failed=1)
    # `-v` shows the score (under xdist the outcome comes first on the line).
    result.stdout.re_match_lines(
        [r".*(test_right PASSED \(score 1\.000\)|PASSED \(score 1\.000\) \S*test_right).*"]
    )
    (run,) = stored_runs(db)
    assert sorted(score.key for score in run.scores) == [
        "test_marked.py::test_right",
        "test_marked.py::test_wrong",
    ]
    assert run.complete
    assert "| cases | 1 passed, 1 failed," in summary.read_text()


def test_an_unmarked_test_asking_for_the_fixture_turns_it_on(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = pytester.path / "v.db"
    monkeypatch.setenv("VERDRYX_DB", str(db))
    pytester.makepyfile(test_custom="def test_custom(verdryx):\n    verdryx.record(0.9)\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    (run,) = stored_runs(db)
    assert [score.value for score in run.scores] == [0.9]


RUN_ID_GRADER = textwrap.dedent(
    """
    import os, pathlib
    from verdryx_core.graders import Grade, register_grader

    class RunId:
        def grade(self, case, output, context):
            log = pathlib.Path(__file__).with_name("run-ids.log")
            with log.open("a") as handle:
                handle.write(f"{os.getpid()} {context.run_id}\\n")
            return Grade(value=1.0)

    register_grader("run_id", RunId(), replace=True)
    """
)


@pytest.mark.parametrize("turned_on_by", ["evalset", "marker"])
def test_under_xdist_workers_and_controller_agree_on_the_run_id(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, turned_on_by: str
) -> None:
    db = pytester.path / "v.db"
    monkeypatch.setenv("VERDRYX_DB", str(db))
    pytester.makeconftest(RUN_ID_GRADER)
    if turned_on_by == "evalset":
        cases = [
            {"id": f"c{i}", "prompt": "p", "grader": "run_id", "output": "x"} for i in range(6)
        ]
        write_evalset(pytester.path, "ids", "ids", cases)
    else:
        pytester.makepyfile(
            test_ids="import pytest\n"
            "@pytest.mark.parametrize('n', range(6))\n"
            "@pytest.mark.verdryx(grader='run_id')\n"
            "def test_id(verdryx, n):\n"
            "    verdryx.grade('x')\n"
        )
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=6)
    (run,) = stored_runs(db)
    lines = (pytester.path / "run-ids.log").read_text().split()
    pids, run_ids = set(lines[0::2]), set(lines[1::2])
    assert len(pids) == 2  # both workers graded cases
    assert run_ids == {run.id}


@pytest.mark.parametrize("mode", XDIST_MODES)
def test_a_file_that_failed_to_collect_before_the_first_eval_set_makes_the_run_incomplete(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: list[str]
) -> None:
    db = pytester.path / "v.db"
    monkeypatch.setenv("VERDRYX_DB", str(db))
    # Folders are collected in name order, each whole before the next is listed: the broken
    # module fails while verdryx is still off, and `b/` turns it on.
    pytester.mkdir("a")
    (pytester.path / "a" / "test_broken.py").write_text("import a_module_that_does_not_exist\n")
    write_evalset(pytester.mkdir("b"), "zz", "zz", [exact_case("c1", "yes")])
    result = pytester.runpytest_subprocess(
        *mode, "-p", "no:cacheprovider", "--continue-on-collection-errors"
    )
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["INCOMPLETE run: 1 file(s) could not be collected (a/test_broken.py)*"]
    )
    (run,) = stored_runs(db)
    assert not run.complete


@pytest.mark.parametrize("mode", XDIST_MODES)
def test_a_bad_environment_setting_stops_only_a_session_with_eval_cases(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: list[str]
) -> None:
    db = pytester.path / "v.db"
    monkeypatch.setenv("VERDRYX_DB", str(db))
    monkeypatch.setenv("VERDRYX_OTLP_ENDPOINT", "not-a-url")
    pytester.makepyfile(test_plain=PLAIN_TEST)
    plain = pytester.runpytest_subprocess(*mode, "-p", "no:cacheprovider")
    plain.assert_outcomes(passed=1)  # verdryx is off: it reads nothing of its own
    write_evalset(pytester.path, "qa", "qa", [exact_case("c1", "yes")])
    result = pytester.runpytest_subprocess(*mode, "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: verdryx: OTLP endpoint 'not-a-url' is not an http(s) URL*"]
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert "passed" not in result.stdout.str()  # nothing ran...
    assert not db.exists()  # ...and nothing was stored


@pytest.mark.parametrize("mode", XDIST_MODES)
def test_a_broken_target_hook_without_verdryx_flags_is_exit_4_and_stores_nothing(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: list[str]
) -> None:
    db = pytester.path / "v.db"
    monkeypatch.setenv("VERDRYX_DB", str(db))
    pytester.makeconftest("def pytest_verdryx_target(config):\n    raise RuntimeError('no DB')\n")
    write_evalset(pytester.path, "qa", "qa", [{"id": "c1", "prompt": "p", "expected": "x"}])
    result = pytester.runpytest_subprocess(*mode, "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: verdryx: the pytest_verdryx_target hook raised RuntimeError: no DB"]
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert not db.exists()


@pytest.mark.parametrize("asked_by", [["--no-verdryx-store"], []], ids=["a-flag", "an-eval-set"])
def test_the_target_hook_is_asked_of_the_conftests_read_at_start_only(
    pytester: pytest.Pytester, asked_by: list[str]
) -> None:
    """docs/targets.md: a conftest.py read during collection is not asked, whether verdryx
    turned on at configure time or at its first eval set, after collection began."""
    deeper = pytester.mkdir("evals")
    (deeper / "conftest.py").write_text(
        "import pathlib\n"
        "def pytest_verdryx_target(config):\n"
        "    pathlib.Path(__file__).with_name('asked').write_text('')\n"
        "    return lambda case: 'from the deeper hook'\n"
    )
    write_evalset(deeper, "qa", "qa", [{"id": "c1", "prompt": "p", "expected": "stub output"}])
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *asked_by)
    result.assert_outcomes(passed=1)  # the stub model answered, not the deeper hook's target
    assert not (deeper / "asked").exists()


def test_a_worker_that_crashed_before_the_first_case_makes_the_run_incomplete(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Marked tests alone, under xdist: the controller turns on at the first case's report,
    after the first worker went down; that worker still counts."""
    db = pytester.path / "v.db"
    monkeypatch.setenv("VERDRYX_DB", str(db))
    pytester.makepyfile(
        test_crash=textwrap.dedent(
            """
            import os
            import pytest

            def test_a_crash():
                os._exit(1)

            @pytest.mark.verdryx(expected="yes")
            def test_b_marked(verdryx):
                verdryx.grade("yes")
            """
        )
    )
    # One worker: it crashes on the first test, and its replacement runs the marked one.
    result = pytester.runpytest_subprocess("-n", "1", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["INCOMPLETE run: an xdist worker went down*"])
    (run,) = stored_runs(db)
    assert not run.complete
