"""A plain `str -> str` function as a target (docs/targets.md, "A plain function"): called with
the prompt (or the last user message) when its one parameter is annotated `str`; any other
target gets the `TargetCase`, and an error showing it expected text says what it receives."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from plugin_support import stored_runs

from verdryx_core.cli import main
from verdryx_core.targets import Target, TargetCase, TargetRunner

AGENT = textwrap.dedent(
    """
    from __future__ import annotations

    import json


    def plain(prompt: str) -> str:
        return prompt.upper()


    async def async_plain(prompt: str) -> str:
        return prompt.upper()


    def with_options(prompt: str, temperature: float = 0.0) -> str:
        return prompt.upper()


    def untyped(prompt):
        return json.dumps({"question": prompt})
    """
)

CASES = [
    {"id": "p", "prompt": "where is my order", "expected": "WHERE IS MY ORDER"},
    {
        "id": "m",
        "messages": [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": "hi, how can I help?"},
            {"role": "user", "content": "refund please"},
        ],
        "expected": "REFUND PLEASE",
    },
]


def _project(root: Path) -> Path:
    (root / "plain_agent.py").write_text(AGENT, encoding="utf-8")
    path = root / "plain.evalset.json"
    path.write_text(json.dumps({"id": "plain", "cases": CASES}), encoding="utf-8")
    return path


class Shouter:
    def __call__(self, prompt: str) -> str:
        return prompt.upper()


def test_which_functions_are_called_with_text() -> None:
    def of_case(case: TargetCase) -> str:
        return case.prompt

    def untyped(case):  # type: ignore[no-untyped-def]
        return case

    def two(prompt: str, context: str) -> str:
        return prompt

    def text(prompt: str) -> str:
        return prompt

    assert Target.of(text).takes_text
    assert Target.of(Shouter()).takes_text
    assert not Target.of(of_case).takes_text
    assert not Target.of(untyped).takes_text
    assert not Target.of(two).takes_text  # two required parameters: not a str -> str function


def test_the_runner_passes_the_prompt_or_the_last_user_message() -> None:
    seen: list[str] = []

    def text(prompt: str) -> str:
        seen.append(prompt)
        return prompt

    conversation = TargetCase(
        id="m",
        eval_set_id="s",
        prompt="refund please",
        messages=({"role": "user", "content": "hello"}, {"role": "user", "content": "last"}),
    )
    plain = TargetCase(id="p", eval_set_id="s", prompt="where")
    with TargetRunner() as runner:
        outcomes = runner.run(Target.of(text, spec="agent:text"), [plain, conversation])
    assert [outcome.result.output for outcome in outcomes if outcome.result] == ["where", "last"]
    assert seen == ["where", "last"]


@pytest.mark.parametrize("name", ["plain", "async_plain", "with_options"])
def test_a_plain_function_target_under_pytest(pytester: pytest.Pytester, name: str) -> None:
    _project(pytester.path)
    db = pytester.path / "s.db"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", f"--verdryx-db={db}", f"--verdryx-target=plain_agent:{name}"
    )
    result.assert_outcomes(passed=2)
    (run,) = stored_runs(db)
    assert {s.case_id: s.output for s in run.scores} == {
        "p": "WHERE IS MY ORDER",
        "m": "REFUND PLEASE",
    }


def test_an_untyped_function_is_told_what_a_target_receives(pytester: pytest.Pytester) -> None:
    _project(pytester.path)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--no-verdryx-store", "--verdryx-target=plain_agent:untyped"
    )
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        [
            "*plain.evalset.json::p: target plain_agent:untyped raised TypeError: Object of type "
            "TargetCase is not JSON serializable (a target is called with a TargetCase: read "
            "case.prompt or case.conversation(); or annotate its one parameter `str`, "
            "def answer(prompt: str) -> str, to be called with the prompt)"
        ]
    )


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield tmp_path
    sys.modules.pop("plain_agent", None)


def test_a_plain_function_target_under_verdryx_eval(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _project(project)
    db = project / "v.db"
    assert main(["eval", str(path), "--target", "plain_agent:plain", "--db", str(db)]) == 0
    (run,) = stored_runs(db)
    assert [s.value for s in run.scores] == [1.0, 1.0]
