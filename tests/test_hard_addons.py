"""Add-ons that break: an `after_save` that raises, an entry point that does not import,
names something that is no grader or builds one that is not, and a name that shadows a
built-in grader or another package's. Each is one line naming the grader (and the package
that installed it); the run is kept; a name clash is refused at start (docs/graders.md,
"Graders from add-ons"; docs/troubleshooting.md, "Reliability").

The add-ons are real installed distributions: a module and a `.dist-info` folder with an
`entry_points.txt` in a folder put on `sys.path`, found by importlib's own metadata lookup.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from verdryx_core.cli import main
from verdryx_core.errors import AfterSaveError, GraderError
from verdryx_core.evaluation import EvalSettings, Evaluation
from verdryx_core.graders.registry import refresh_entry_points
from verdryx_core.store import Store

MODULE = """
from verdryx_core.graders import Grade

NOT_A_GRADER = 42


class Passing:
    def grade(self, case, output, context):
        return Grade(value=1.0)


class FailingSave(Passing):
    @staticmethod
    def after_save(store, run):
        raise ZeroDivisionError("division by zero")


class ForRunBug:
    @classmethod
    def for_run(cls, settings):
        raise KeyError("typed_url")


def make_wrong():
    return 42
"""

CASES = [
    {"id": "addon", "prompt": "p", "grader": "broken", "output": "a"},
    {"id": "plain", "prompt": "p", "grader": "exact", "expected": "a", "output": "a"},
]

Install = Callable[..., None]


@pytest.fixture
def install(tmp_path: Path) -> Iterator[Install]:
    """`install(name=value, ...)`: a distribution `bad-addon` declaring those entry points;
    `install(..., package=NAME)` another one."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "bad_addon.py").write_text(textwrap.dedent(MODULE))
    sys.path.insert(0, str(site))

    def _install(package: str = "bad-addon", **points: str) -> None:
        dist = site / f"{package.replace('-', '_')}-1.0.dist-info"
        dist.mkdir(exist_ok=True)
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 1.0\n")
        lines = "".join(f"{name} = {value}\n" for name, value in points.items())
        (dist / "entry_points.txt").write_text(f"[verdryx.graders]\n{lines}")
        refresh_entry_points()

    yield _install
    sys.path.remove(str(site))
    sys.modules.pop("bad_addon", None)
    refresh_entry_points()


def _evalset(directory: Path) -> Path:
    path = directory / "s.evalset.json"
    path.write_text(json.dumps({"id": "s", "cases": CASES}))
    return path


def _output(result: pytest.RunResult) -> str:
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text and "Traceback" not in text
    return text


def _stored(db: Path) -> list[str]:
    with Store.open(db) as store:
        return [summary.id for summary in store.list_runs()]


def test_an_after_save_that_raises_keeps_the_run_in_pytest(
    pytester: pytest.Pytester, install: Install
) -> None:
    install(broken="bad_addon:FailingSave")
    _evalset(pytester.path)
    result = pytester.runpytest(f"--verdryx-db={pytester.path / 'v.db'}")
    text = _output(result)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    (line,) = [line for line in text.splitlines() if "after_save raised" in line]
    assert line == (
        "ERROR: grader 'broken': after_save raised ZeroDivisionError: division by zero; the "
        "run is stored without what 'broken' keeps of it"
    )
    (run_id,) = _stored(pytester.path / "v.db")
    assert f"stored: {run_id}" in text
    with Store.open(pytester.path / "v.db") as store:
        run = store.load_run(run_id)
    assert run is not None and run.complete and len(run.scores) == 2


