"""A challenger in real pytest sessions (docs/targets.md, "A challenger"): a second agent
called on every case the target answers, with the same inputs and in the same pool, graded
by the same graders, gated against the target by the gate's paired rule, with the exit
status and a JUnit testcase of its own."""

from __future__ import annotations

import json
import re
import textwrap

import pytest
from fakes.anthropic_server import FakeAnthropic, RecordedRequest, Reply, message_reply
from junitparser import JUnitXml, Properties
from plugin_support import stored_runs, write_evalset

AGENTS = textwrap.dedent(
    '''
    """Two agents: each logs its calls (agent, case, repeat) in order."""
    import json, os, pathlib, threading, time

    HERE = pathlib.Path(__file__).parent
    _lock = threading.Lock()
    _now = [0]

    def _log(who, case):
        with _lock, (HERE / "calls.log").open("a") as log:
            log.write(json.dumps([who, case.id, case.repeat, case.prompt, os.getpid()]) + "\\n")

    def _busy():
        with _lock:
            _now[0] += 1
            peak = HERE / "peak.json"
            seen = json.loads(peak.read_text()) if peak.exists() else 0
            peak.write_text(json.dumps(max(_now[0], seen)))
        time.sleep(0.02)
        with _lock:
            _now[0] -= 1

    def champion(case):
        _log("champion", case)
        _busy()
        return case.prompt

    def worse(case):
        """Right on the even cases only."""
        _log("challenger", case)
        _busy()
        return case.prompt if int(case.id[1:]) % 2 == 0 else "wrong"

    def same(case):
        _log("challenger", case)
        _busy()
        return case.prompt

    def flaky(case):
        _log("challenger", case)
        if case.id == "c3":
            raise RuntimeError("challenger broke on c3")
        return case.prompt

    def hostile(case):
        _log("challenger", case)
        return "\\x1b[31m<script>alert(1)</script>"
    '''
)


def _setup(pytester: pytest.Pytester, n: int = 12, **extra: object) -> None:
    pytester.makepyfile(agents=AGENTS)
    cases = [
        {"id": f"c{i}", "prompt": f"say {i}", "expected": f"say {i}", **extra} for i in range(n)
    ]
    write_evalset(pytester.path, "tasks", "tasks", cases)


def _calls(pytester: pytest.Pytester) -> list[list[object]]:
    lines = (pytester.path / "calls.log").read_text().splitlines()
    return [json.loads(line) for line in lines]


def _run(pytester: pytest.Pytester, challenger: str, *args: str) -> pytest.RunResult:
    return pytester.runpytest(
        "--verdryx-target=agents:champion",
        f"--verdryx-challenger=agents:{challenger}",
        "--verdryx-db=v.db",
        "-p",
        "no:cacheprovider",
        *args,
    )


def test_a_worse_challenger_fails_the_session_with_its_own_testcase(
    pytester: pytest.Pytester,
) -> None:
    _setup(pytester, n=20)
    result = _run(pytester, "worse", "--junitxml=out.xml")
    text = result.stdout.str()
    assert result.ret == 1, text
    # The items are the champion's: every one passes.
    result.assert_outcomes(passed=20, failed=1)
    assert "verdryx challenger agents:worse: REGRESSED against champion agents:champion" in text
    assert "challenger agents:worse: 20 case(s) measured, mean 0.500" in text
    # Each case asked both agents, with the same input, the same number of times.
    calls = _calls(pytester)
    assert sorted((c[1], c[3]) for c in calls if c[0] == "champion") == sorted(
        (c[1], c[3]) for c in calls if c[0] == "challenger"
    )
    assert len(calls) == 40
    xml = JUnitXml.fromfile(str(pytester.path / "out.xml"))
    cases = {case.name: case for suite in xml for case in suite}
    gate = cases["challenger"]
    assert gate.classname == "verdryx"
    assert not gate.is_passed
    props = {p.name: p.value for p in gate.child(Properties)}
    assert props["verdryx.verdict"] == "regressed"
    item_props = {p.name: p.value for p in cases["c1"].child(Properties)}
    assert item_props["verdryx.score"] == "1"
    assert item_props["verdryx.challenger_score"] == "0"
    # The store's history is the champion's: the challenger's run is not in it.
    runs = stored_runs(pytester.path / "v.db")
    assert [(run.target, run.mean_score) for run in runs] == [("agents:champion", 1.0)]


