"""Runs record where they came from (label, commit, branch, CI URL, run group), and a subset
run is stored as partial: not pooled, not charted, not listed by default, not a baseline
unless asked (docs/ci.md). Real sessions, a real store, the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from plugin_support import exact_case, stored_runs, write_evalset

from verdryx_core.gating.comparison import select_window
from verdryx_core.store import Store

XDIST_MODES = [pytest.param([], id="no-xdist"), pytest.param(["-n", "2"], id="xdist-2")]

GITHUB = {
    "GITHUB_ACTIONS": "true",
    "GITHUB_SHA": "a" * 40,
    "GITHUB_REF_NAME": "main",
    "GITHUB_SERVER_URL": "https://github.example",
    "GITHUB_REPOSITORY": "acme/agent",
    "GITHUB_RUN_ID": "77",
    "GITHUB_RUN_ATTEMPT": "1",
}


@pytest.fixture
def ci_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in GITHUB.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("GITHUB_HEAD_REF", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def _four(pytester: pytest.Pytester) -> None:
    cases = [exact_case(f"c{i}", "yes", tags=["first" if i < 2 else "second"]) for i in range(4)]
    write_evalset(pytester.path, "s", "s", cases)


@pytest.mark.parametrize("mode", XDIST_MODES)
def test_a_run_records_its_provenance_and_label(
    pytester: pytest.Pytester, ci_env: None, mode: list[str]
) -> None:
    _four(pytester)
    db = pytester.path / "store.db"
    pytester.runpytest(f"--verdryx-db={db}", "--verdryx-label=nightly", *mode).assert_outcomes(
        passed=4
    )
    (run,) = stored_runs(db)
    assert (run.label, run.commit, run.branch) == ("nightly", "a" * 40, "main")
    assert run.ci_url == "https://github.example/acme/agent/actions/runs/77"
    assert run.run_group == "github-77-1"
    assert run.partial is False


#: How a session picks a subset. Under xdist each worker and the controller read the same
#: selection from the command line: the default step checks one way under xdist, the slow
#: step (README.md) the other two.
SUBSETS = {
    "-k": ["-k", "first"],
    "--deselect": ["--deselect", "s.evalset.json::c3"],
    "node-id": ["s.evalset.json::c0"],
}


@pytest.mark.parametrize(
    ("select", "mode"),
    [
        pytest.param(select, mode, id=f"{name}-{mode_id}", marks=marks)
        for name, select in SUBSETS.items()
        for mode, mode_id in (([], "no-xdist"), (["-n", "2"], "xdist-2"))
        for marks in [[pytest.mark.slow] if mode and name != "node-id" else []]
    ],
)
def test_a_subset_run_is_stored_partial(
    pytester: pytest.Pytester, mode: list[str], select: list[str]
) -> None:
    _four(pytester)
    db = pytester.path / "store.db"
    pytester.runpytest(f"--verdryx-db={db}", *mode)
    pytester.runpytest(f"--verdryx-db={db}", *select, *mode)
    full, subset = reversed(stored_runs(db))  # stored_runs: newest first
    assert full.partial is False and len(full.scores) == 4
    assert subset.partial is True and 1 <= len(subset.scores) < 4


def test_last_failed_and_x_runs_are_partial(pytester: pytest.Pytester) -> None:
    write_evalset(pytester.path, "s", "s", [exact_case("ok", "yes"), exact_case("bad", "no")])
    db = pytester.path / "store.db"
    pytester.runpytest(f"--verdryx-db={db}", "-p", "cacheprovider")
    pytester.runpytest(f"--verdryx-db={db}", "-p", "cacheprovider", "--lf")
    pytester.runpytest(f"--verdryx-db={db}", "-x")
    stopped, last_failed, full = stored_runs(db)
    assert full.partial is False
    assert last_failed.partial is True and [s.case_id for s in last_failed.scores] == ["bad"]
    assert stopped.partial is True and not stopped.complete


def test_a_partial_run_is_not_saved_as_a_baseline_unless_allowed(
    pytester: pytest.Pytester,
) -> None:
    _four(pytester)
    db = pytester.path / "store.db"
    refused = pytester.runpytest(f"--verdryx-db={db}", "-k", "first", "--verdryx-save-baseline=v1")
    assert refused.ret == pytest.ExitCode.TESTS_FAILED
    refused.stdout.fnmatch_lines(
        ["*baseline 'v1' NOT saved: this run measured a subset*--verdryx-allow-partial-baseline*"]
    )
    assert not (pytester.path / ".verdryx" / "baselines" / "v1.json").exists()
    allowed = pytester.runpytest(
        f"--verdryx-db={db}",
        "-k",
        "first",
        "--verdryx-save-baseline=v1",
        "--verdryx-allow-partial-baseline",
    )
    assert allowed.ret == pytest.ExitCode.OK
    saved = json.loads((pytester.path / ".verdryx" / "baselines" / "v1.json").read_text())
    assert sorted(case["case_id"] for case in saved["cases"]) == ["c0", "c1"]


def _verdryx(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "verdryx_core.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_windows_runs_and_the_report_leave_partial_runs_out(pytester: pytest.Pytester) -> None:
    _four(pytester)
    db = pytester.path / "store.db"
    pytester.runpytest(f"--verdryx-db={db}", "--verdryx-label=full-1")
    pytester.runpytest(f"--verdryx-db={db}", "-k", "first", "--verdryx-label=subset")
    pytester.runpytest(f"--verdryx-db={db}", "--verdryx-label=full-2")
    full_2, subset, full_1 = stored_runs(db)
    assert subset.partial
    with Store.open(db) as store:
        window = select_window(store, full_2, 3)
    assert [run.id for run in window] == [full_2.id, full_1.id]  # the subset is not pooled

    listed = json.loads(_verdryx("runs", "--db", str(db), "--json"))["runs"]
    assert [row["label"] for row in listed] == ["full-2", "full-1"]
    every = json.loads(_verdryx("runs", "--db", str(db), "--all", "--json"))["runs"]
    assert [(row["label"], row["partial"]) for row in every] == [
        ("full-2", False),
        ("subset", True),
        ("full-1", False),
    ]
    text = _verdryx("runs", "--db", str(db), "--all")
    assert "SOURCE" in text and "subset" in text and "partial" in text

    assert "label: subset" in _verdryx("show", subset.id, "--db", str(db))

    report = pytester.path / "r.html"
    _verdryx("report", "--db", str(db), "-o", str(report))
    page = report.read_text()
    assert full_1.id[:8] in page and full_2.id[:8] in page
    assert subset.id[:8] not in page  # not charted, not the newest whole run


def test_provenance_from_git_when_not_in_ci(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("GITHUB_ACTIONS", "GITHUB_SHA", "GITHUB_REF_NAME", "GITHUB_HEAD_REF"):
        monkeypatch.delenv(name, raising=False)
    for name in ("CI_COMMIT_SHA", "CI_COMMIT_REF_NAME", "CI_COMMIT_BRANCH", "CI_BRANCH"):
        monkeypatch.delenv(name, raising=False)
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    _four(pytester)
    git = ["git", "-C", str(pytester.path)]
    subprocess.run([*git, "init", "-q", "-b", "evals"], check=True)
    subprocess.run([*git, "add", "s.evalset.json"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "one"], check=True)
    head = subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    db = pytester.path / "store.db"
    pytester.runpytest(f"--verdryx-db={db}")
    (run,) = stored_runs(db)
    assert (run.commit, run.branch) == (head, "evals")


def test_the_docs_name_the_new_options() -> None:
    docs = (Path(__file__).resolve().parent.parent / "docs" / "options.md").read_text()
    assert "`--verdryx-label`" in docs and "`--verdryx-allow-partial-baseline`" in docs


def test_store_paths_resolve_against_the_rootdir_never_the_cwd(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VERDRYX_DB", raising=False)
    monkeypatch.setenv("HOME", str(pytester.path / "home"))  # no ~/.taipan
    monkeypatch.delenv("TAIPAN_HOME", raising=False)
    (pytester.path / "data").mkdir()
    pytester.makeini("[pytest]\nverdryx_db = data/ini.db\n")
    evals = pytester.path / "evals"
    evals.mkdir()
    write_evalset(evals, "s", "s", [exact_case("c0", "yes")])
    sub = pytester.path / "evals"
    monkeypatch.chdir(sub)
    # The ini value: beside the ini file, whatever folder pytest starts in.
    pytester.runpytest(str(sub)).assert_outcomes(passed=1)
    assert (pytester.path / "data" / "ini.db").is_file()
    assert not (sub / "data").exists()
    # A relative flag: in the rootdir (where the ini file is).
    pytester.runpytest(str(sub), "--verdryx-db=flag.db").assert_outcomes(passed=1)
    assert (pytester.path / "flag.db").is_file() and not (sub / "flag.db").exists()
    # The default: verdryx.db in the rootdir.
    pytester.makeini("[pytest]\n")
    pytester.runpytest(str(sub)).assert_outcomes(passed=1)
    assert (pytester.path / "verdryx.db").is_file() and not (sub / "verdryx.db").exists()
