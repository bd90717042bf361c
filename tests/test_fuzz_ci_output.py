"""Fuzzing what reaches a terminal or a CI log: generated outputs, expected values, reasons and
unmeasured reasons full of control and format characters and workflow-command prefixes, all
in one eval set file, through a real pytest session with `GITHUB_ACTIONS=true` (annotations and
the job summary) and one without, then through `verdryx eval` and `verdryx show`; and eval set
file and folder names generated the same way, through both faces. No line of
stdout may begin a CI command except verdryx's own annotations, and no raw control or format
character may reach it (docs/troubleshooting.md, "Reliability")."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest
from fuzz_support import CI_PIECES, FUZZ, assert_no_ci_command, ci_hostile_text
from hypothesis import example, given, settings
from hypothesis import strategies as st
from junitparser import JUnitXml

from verdryx_core.cases import EvalCase
from verdryx_core.cli import main
from verdryx_core.graders import Grade, GradeContext, register_grader, unregister_grader
from verdryx_core.store import Store

_names = itertools.count()


class _Quoting:
    """Scores 0 and quotes back what the case's options say, as a judge quotes an agent."""

    def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Grade:
        options = case.options.get("options") or {}
        if "unmeasured" in options:
            return Grade.unmeasured_because(str(options["unmeasured"]))
        return Grade(value=0.0, reason=str(options.get("reason", "")))


@pytest.fixture(autouse=True)
def _quoting_grader() -> Iterator[None]:
    register_grader("quoting", _Quoting())
    yield
    unregister_grader("quoting")


def _case(kind: str, text: str, other: str) -> dict[str, Any]:
    """One case of `kind` carrying the generated `text` where that kind prints it."""
    case: dict[str, Any] = {"prompt": "p", "output": text}
    if kind in ("contains", "icontains", "exact"):
        return case | {"grader": kind, "expected": other or "x"}
    if kind == "reason":
        return case | {"grader": "quoting", "options": {"reason": text}, "output": other}
    return case | {"grader": "quoting", "options": {"unmeasured": text}, "output": other}


_cases = st.lists(
    st.tuples(
        st.sampled_from(["contains", "icontains", "exact", "reason", "unmeasured"]),
        ci_hostile_text,
        ci_hostile_text | st.just(""),
    ),
    min_size=1,
    max_size=8,
)

#: Every prefix at once, in every kind of case: the run a red team would try first.
_ALL = "".join(CI_PIECES)


def _failed_calls(recorder: pytest.HookRecorder) -> int:
    reports = recorder.getreports("pytest_runtest_logreport")
    return sum(1 for report in reports if report.failed and report.when == "call")