def test_an_after_save_that_raises_keeps_the_run_in_verdryx_eval(
    tmp_path: Path, install: Install, capsys: pytest.CaptureFixture[str]
) -> None:
    install(broken="bad_addon:FailingSave")
    db = tmp_path / "v.db"
    code = main(["eval", str(_evalset(tmp_path)), "--db", str(db)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert code == 1
    (line,) = err.strip().splitlines()
    assert line.startswith("error: grader 'broken': after_save raised ZeroDivisionError")
    assert len(_stored(db)) == 1 and "stored in" in out


def test_the_api_says_the_run_is_stored(tmp_path: Path, install: Install) -> None:
    install(broken="bad_addon:FailingSave")
    from verdryx_core import evaluate

    with pytest.raises(AfterSaveError) as caught:
        evaluate([_evalset(tmp_path)], store=tmp_path / "v.db")
    assert _stored(tmp_path / "v.db") == [caught.value.run.id]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("point", "words"),
    [
        (
            "no_such_module_x:Grader",
            "grader 'broken': loading entry point 'no_such_module_x:Grader' (package bad-addon "
            "1.0) failed: ModuleNotFoundError: No module named 'no_such_module_x'",
        ),
        (
            "bad_addon:NOT_A_GRADER",
            "grader 'broken': entry point 'bad_addon:NOT_A_GRADER' (package bad-addon 1.0) names "
            "42 (of type int), which has no grade(case, output, context) method",
        ),
    ],
    ids=["import-error", "not-a-grader"],
)
def test_an_entry_point_that_cannot_be_a_grader_is_one_collection_error(
    pytester: pytest.Pytester, install: Install, point: str, words: str
) -> None:
    install(broken=point)
    _evalset(pytester.path)
    result = pytester.runpytest("--no-verdryx-store")
    text = _output(result)
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a collection error, as for any file
    (line,) = [line for line in text.splitlines() if "grader 'broken'" in line]
    assert words in line


@pytest.mark.parametrize(
    ("point", "words"),
    [
        ("bad_addon:make_wrong", "grader 'broken': 42 has no grade(case, output, context)"),
        ("bad_addon:ForRunBug", "grader 'broken': for_run raised KeyError: 'typed_url'"),
    ],
    ids=["factory-builds-no-grader", "for-run-bug"],
)
def test_a_grader_that_cannot_be_built_is_its_cases_error_and_the_run_is_kept(
    pytester: pytest.Pytester, install: Install, point: str, words: str
) -> None:
    install(broken=point)
    _evalset(pytester.path)
    db = pytester.path / "v.db"
    result = pytester.runpytest(f"--verdryx-db={db}", "-rA")
    text = _output(result)
    result.assert_outcomes(passed=1, errors=1)
    assert any(words in line for line in text.splitlines())
    (run_id,) = _stored(db)
    with Store.open(db) as store:
        run = store.load_run(run_id)
    assert run is not None and not run.complete and [s.case_id for s in run.scores] == ["plain"]


def test_a_name_that_shadows_a_built_in_is_refused_at_start(
    pytester: pytest.Pytester, install: Install, capsys: pytest.CaptureFixture[str]
) -> None:
    install(exact="bad_addon:Passing")
    path = pytester.path / "plain.evalset.json"
    path.write_text(json.dumps({"id": "p", "cases": CASES[1:]}))
    words = (
        "grader 'exact' of entry point 'bad_addon:Passing' (package bad-addon 1.0) has the "
        "name of a built-in grader"
    )
    result = pytester.runpytest("--no-verdryx-store")
    text = _output(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = [line for line in text.splitlines() if words in line]
    assert line.startswith("ERROR: verdryx: ")
    assert main(["eval", str(path), "--db", str(pytester.path / "v.db")]) == 2
    out, err = capsys.readouterr()
    assert words in err and "Traceback" not in out + err
    assert not (pytester.path / "v.db").exists() or _stored(pytester.path / "v.db") == []


def test_two_packages_declaring_one_name_are_refused_at_start(install: Install) -> None:
    install(broken="bad_addon:Passing")
    install(package="other-addon", broken="bad_addon:FailingSave")
    with pytest.raises(GraderError, match="grader 'broken' is declared twice: by entry point"):
        Evaluation(EvalSettings()).check_graders()
