"""The agent under test built by a conftest.py at session start: the `pytest_verdryx_target`
hook (docs/targets.md, "Building the target in conftest.py")."""

from __future__ import annotations

import textwrap

import pytest
from plugin_support import stored_runs, write_evalset

XDIST_MODES = [pytest.param([], id="no-xdist"), pytest.param(["-n", "2"], id="xdist-2")]

CONFTEST = textwrap.dedent(
    '''
    """An agent that needs set-up: it is built once per process, from an option, and closed
    at the end; every build, call and close is logged next to this file."""
    import os, pathlib

    HERE = pathlib.Path(__file__).parent

    def _log(line):
        with (HERE / "agent.log").open("a") as log:
            log.write(line + "\\n")

    class Agent:
        def __init__(self, greeting):
            self.greeting = greeting
            _log(f"build {os.getpid()}")

        async def answer(self, case):
            _log(f"call {case.id}")
            return {
                "output": f"{self.greeting} {case.prompt}",
                "usage": {"input_tokens": 3, "output_tokens": 2, "cost_usd": 0.5},
            }

        def close(self):
            _log(f"close {os.getpid()}")

    def pytest_addoption(parser):
        parser.addoption("--greeting", default="hello")

    def pytest_verdryx_target(config):
        agent = Agent(config.getoption("greeting"))
        config.add_cleanup(agent.close)
        return agent.answer
    '''
)


def _log(pytester: pytest.Pytester) -> list[str]:
    path = pytester.path / "agent.log"
    return path.read_text().splitlines() if path.exists() else []


def _cases(*prompts: str) -> list[dict[str, str]]:
    return [{"id": f"c{i}", "prompt": p, "expected": f"hi {p}"} for i, p in enumerate(prompts)]


@pytest.mark.parametrize("mode", XDIST_MODES)
def test_the_hook_builds_the_agent_once_per_process_and_it_answers_every_case(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    pytester.makeconftest(CONFTEST)
    write_evalset(pytester.path, "agent", "agent", _cases("a", "b", "c"))
    db = pytester.path / "v.db"
    result = pytester.runpytest_subprocess(*mode, "--greeting=hi", f"--verdryx-db={db}")
    result.assert_outcomes(passed=3)
    log = _log(pytester)
    assert sorted(line for line in log if line.startswith("call")) == [
        "call c0",
        "call c1",
        "call c2",
    ]
    builds = [line.split()[1] for line in log if line.startswith("build")]
    closes = [line.split()[1] for line in log if line.startswith("close")]
    # One agent per process (under xdist: the controller and each worker), each closed.
    assert len(builds) == (1 if not mode else 3) and len(set(builds)) == len(builds)
    assert sorted(closes) == sorted(builds)
    (run,) = stored_runs(db)
    assert run.complete and run.model_cost_usd == pytest.approx(1.5)


def test_an_eval_sets_own_target_still_wins_over_the_hook(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(other_agent="def answer(case):\n    return 'hi ' + case.prompt\n")
    write_evalset(pytester.path, "hooked", "hooked", _cases("a"))
    own = pytester.path / "own.evalset.json"
    own.write_text(
        '{"id": "own", "target": "other_agent:answer", '
        '"cases": [{"id": "x", "prompt": "b", "expected": "hi b"}]}'
    )
    result = pytester.runpytest("--greeting=hi", "--no-verdryx-store")
    result.assert_outcomes(passed=2)
    assert [line for line in _log(pytester) if line.startswith("call")] == ["call c0"]


def test_a_hook_returning_none_leaves_the_target_to_the_option(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest("def pytest_verdryx_target(config):\n    return None\n")
    pytester.makepyfile(named_agent="def answer(case):\n    return 'hi ' + case.prompt\n")
    write_evalset(pytester.path, "agent", "agent", _cases("a"))
    result = pytester.runpytest("--no-verdryx-store", "--verdryx-target=named_agent:answer")
    result.assert_outcomes(passed=1)


def test_under_a_declared_version_the_hooks_results_are_cached(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(CONFTEST)
    write_evalset(pytester.path, "agent", "agent", _cases("a", "b"))
    db = pytester.path / "v.db"
    for _ in range(2):
        result = pytester.runpytest(
            "--greeting=hi", f"--verdryx-db={db}", "--verdryx-target-version=v1"
        )
        result.assert_outcomes(passed=2)
    # The second session found both answers under the agent's name and version.
    assert len([line for line in _log(pytester) if line.startswith("call")]) == 2
    result.stdout.fnmatch_lines(["*cache: 2 hits, 0 misses*"])


@pytest.mark.parametrize(
    ("hook", "message"),
    [
        (
            "def pytest_verdryx_target(config):\n    raise RuntimeError('no\\nDB')\n",
            "ERROR: verdryx: the pytest_verdryx_target hook raised RuntimeError: no DB",
        ),
        (
            "def pytest_verdryx_target(config):\n    return 'agent:answer'\n",
            "ERROR: verdryx: the pytest_verdryx_target hook returned a str, not a callable;*",
        ),
    ],
    ids=["raises", "not-callable"],
)
def test_a_broken_hook_is_a_usage_error_of_one_line(
    pytester: pytest.Pytester, hook: str, message: str
) -> None:
    pytester.makeconftest(hook)
    write_evalset(pytester.path, "agent", "agent", _cases("a"))
    result = pytester.runpytest("--no-verdryx-store")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
