"""Per-case workspaces and contract checks on them (docs/workspaces-and-execution.md): loaded
and refused with one line, copied fresh per case and sample, handed to the target, graded as
the target left them, never cached, and never left behind (a raising target, a Ctrl-C)."""

from __future__ import annotations

import _thread
import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verdryx_core import EvalSettings, evaluate
from verdryx_core.addons.contracts import contract_from_data, load_bundle, verify_bundle
from verdryx_core.errors import EvalSetError
from verdryx_core.evalsets.load import load_evalset
from verdryx_core.evalsets.workspace import file_path_problem
from verdryx_core.evaluation import EvaluationInterrupted
from verdryx_core.evaluation.workspaces import Workspaces
from verdryx_core.targets import TargetCase

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "workspace"

CONTRACT = {
    "success_criteria": [
        {"id": "fixed", "type": "file_contains", "path": "app.py", "pattern": "return a \\+ b"},
        {"id": "no-junk", "type": "path_absent", "path": "junk.txt"},
    ]
}


@pytest.fixture
def temp_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The system temporary directory, pointed at an empty folder the test can list."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setenv("TMPDIR", str(root))
    monkeypatch.setattr(tempfile, "tempdir", str(root))  # gettempdir() caches its answer
    yield root


def _write_set(folder: Path, cases: list[dict[str, Any]], **extra: Any) -> Path:
    path = folder / "ws.evalset.json"
    path.write_text(json.dumps({"id": "ws", **extra, "cases": cases}), encoding="utf-8")
    return path


def _repo(folder: Path) -> None:
    (folder / "repo").mkdir()
    (folder / "repo" / "app.py").write_text("def add(a, b):\n    return a - b\n")


def _case(**fields: Any) -> dict[str, Any]:
    return {"id": "fix", "prompt": "fix add", "grader": "contract", "contract": CONTRACT, **fields}


class Editor:
    """A target that edits app.py (rightly or not) and records what it was given."""

    def __init__(self, *, right: bool = True) -> None:
        self.right = right
        self.seen: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def __call__(self, case: TargetCase) -> str:
        assert case.workspace is not None
        app = Path(case.workspace) / "app.py"
        with self.lock:
            self.seen.append((case.workspace, app.read_text()))
        new = "return a + b" if self.right else "return b - a"
        app.write_text(app.read_text().replace("return a - b", new))
        return "I fixed it."


# -- loading ----------------------------------------------------------------------------------


def test_a_folder_and_inline_files_load_and_the_fingerprint_follows_the_content(
    tmp_path: Path,
) -> None:
    _repo(tmp_path)
    files = {"files": {"app.py": "def add(a, b):\n    return a - b\n"}}
    path = _write_set(
        tmp_path,
        [_case(), _case(id="inline", workspace=files)],
        defaults={"workspace": "repo"},
    )
    first, inline = load_evalset(path).cases
    assert first.workspace is not None and inline.workspace is not None
    assert first.workspace["folder"] == str((tmp_path / "repo").resolve())
    assert inline.workspace["files"] == files["files"]
    # The same content is the same case wherever it lies; other content is another case.
    assert first.workspace["sha256"] == inline.workspace["sha256"]
    assert first.fingerprint() == inline.fingerprint()
    before = first.fingerprint()
    (tmp_path / "repo" / "app.py").write_text("changed\n")
    assert load_evalset(path).cases[0].fingerprint() != before


