"""Fixes that slipped through earlier rounds, each with its own payloads
(docs/troubleshooting.md, "Reliability"): a PostgreSQL URL libpq cannot parse keeps its
password out of every line; a regex every output matches is refused however it is written;
a labels line with a key given twice is refused; verdryx's own encoding limit is not blamed
on the target; a trace's outcome cannot split the cost table's row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verdryx_core.cli import main
from verdryx_core.errors import EvalSetError
from verdryx_core.evalsets.load import load_evalset
from verdryx_core.graders.regex import compile_pattern
from verdryx_core.judge.calibration.labels import LabelError, read_labels
from verdryx_core.store import StoreUrl


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


# -- a PostgreSQL URL with an IPv6 host left open ------------------------------------------------

BROKEN_URLS = [
    "postgresql://u:secret-pw@[::1/db",
    "postgresql://u:secret-pw@[::1",
    "postgres://u:secret-pw@[fe80::1%eth0/db?sslmode=require",
    "postgresql://u@[::1/db?password=secret-pw&application_name=x",
    "POSTGRESQL+psycopg://u:secret-pw@[::1/db",
]


@pytest.mark.parametrize("url", BROKEN_URLS)
def test_an_unterminated_ipv6_host_is_one_line_without_the_password(
    capsys: pytest.CaptureFixture[str], url: str
) -> None:
    assert "secret-pw" in StoreUrl(url).secrets()
    assert "secret-pw" not in str(StoreUrl(url))
    for argv in (["runs"], ["show", "r1"], ["eval", "missing.evalset.json"]):
        code, out, err = _cli(capsys, *argv, "--db", url)
        assert code == 2, argv
        assert "secret-pw" not in out + err
        assert len(err.strip().splitlines()) == 1, err


def test_pytest_with_such_a_url_is_a_usage_error_without_the_password(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(
        ".evalset.json",
        s=json.dumps(
            {
                "id": "s",
                "cases": [
                    {"id": "c", "prompt": "p", "grader": "exact", "expected": "a", "output": "a"}
                ],
            }
        ),
    )
    result = pytester.runpytest(f"--verdryx-db={BROKEN_URLS[0]}")
    text = result.stdout.str() + result.stderr.str()
    assert "secret-pw" not in text and "Traceback" not in text and "INTERNALERROR" not in text
    assert result.ret in (pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.USAGE_ERROR)


# -- regex patterns every output matches ---------------------------------------------------------

ALWAYS = ["(?=)", "(?=.*)", "\\b|\\B", "x*", "^", "(?:)", "(?!never)", "(?<!x)", "(?i)(?=)|q"]
CAN_FAIL = ["^(?!.*secret)", "(?=.*\\d)", "\\b", "\\B", "(?!\\Z)", "(?<=a)", "(?>a*)\\A"]


def _evalset(tmp_path: Path, pattern: str) -> Path:
    path = tmp_path / "r.evalset.json"
    case = {"id": "c", "prompt": "p", "grader": "regex", "expected": pattern}
    path.write_text(json.dumps({"id": "r", "cases": [case]}))
    return path


@pytest.mark.parametrize("pattern", ALWAYS)
def test_a_pattern_every_output_matches_is_refused_at_load(tmp_path: Path, pattern: str) -> None:
    with pytest.raises(EvalSetError) as caught:
        load_evalset(_evalset(tmp_path, pattern))
    assert caught.value.case == "'c' (#1)" and caught.value.field == "expected"
    assert "matches every output" in str(caught.value)


@pytest.mark.parametrize("pattern", CAN_FAIL)
def test_a_lookaround_that_can_fail_still_loads(tmp_path: Path, pattern: str) -> None:
    load_evalset(_evalset(tmp_path, pattern))


_ATOMS = st.sampled_from(
    [
        "",
        "a",
        "-",
        "x*",
        "a?",
        ".",
        ".*",
        "(?s:.)*",
        "[^a]*",
        "^",
        "$",
        "\\A",
        "\\Z",
        "\\b",
        "\\B",
        "(?=a)",
        "(?!a)",
        "(?=)",
        "(?<=a)",
        "(?<!a)",
        "(?>a*)",
        "a*+",
        "(?:|a)",
    ]
)
_PATTERNS = st.recursive(
    _ATOMS,
    lambda inner: (
        st.tuples(inner, inner).map("".join)
        | st.tuples(inner, inner).map(lambda pair: f"(?:{pair[0]}|{pair[1]})")
    ),
    max_leaves=4,
)


@settings(max_examples=150, deadline=None)
@given(pattern=_PATTERNS, outputs=st.lists(st.text(alphabet="a-x\n é", max_size=6), max_size=6))
def test_a_pattern_is_refused_only_when_every_output_matches(
    tmp_path_factory: pytest.TempPathFactory, pattern: str, outputs: list[str]
) -> None:
    try:
        load_evalset(_evalset(tmp_path_factory.mktemp("p"), pattern))
    except EvalSetError as refused:
        if "not a valid regex" in str(refused):  # a quantifier after an anchor, say
            return
        assert "matches every output" in str(refused)
        compiled = compile_pattern(pattern)
        # Sound: a refused pattern really matches every output, these ones too.
        for output in ["", "a", "-", "\n", *outputs]:
            assert compiled.search(output) is not None, (pattern, output)


# -- a labels line with a key given twice --------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "key"),
    [
        (
            '{"eval_set_id": "s", "case_id": "c", "output": "o", "label": "pass", "label": "fail"}',
            "label",
        ),
        (
            '{"eval_set_id": "s", "case_id": "c", "case_id": "d", "output": "o", "label": "pass"}',
            "case_id",
        ),
    ],
)
def test_a_labels_line_with_a_key_given_twice_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, key: str
) -> None:
    labels = tmp_path / "team.labels.jsonl"
    labels.write_text(
        '{"eval_set_id": "s", "case_id": "a", "output": "o", "label": "pass"}\n' + line + "\n"
    )
    with pytest.raises(LabelError) as caught:
        read_labels([labels])
    assert str(caught.value) == (
        f"{labels}:2: not a JSON object: the key {key!r} appears twice in one object"
    )
    code, _, err = _cli(
        capsys, "judge-agreement", "--db", str(tmp_path / "v.db"), "--labels", str(labels)
    )
    assert code == 2 and f"{labels}:2: not a JSON object: the key {key!r} appears twice" in err


# -- a deeply nested state or metadata is verdryx's encoding limit, not the target's raise ------

DEEP_AGENT = """
def _deep(levels):
    value = 1
    for _ in range(levels):
        value = {"k": value}
    return value