def test_an_equal_challenger_is_on_track_and_the_session_passes(
    pytester: pytest.Pytester,
) -> None:
    _setup(pytester, n=12)
    result = _run(pytester, "same", "--junitxml=out.xml", "--verdryx-concurrency=3")
    text = result.stdout.str()
    assert result.ret == 0, text
    result.assert_outcomes(passed=13)
    assert "verdryx challenger agents:same: ON-TRACK against champion agents:champion" in text
    # One bound for both agents' calls.
    assert json.loads((pytester.path / "peak.json").read_text()) <= 3
    calls = _calls(pytester)
    assert len(calls) == 24
    # Interleaved: each case's two calls are started side by side, neither agent always
    # first, so the challenger's calls are not all made after the champion's.
    first = [c[0] for c in calls[:6]]
    assert "champion" in first and "challenger" in first


def test_a_challenger_error_leaves_its_run_incomplete_and_fails_the_session(
    pytester: pytest.Pytester,
) -> None:
    _setup(pytester, n=6)
    result = _run(pytester, "flaky", "--junitxml=out.xml")
    text = result.stdout.str()
    assert result.ret == 1, text
    assert "challenger broke on c3" in text
    assert "not gated against champion" in text
    # The items are the champion's: the challenger's error is not theirs.
    result.assert_outcomes(passed=6, skipped=1)


def test_a_challenger_that_does_not_load_is_a_usage_error(pytester: pytest.Pytester) -> None:
    _setup(pytester, n=2)
    result = _run(pytester, "nosuch")
    assert result.ret == 4
    assert "'agents' has no attribute 'nosuch'" in result.stderr.str()
    assert not (pytester.path / "calls.log").exists()