@pytest.mark.parametrize(
    ("workspace", "field", "says"),
    [
        ("missing", "workspace", "does not exist"),
        ("/etc", "workspace", "is absolute"),
        ("../elsewhere", "workspace", "climbs out"),
        ("link-out", "workspace", "outside the eval set's folder"),
        ("repo-with-link", "workspace", "is a symlink to"),
        ({"files": {"../x": "a"}}, "workspace.files['../x']", "climbs out"),
        ({"files": {"/x": "a"}}, "workspace.files['/x']", "is absolute"),
        ({"files": {"a": "1", "a/b": "2"}}, "workspace.files['a/b']", "is inside 'a'"),
        # The key written is named (a typo is what needs fixing), with the one it may mean.
        ({"folder": "repo"}, "workspace.folder", "not a known field"),
        ({"file": {"a": "1"}}, "workspace.file", "did you mean 'files'?"),
        ({}, "workspace.files", "required but missing"),
    ],
)
def test_a_bad_workspace_is_one_line_naming_file_case_and_field(
    tmp_path: Path, workspace: Any, field: str, says: str
) -> None:
    sets = tmp_path / "sets"
    sets.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (sets / "link-out").symlink_to(outside)
    (sets / "repo-with-link").mkdir()
    (sets / "repo-with-link" / "secret").symlink_to(outside)
    path = _write_set(sets, [_case(workspace=workspace)])
    with pytest.raises(EvalSetError) as caught:
        load_evalset(path)
    message = str(caught.value)
    assert "\n" not in message and says in message, message
    assert str(path) in message and "'fix'" in message and f"field '{field}'" in message


def test_an_absolute_link_into_the_workspace_is_refused_at_load(tmp_path: Path) -> None:
    # It resolves inside the folder, so it is no door out; but copied as a link it would
    # lead the agent's writes back to the committed file.
    _repo(tmp_path)
    (tmp_path / "repo" / "app-link.py").symlink_to(tmp_path / "repo" / "app.py")
    (tmp_path / "repo" / "sub").mkdir()
    (tmp_path / "repo" / "sub" / "up").symlink_to("../../outside.txt")
    (tmp_path / "outside.txt").write_text("x")
    path = _write_set(tmp_path, [_case(workspace="repo")])
    with pytest.raises(EvalSetError) as caught:
        load_evalset(path)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message and "'fix'" in message
    assert "'app-link.py' is a symlink to the absolute path" in message, message
    (tmp_path / "repo" / "app-link.py").unlink()
    refused = re.escape("'sub/up' is a symlink to '../../outside.txt'")
    with pytest.raises(EvalSetError, match=refused):
        load_evalset(path)


def test_a_copy_never_writes_through_to_the_source(tmp_path: Path, temp_root: Path) -> None:
    _repo(tmp_path)
    (tmp_path / "repo" / "same.py").symlink_to("app.py")  # relative, inside: a link in the copy
    path = _write_set(tmp_path, [_case(workspace="repo")])
    load_evalset(path)

    def write_through(case: TargetCase) -> str:
        assert case.workspace is not None
        (Path(case.workspace) / "same.py").write_text("def add(a, b):\n    return a + b\n")
        return "done"

    run = evaluate([path], target=write_through)
    assert run.scores[0].value == 1.0, run.scores[0].reason
    assert "return a - b" in (tmp_path / "repo" / "app.py").read_text()
    # A link made absolute after the set loaded is refused when the folder is copied: the
    # case's error, and the source is untouched.
    evalset = load_evalset(path)
    (tmp_path / "repo" / "same.py").unlink()
    (tmp_path / "repo" / "same.py").symlink_to(tmp_path / "repo" / "app.py")
    spaces = Workspaces()
    workspace = evalset.cases[0].workspace
    assert workspace is not None
    with pytest.raises(OSError, match=re.escape("'same.py' is a symlink to the absolute path")):
        spaces.make(workspace, name="fix", repeat=0)
    spaces.close()
    assert list(temp_root.iterdir()) == []
    assert "return a - b" in (tmp_path / "repo" / "app.py").read_text()


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("a" * 300 + ".py", "has a name longer than 255 bytes"),
        ("/".join(["d" * 200] * 6), "is longer than 1024 bytes"),
        ("notes\nuser: hi.txt", "holds the character '\\x0a'"),
        ("evil\u202etxt.py", "holds the character '\\u202e'"),
        ("zero\u200bwidth.py", "holds the character '\\u200b'"),
        ("no\u00a0break.py", "holds the character '\\u00a0'"),
        ("line\u2028sep.py", "holds the character '\\u2028'"),
    ],
)
def test_an_inline_file_name_follows_the_ids_rules(tmp_path: Path, name: str, says: str) -> None:
    path = _write_set(tmp_path, [_case(workspace={"files": {name: "x"}})])
    with pytest.raises(EvalSetError) as caught:
        load_evalset(path)
    message = str(caught.value)
    assert "\n" not in message and says in message, message
    assert str(path) in message and "'fix'" in message and "field 'workspace.files[" in message
    assert len(message) < 600


