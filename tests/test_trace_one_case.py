"""How far one offline `exact` case travels: the product files a profiler sees it pass
through, from its item's setup to its outcome, and from collecting its file to its outcome
(docs/architecture.md, "The walk of one case"). A bound that fails when the walk grows: each
file more is one more room a reader must visit to follow a case."""

from __future__ import annotations

import json
import re

import pytest

TRACER = """
import sys, threading
import pytest

_STATE = {"files": [], "on": False}

def _profile(frame, event, arg):
    if event != "call":
        return
    name = frame.f_code.co_filename.replace("\\\\", "/")
    if "/verdryx_core/" in name or "/pytest_verdryx/" in name:
        files = _STATE["files"]
        if not files or files[-1] != name:
            files.append(name)

def _start():
    if not _STATE["on"]:
        _STATE["on"] = True
        sys.setprofile(_profile)
        threading.setprofile(_profile)

FROM = "{start}"

def pytest_collectstart(collector):
    if FROM == "collection" and collector.nodeid.endswith(".evalset.json"):
        _start()

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if FROM == "setup":
        _start()

def _stop():
    sys.setprofile(None)
    threading.setprofile(None)
    _STATE["on"] = False
    files = _STATE["files"]
    print()
    print("TRACE", len(set(files)), len(files) - 1)
    for name in sorted(set(files)):
        print("FILE", name)

if FROM == "session":
    _start()

def pytest_runtest_logreport(report):
    if report.when == "call" and _STATE["on"] and FROM != "session":
        _stop()

@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    if _STATE["on"]:
        _stop()
"""


def _walk(pytester: pytest.Pytester, start: str) -> tuple[list[str], int]:
    pytester.makeconftest(TRACER.replace("{start}", start))
    evalset = {"id": "one", "cases": [{"id": "c", "prompt": "p", "expected": "y", "output": "y"}]}
    (pytester.path / "one.evalset.json").write_text(json.dumps(evalset))
    result = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider", "--no-verdryx-store")
    assert result.ret == 0, result.stdout.str()
    text = result.stdout.str()
    found = re.search(r"^TRACE (\d+) (\d+)$", text, re.M)
    assert found is not None, text
    files = re.findall(r"^FILE (.+)$", text, re.M)
    assert len(files) == int(found.group(1))
    return files, int(found.group(2))


def _short(files: list[str]) -> list[str]:
    return [re.sub(r".*/(verdryx_core|pytest_verdryx)/", r"\1/", name) for name in files]


def test_from_setup_to_outcome_a_case_visits_few_files(pytester: pytest.Pytester) -> None:
    files, switches = _walk(pytester, "setup")
    shown = _short(files)
    # The item, its scoring and the session's hooks; the core's scorer, source, grader and
    # the case and score values. Nothing of the store, the gate or the add-ons.
    assert len(shown) <= 9, shown
    assert switches <= 25, (switches, shown)
    assert not any("/addons/" in name or "/store/" in name for name in shown), shown
    assert "verdryx_core/graders/exact.py" in shown


def test_from_collection_to_outcome(pytester: pytest.Pytester) -> None:
    files, _ = _walk(pytester, "collection")
    shown = _short(files)
    # The case's load rules are its grader's (`check_case`, graders/case_rules.py), so the
    # walk passes through them too.
    assert len(shown) <= 30, shown
    # An exact case never builds the graders it does not use.
    assert not any(name.endswith(("regex.py", "outcome_tag.py", "checks.py")) for name in shown)
    assert not any("/addons/" in name for name in shown), shown


def test_a_whole_session_of_one_case(pytester: pytest.Pytester) -> None:
    # From the conftest's import (before the plugin configures) to the session's unconfigure:
    # options, collection, the case, the run's conclusion and the summary. Storing is off, so
    # the store is not walked; the conclusion is, as in every session.
    files, _ = _walk(pytester, "session")
    shown = _short(files)
    # A ceiling at today's walk (79 files): the session imports the rooms its run uses. The
    # plugin imports what only some sessions use (a shard's, xdist's calls ahead) in the
    # hooks that use it, and the core's packages name their exports on first use
    # (verdryx_core/lazy_names.py): a recorded `exact` case imports no other grader, no
    # model adapter, no target and no store backend.
    assert len(shown) <= 79, shown
    assert not any(
        name.endswith(("/shard.py", "/fixture.py", "/target_prefetch.py")) for name in shown
    )
    assert not any(
        name.endswith(("/regex.py", "/tool_trace.py", "/checks.py", "/execution.py"))
        or name.endswith(("/tool_trace_rules.py", "/exec_rules.py"))
        or name.endswith(("/anthropic_adapter.py", "/openai_adapter.py", "/llm/cache.py"))
        or "/targets/" in name
        or name.endswith(("/store/base.py", "/store/sqlite.py", "/store/postgres.py"))
        for name in shown
    ), shown