def test_recorded_cases_are_not_challenged(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(agents=AGENTS)
    cases = [{"id": f"c{i}", "prompt": f"say {i}", "expected": f"say {i}"} for i in range(4)]
    cases.append({"id": "r1", "prompt": "x", "expected": "x", "output": "x"})
    write_evalset(pytester.path, "tasks", "tasks", cases)
    result = _run(pytester, "same")
    assert result.ret == 0, result.stdout.str()
    assert {c[1] for c in _calls(pytester)} == {"c0", "c1", "c2", "c3"}
    assert "challenger agents:same: 4 case(s) measured" in result.stdout.str()


def test_the_report_shows_both_replies_side_by_side_escaped(pytester: pytest.Pytester) -> None:
    _setup(pytester, n=4)
    result = _run(pytester, "hostile", "--junitxml=out.xml", "--verdryx-report=report.html")
    assert result.ret == 1, result.stdout.str()
    assert "\x1b[31m" not in result.stdout.str()
    page = (pytester.path / "report.html").read_text()
    assert "Champion and challenger, side by side" in page
    section = page.split('id="challenger"', 1)[1].split("<h2", 1)[0]
    assert "REGRESSED against champion agents:champion" in section
    # Each case's row: both scores and both replies; the agent's text only ever as text.
    assert section.count("<tr><td>c") == 4
    assert "<pre>say 0</pre>" in section
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in section
    assert "<script>" not in page and "\x1b" not in page
    assert "\\x1b[31m" in section  # the escape byte shown, as the terminal shows it


@pytest.mark.slow  # two xdist workers start
def test_under_xdist_the_controller_calls_both_agents_once(pytester: pytest.Pytester) -> None:
    _setup(pytester, n=10)
    result = _run(pytester, "worse", "-n", "2")
    assert result.ret == 1, result.stdout.str()
    assert "REGRESSED against champion agents:champion" in result.stdout.str()
    calls = _calls(pytester)
    assert len(calls) == 20
    # One process made them all (the controller), for the workers to grade.
    assert len({call[4] for call in calls}) == 1


def test_repeats_give_the_challenger_the_same_samples(pytester: pytest.Pytester) -> None:
    _setup(pytester, n=4)
    result = _run(pytester, "same", "--verdryx-repeat=2")
    assert result.ret == 0, result.stdout.str()
    calls = _calls(pytester)
    champion = sorted((c[1], c[2]) for c in calls if c[0] == "champion")
    assert champion == sorted((c[1], c[2]) for c in calls if c[0] == "challenger")
    assert len(champion) == 8


# -- the pairwise judge ------------------------------------------------------------------

JUDGE = "claude-haiku-4-5"


def _replies(text: str) -> tuple[str, str]:
    a = re.search(r"<reply_a>\n(.*?)\n</reply_a>", text, re.DOTALL)
    b = re.search(r"<reply_b>\n(.*?)\n</reply_b>", text, re.DOTALL)
    assert a is not None and b is not None, text
    return a.group(1), b.group(1)


def _fair_judge(request: RecordedRequest) -> Reply:
    """Prefers the reply that says what the task asked to (`say N`), whatever its place."""
    a, b = _replies(request.user_text)
    right = re.search(r"<task>\n(.*?)\n</task>", request.user_text, re.DOTALL)
    assert right is not None
    task = right.group(1)
    score = 0.5 + 0.5 * ((b == task) - (a == task))
    return message_reply(tool_uses=[("record_verdict", {"score": score, "reason": "compared"})])


def _first_judge(request: RecordedRequest) -> Reply:
    """Always prefers reply A: position bias and nothing else."""
    _replies(request.user_text)
    return message_reply(tool_uses=[("record_verdict", {"score": 0.0, "reason": "A reads first"})])


@pytest.mark.usefixtures("anthropic_env")
def test_the_pairwise_judge_sees_both_orders_and_reports_a_win_rate(
    pytester: pytest.Pytester, server: FakeAnthropic
) -> None:
    server.responder = _fair_judge
    _setup(pytester, n=10)
    result = _run(
        pytester,
        "worse",
        f"--verdryx-pairwise-judge={JUDGE}",
        "--junitxml=out.xml",
        "--verdryx-report=report.html",
    )
    text = result.stdout.str()
    assert result.ret == 1, text
    judged = [r for r in server.requests if (r.body.get("tool_choice") or {}).get("name")]
    # Two orders of each of the 5 cases where the replies differ; the same words both ways
    # are a tie, asked of no judge.
    assert len(judged) == 10
    orders = {_replies(r.user_text) for r in judged}
    assert ("say 1", "wrong") in orders and ("wrong", "say 1") in orders
    assert not any("say 2" in order for order in orders)
    assert f"pairwise judge {JUDGE}: challenger win rate 0.000" in text
    assert "0 won, 5 lost, 5 tied (5 with the same reply) of 10 case(s)" in text
    xml = JUnitXml.fromfile(str(pytester.path / "out.xml"))
    gate = {case.name: case for suite in xml for case in suite}["challenger"]
    props = {p.name: p.value for p in gate.child(Properties)}
    assert props["verdryx.pairwise_win_rate"] == "0"
    low, high = float(props["verdryx.pairwise_ci_low"]), float(props["verdryx.pairwise_ci_high"])
    assert low == 0.0 and 0.4 < high < 0.6  # Wilson at 0 of 5
    page = (pytester.path / "report.html").read_text()
    assert "<th>pairwise</th>" in page
    assert page.count('<span class="loss">loss</span> 0.00') == 5
    assert page.count('<span class="tie">tie</span> 0.50') == 5


@pytest.mark.usefixtures("anthropic_env")
def test_a_judge_that_always_prefers_the_first_reply_decides_nothing(
    pytester: pytest.Pytester, server: FakeAnthropic
) -> None:
    server.responder = _first_judge
    _setup(pytester, n=6)
    result = _run(pytester, "worse", f"--verdryx-pairwise-judge={JUDGE}")
    text = result.stdout.str()
    # Position bias cancels: every case is a tie, and the summary says why.
    assert "challenger win rate n/a (no case decided): 0 won, 0 lost, 6 tied" in text
    # 3 cases differ (the odd ones): the judge favoured reply A in both orders of each.
    assert "(3 with the same reply)" in text
    assert "the judge preferred a position, not a reply, on 3" in text


def test_a_pairwise_judge_without_a_challenger_is_a_usage_error(
    pytester: pytest.Pytester,
) -> None:
    _setup(pytester, n=2)
    result = pytester.runpytest(
        "--verdryx-target=agents:champion", f"--verdryx-pairwise-judge={JUDGE}"
    )
    assert result.ret == 4
    assert "pass --verdryx-challenger=module:callable too" in result.stderr.str()


def test_the_challenger_is_cached_only_under_its_own_version(pytester: pytest.Pytester) -> None:
    _setup(pytester, n=3)
    for _ in range(2):
        result = _run(pytester, "same", "--verdryx-challenger-version=c1")
        assert result.ret == 0, result.stdout.str()
    calls = _calls(pytester)
    # The target has no declared version: called every run; the challenger once.
    assert sum(1 for c in calls if c[0] == "champion") == 6
    assert sum(1 for c in calls if c[0] == "challenger") == 3