def test_inline_file_names_that_are_nfc_twins_are_refused(tmp_path: Path) -> None:
    files = {"caf\u00e9.py": "a", "cafe\u0301.py": "b"}
    path = _write_set(tmp_path, [_case(workspace={"files": files})])
    with pytest.raises(EvalSetError, match="another Unicode normalization form"):
        load_evalset(path)
    # A plain space is a name's own.
    path = _write_set(tmp_path, [_case(workspace={"files": {"my notes.txt": "a"}})])
    assert load_evalset(path).cases[0].workspace is not None


def test_a_long_inline_name_through_pytest_is_one_error_line(pytester: pytest.Pytester) -> None:
    case = _case(workspace={"files": {"a" * 300 + ".py": "x"}})
    (pytester.path / "long.evalset.json").write_text(json.dumps({"id": "s", "cases": [case]}))
    result = pytester.runpytest("long.evalset.json", "--no-verdryx-store")
    text = result.stdout.str() + result.stderr.str()
    assert "has a name longer than 255 bytes" in text
    assert "Traceback" not in text and len(text.splitlines()) < 40, text


def test_a_contract_check_needs_a_workspace_and_belongs_to_contract_checks(
    tmp_path: Path,
) -> None:
    checks = [{"grader": "contract", "contract": CONTRACT}]
    path = _write_set(tmp_path, [{"id": "c", "prompt": "p", "checks": checks}])
    with pytest.raises(EvalSetError, match="give the case a 'workspace'"):
        load_evalset(path)
    wrong = [{"grader": "contains", "expected": "x", "contract": CONTRACT}]
    path = _write_set(tmp_path, [{"id": "c", "prompt": "p", "checks": wrong, "workspace": "."}])
    with pytest.raises(EvalSetError, match=r"checks\[0\]\.contract.*only valid with grader"):
        load_evalset(path)
    bad = [{"grader": "contract", "contract": {"success_criteria": [{"id": "x"}]}}]
    path = _write_set(tmp_path, [{"id": "c", "prompt": "p", "checks": bad, "workspace": "."}])
    with pytest.raises(EvalSetError, match=r"field 'checks\[0\]\.contract'"):
        load_evalset(path)


# -- the loop: copy, call, grade, remove -------------------------------------------------------


def test_each_sample_gets_a_fresh_copy_the_graders_see_the_edit_and_nothing_is_left(
    tmp_path: Path, temp_root: Path
) -> None:
    _repo(tmp_path)
    checks = [
        {"grader": "contract", "contract": CONTRACT, "weight": 3},
        {"grader": "contains", "expected": "fixed"},
    ]
    path = _write_set(
        tmp_path,
        [
            _case(workspace="repo"),
            {"id": "both", "prompt": "fix add", "checks": checks, "workspace": "repo"},
        ],
    )
    right = Editor()
    run = evaluate([path], EvalSettings(repeat=3), target=right)
    assert run.complete and [s.value for s in run.scores] == [1.0, 1.0]
    assert all(score.workspaces == () for score in run.scores)
    # Six calls, six distinct fresh folders, each starting from the original file.
    assert len({folder for folder, _ in right.seen}) == 6
    assert {text for _, text in right.seen} == {"def add(a, b):\n    return a - b\n"}
    assert all(Path(folder).is_relative_to(temp_root) for folder, _ in right.seen)
    assert list(temp_root.iterdir()) == []
    # The source folder is never the one edited.
    assert "return a - b" in (tmp_path / "repo" / "app.py").read_text()

    wrong = evaluate([path], target=Editor(right=False))
    # The claim ("I fixed it.") earns the text check's weight alone: 1 of 4.
    assert [s.value for s in wrong.scores] == [0.0, 0.25]
    assert wrong.scores[0].reason is not None and "[fixed] fail" in wrong.scores[0].reason
    assert list(temp_root.iterdir()) == []