@settings(FUZZ, max_examples=min(FUZZ.max_examples, 6))
@example(
    generated=[(kind, _ALL, _ALL) for kind in ("contains", "exact", "reason", "unmeasured")],
    set_id="fuzz",
)
@given(generated=_cases, set_id=st.just("fuzz") | ci_hostile_text.map(lambda text: "s" + text))
def test_generated_text_never_issues_a_ci_command(
    pytester: pytest.Pytester,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    generated: list[tuple[str, str, str]],
    set_id: str,
) -> None:
    number = next(_names)
    cases = [{"id": f"c{i}", **_case(*item)} for i, item in enumerate(generated)]
    # One file of generated cases; a second whose eval set id is generated too (refused at
    # load when it holds a control or format character: its error line is checked as well).
    (pytester.path / "fuzz.evalset.json").write_text(
        json.dumps({"id": "fuzz", "cases": cases}), encoding="utf-8"
    )
    (pytester.path / "named.evalset.json").write_text(
        json.dumps({"id": set_id, "cases": [{"id": "n", "prompt": "p", "output": "x"}]}),
        encoding="utf-8",
    )
    summary = pytester.path / f"summary{number}.md"
    xml = pytester.path / f"j{number}.xml"
    monkeypatch.setenv("GITHUB_WORKSPACE", str(pytester.path))
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    for github in (True, False):
        if github:
            monkeypatch.setenv("GITHUB_ACTIONS", "true")
            monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
            options = ["-ra", f"--junitxml={xml}"]
        else:
            monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
            options = ["-v", "-ra", "--tb=line", "--continue-on-collection-errors"]
        capsys.readouterr()
        # inline_run writes to this test's captured stdout as is: a RunResult's lines are
        # split by splitlines(), which would hide a raw U+2028.
        recorder = pytester.inline_run("--no-verdryx-store", "-p", "no:cacheprovider", *options)
        out = capsys.readouterr().out
        own = assert_no_ci_command(out)
        assert len(own) == (_failed_calls(recorder) if github else 0), out[-3000:]
    assert_no_ci_command(summary.read_text(encoding="utf-8"), where="job summary")
    for suite in JUnitXml.fromfile(str(xml)):
        for case in suite:
            for result in case.result:
                assert_no_ci_command(result.message or "", where="JUnit message")
                assert_no_ci_command(result.text or "", where="JUnit text")
    # The same file through the CLI: `eval`'s text, then the stored run through `show`.
    db = pytester.path / f"s{number}.db"
    for argv in (["eval", "fuzz.evalset.json", "--db", str(db)], ["show", "", "--db", str(db)]):
        if argv[0] == "show":
            with Store.open(db) as store:
                argv[1] = store.list_runs()[0].id
        monkeypatch.chdir(pytester.path)
        main(argv)
        out, err = capsys.readouterr()
        assert assert_no_ci_command(out, where=f"verdryx {argv[0]}") == []
        assert assert_no_ci_command(err, where=f"verdryx {argv[0]} stderr") == []
    main(["show", argv[1], "--db", str(db), "--json"])
    document = json.loads(capsys.readouterr().out)  # still JSON, with every value as stored
    stored = {score["case_id"]: score["output"] for score in document["scores"]}
    for case in cases:
        if case["id"] in stored:
            assert stored[case["id"]] == case["output"]


def _file_name(text: str, limit: int = 120) -> str:
    """`text` as a file system takes a name: no `/` or NUL, not `.` or `..`, and short
    enough in UTF-8 bytes."""
    name = text.replace("/", "_").replace("\x00", "_")
    while len(name.encode("utf-8")) > limit:
        name = name[:-1]
    return name if name.strip(".") else "_" + name


@settings(FUZZ, max_examples=min(FUZZ.max_examples, 6))
@example(file=_ALL, folder="\n::error::f")
@given(file=ci_hostile_text, folder=ci_hostile_text)
def test_generated_file_names_never_issue_a_ci_command(
    pytester: pytest.Pytester,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    file: str,
    folder: str,
) -> None:
    """Eval set files whose names (and folder names) a pull request chose: at the rootdir, so
    a name starts pytest's `-v` lines, and in a folder of a generated name. Each is graded or
    refused in one line; no line of the output is a CI command either way."""
    number = next(_names)
    root = pytester.path / f"names{number}"
    inner = root / _file_name(folder)
    inner.mkdir(parents=True)
    document = json.dumps({"id": "named", "cases": [{"id": "c", "prompt": "p", "output": "x"}]})
    paths = [root / f"{_file_name(file)}.evalset.json", inner / "in.evalset.json"]
    for index, path in enumerate(paths):
        path.write_text(document.replace("named", f"named{index}"), encoding="utf-8")
    monkeypatch.chdir(root)
    for github in (True, False):
        if github:
            monkeypatch.setenv("GITHUB_ACTIONS", "true")
        else:
            monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
        capsys.readouterr()
        pytester.inline_run(
            str(root),
            f"--rootdir={root}",
            "--no-verdryx-store",
            "-p",
            "no:cacheprovider",
            "-v",
            "-rA",
            "--continue-on-collection-errors",
        )
        out = capsys.readouterr().out
        assert_no_ci_command(out, where="pytest with generated file names")
        assert "Traceback" not in out and "INTERNALERROR" not in out
    for path in paths:
        main(["eval", str(path.relative_to(root)), "--db", str(root / "v.db")])
        out, err = capsys.readouterr()
        assert assert_no_ci_command(out, where="verdryx eval") == []
        assert assert_no_ci_command(err, where="verdryx eval stderr") == []