def state(case):
    return {"output": "ok", "state": _deep(5000)}


def metadata(case):
    return {"output": "ok", "metadata": {"trace": [_deep(3000)]}}


def arguments(case):
    return {"output": "ok", "tool_calls": [{"name": "t", "arguments": {"a": _deep(2000)}}]}


def shallow(case):
    return {"output": "ok", "state": _deep(50)}
"""


@pytest.mark.parametrize(
    ("function", "field"),
    [("state", "state"), ("metadata", "metadata"), ("arguments", "tool_calls[0].arguments")],
)
def test_a_deep_result_is_verdryx_s_encoding_limit_on_that_case(
    pytester: pytest.Pytester, function: str, field: str
) -> None:
    pytester.makepyfile(deep_agent=DEEP_AGENT)
    cases = [
        {"id": "c", "prompt": "p", "grader": "exact", "expected": "ok"},
        {"id": "r", "prompt": "p", "grader": "exact", "expected": "a", "output": "a"},
    ]
    (pytester.path / "s.evalset.json").write_text(json.dumps({"id": "s", "cases": cases}))
    result = pytester.runpytest(f"--verdryx-target=deep_agent:{function}", "--no-verdryx-store")
    text = result.stdout.str()
    assert "RecursionError" not in text and "raised" not in text and "Traceback" not in text
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            f"*s.evalset.json::c: verdryx's encoding limit (not an error of target "
            f"deep_agent:{function}): {field.replace('[', '[[]')} nests * levels of lists and "
            "dicts, and verdryx "
            "encodes at most 100*"
        ]
    )


def test_verdryx_eval_says_the_same_and_keeps_the_other_cases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "deep_agent_cli.py").write_text(DEEP_AGENT)
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "s.evalset.json"
    path.write_text(
        json.dumps({"id": "s", "cases": [{"id": "c", "prompt": "p", "expected": "ok"}]})
    )
    db = str(tmp_path / "v.db")
    code, _, err = _cli(capsys, "eval", str(path), "--target", "deep_agent_cli:state", "--db", db)
    assert code == 1
    (line,) = [line for line in err.splitlines() if line.startswith("error:")]
    assert line == (
        "error: case s::c: verdryx's encoding limit (not an error of target "
        "deep_agent_cli:state): state nests 5,000 levels of lists and dicts, and verdryx "
        'encodes at most 100 (docs/targets.md, "What a target returns")'
    )
    code, _, err = _cli(capsys, "eval", str(path), "--target", "deep_agent_cli:shallow", "--db", db)
    assert code == 0, err


# -- a trace's outcome with a line break, in the cost table --------------------------------------

HOSTILE_TAGS = [
    "resolved\n::error::forged",
    "a\r\nb",
    "x\u2028::add-mask::y",
    "\x1b[2Jwiped",
    "tag\u202eevil",
]


def test_a_hostile_outcome_stays_on_its_row_of_the_cost_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = tmp_path / "runs.ndjson"
    lines = [{"outcome": tag, "cost_usd": 0.25} for tag in HOSTILE_TAGS]
    lines.append({"outcome": "case_resolved", "cost_usd": 0.5})
    records.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, out, _ = _cli(capsys, "cost-per-correct", "--input", str(records))
    assert code == 0
    rows = out.splitlines()  # as Python, a terminal and a CI log split it
    assert not [row for row in rows if row.lstrip().startswith(("::", "##["))]
    assert "\x1b" not in out and "\u202e" not in out
    body = rows[rows.index("  " + "-" * 52) - len(lines) : rows.index("  " + "-" * 52)]
    quarter, half = ["1", "$", "0.25", "$", "0.2500"], ["1", "$", "0.50", "$", "0.5000"]
    assert sorted(row.split()[-5:] for row in body) == sorted(
        [quarter] * len(HOSTILE_TAGS) + [half]
    )
    assert any(row.startswith("  resolved\\n::error::forged ") for row in body)
    code, out, _ = _cli(capsys, "cost-per-correct", "--input", str(records), "--json")
    assert code == 0  # JSON escapes them, and parses back to the tags
    assert set(json.loads(out)["outcomes"]) >= set(HOSTILE_TAGS)