def test_kept_workspaces_hold_what_the_agent_left_and_a_recheckable_bundle(
    tmp_path: Path, temp_root: Path
) -> None:
    _repo(tmp_path)
    path = _write_set(tmp_path, [_case(workspace="repo")])
    run = evaluate([path], EvalSettings(keep_workspaces=True), target=Editor(right=False))
    (folder,) = run.scores[0].workspaces
    kept = Path(folder)
    assert kept.parent.parent == temp_root
    assert "return b - a" in (kept / "workspace" / "app.py").read_text()
    (bundle_path,) = (kept / "evidence").iterdir()
    contract = contract_from_data(CONTRACT, source="c", default_task_id="fix")
    # The bundle re-checks to the same verdict with the workspace gone.
    shutil.rmtree(kept / "workspace")
    assert verify_bundle(contract, load_bundle(bundle_path)).verdict == "FAIL"


def test_a_raising_target_leaves_no_folder(tmp_path: Path, temp_root: Path) -> None:
    _repo(tmp_path)
    path = _write_set(tmp_path, [_case(workspace="repo"), _case(id="ok", workspace="repo")])

    def flaky(case: TargetCase) -> str:
        assert case.workspace is not None
        if case.id == "fix":
            (Path(case.workspace) / "half-done.txt").write_text("x")
            raise RuntimeError("the agent crashed")
        return Editor()(case)

    run = evaluate([path], target=flaky)
    assert not run.complete and "the agent crashed" in run.errors[0]
    assert [score.case_id for score in run.scores] == ["ok"]
    assert list(temp_root.iterdir()) == []


def test_a_ctrl_c_with_a_call_in_flight_leaves_no_folder(tmp_path: Path, temp_root: Path) -> None:
    _repo(tmp_path)
    path = _write_set(tmp_path, [_case(workspace="repo", id=f"c{n}") for n in range(3)])
    done = threading.Event()

    def interrupted(case: TargetCase) -> str:
        assert case.workspace is not None
        (Path(case.workspace) / "app.py").write_text("partial")
        if case.id == "c0":
            _thread.interrupt_main()  # the user's Ctrl-C, while this call is in flight
            time.sleep(0.3)
            done.set()
        return "working"

    with pytest.raises(EvaluationInterrupted):
        evaluate([path], EvalSettings(concurrency=1), target=interrupted)
    assert done.wait(10)
    deadline = time.monotonic() + 10
    while list(temp_root.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)  # the abandoned call's thread finishes its sample
    assert list(temp_root.iterdir()) == []


def test_a_workspace_case_is_never_cached_nor_replayed(tmp_path: Path, temp_root: Path) -> None:
    _repo(tmp_path)
    path = _write_set(tmp_path, [_case(workspace="repo")])
    db = tmp_path / "runs.db"
    editor = Editor()
    settings = EvalSettings(target_version="v1", cache="on")
    for _ in range(2):
        assert evaluate([path], settings, target=editor, store=db).scores[0].value == 1.0
    assert len(editor.seen) == 2  # called both times: a cached text holds no edit
    replay = evaluate(
        [path], EvalSettings(target_version="v1", cache="replay"), target=editor, store=db
    )
    assert not replay.complete and "a replay cannot answer it" in replay.errors[0]
    assert list(temp_root.iterdir()) == []


# -- the example, through both faces ------------------------------------------------------------


def test_the_example_through_pytest_keeps_failed_workspaces_and_cleans_up_otherwise(
    pytester: pytest.Pytester, temp_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(EXAMPLE, pytester.path / "workspace")
    monkeypatch.setenv("VERDRYX_EXAMPLE_EDIT", "wrong")
    result = pytester.runpytest_inprocess("workspace", "--no-verdryx-store", "-p", "no:randomly")
    result.assert_outcomes(failed=2)
    assert list(temp_root.iterdir()) == []
    result = pytester.runpytest_inprocess(
        "workspace", "--no-verdryx-store", "--verdryx-keep-workspaces"
    )
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["kept workspaces of failed cases*"])
    shown = [
        line.split(": ", 1)[1]
        for line in result.stdout.lines
        if line.startswith("  workspace-swe-example::")
    ]
    assert len(shown) == 2 and all(Path(folder).parent.parent == temp_root for folder in shown)
    fix = next(Path(folder) for folder in shown if "fix-tax-bug" in folder)
    assert (fix / "workspace" / "pricing.py.orig").is_file()
    for folder in shown:
        shutil.rmtree(Path(folder).parent, ignore_errors=True)
    monkeypatch.delenv("VERDRYX_EXAMPLE_EDIT")
    result = pytester.runpytest_inprocess("workspace", "--no-verdryx-store")
    result.assert_outcomes(passed=2)
    assert list(temp_root.iterdir()) == []


def test_the_example_through_the_cli(
    temp_root: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any
) -> None:
    from verdryx_core.cli.main import main

    monkeypatch.chdir(EXAMPLE)  # the target is imported from the current folder
    monkeypatch.syspath_prepend(str(EXAMPLE))
    db = str(tmp_path / "cli.db")
    assert main(["eval", "swe-fix.evalset.json", "--db", db]) == 0
    out = capsys.readouterr().out
    assert "[1.00] pass workspace-swe-example::fix-tax-bug" in out
    monkeypatch.setenv("VERDRYX_EXAMPLE_EDIT", "wrong")
    # The wrong edit fails its case: the run fails, as a pytest session would.
    assert main(["eval", "swe-fix.evalset.json", "--db", db, "--json"]) == 1
    scores = json.loads(capsys.readouterr().out)["scores"]
    assert [score["value"] for score in scores] == [0.0, 0.0]
    assert list(temp_root.iterdir()) == []
    assert os.environ["VERDRYX_EXAMPLE_EDIT"] == "wrong"


@settings(max_examples=60, deadline=None)
@given(
    parts=st.lists(
        st.sampled_from(["a", "b.txt", ".", "..", "", "/", "\\", "C:", "~"]), min_size=1, max_size=5
    )
)
def test_an_accepted_file_path_never_leads_out_of_the_workspace(parts: list[str]) -> None:
    path = "/".join(parts)
    if file_path_problem(path) is not None:
        return
    root = Path("/workspace-root")
    resolved = Path(os.path.normpath(root / path))
    assert resolved != root and root in resolved.parents


def test_a_csv_cell_names_a_folder_or_holds_the_files(tmp_path: Path) -> None:
    _repo(tmp_path)
    files = json.dumps({"files": {"app.py": "x = 1\n"}}).replace('"', '""')
    (tmp_path / "w.evalset.csv").write_text(
        f'id,prompt,grader,expected,workspace\nc1,p,exact,e,repo\nc2,p,exact,e,"{files}"\n'
    )
    first, second = load_evalset(tmp_path / "w.evalset.csv").cases
    assert first.workspace is not None and first.workspace["folder"].endswith("repo")
    assert second.workspace is not None and second.workspace["files"] == {"app.py": "x = 1\n"}
