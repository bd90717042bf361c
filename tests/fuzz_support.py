"""Hypothesis strategies and the one assertion the fuzz tests share: hostile input ends in a
result or one printable line, never a traceback (docs/troubleshooting.md, "Reliability").

Bounded so the fuzz tests stay a few seconds of the suite: `VERDRYX_FUZZ_EXAMPLES` raises the
example count for a long local run (`VERDRYX_FUZZ_EXAMPLES=2000 pytest tests/test_fuzz_*.py`).
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

__all__ = [
    "FUZZ",
    "arbitrary_json",
    "assert_no_ci_command",
    "assert_one_printable_line",
    "ci_hostile_text",
    "document_text",
    "evalset_documents",
    "hostile_text",
]

settings.register_profile(
    "verdryx-fuzz",
    max_examples=int(os.environ.get("VERDRYX_FUZZ_EXAMPLES", "15")),
    deadline=None,
    # Fixtures here (tmp_path, a fake server) are safe to share between examples: each example
    # writes its own file name, and the server is stateless between scripted replies.
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)
FUZZ = settings.get_profile("verdryx-fuzz")

#: Strings a red team reaches for: lone surrogates (a JSON `\ud800` escape), NUL and terminal
#: escapes, bidi overrides, huge strings, a byte order mark, path and regex metacharacters.
NASTY = (
    "\ud800",
    "\udfff",
    "a\ud83d",
    "\x00",
    "nul\x00inside",
    "\x1b[2J\x1b[31mred",
    "\r\noverwrite",
    "\u202eevil",
    "\ufeff",
    "x" * 20_000,
    "../../etc/passwd",
    "(a+)+$",
    "[",
    "::",
    "",
    " ",
    "é" * 100,
)

hostile_text = st.one_of(
    st.sampled_from(NASTY),
    st.text(max_size=30),
    # st.text never makes a lone surrogate; a JSON escape in a file or an agent can.
    st.builds(
        lambda head, surrogate, tail: head + surrogate + tail,
        st.text(max_size=5),
        st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
        st.text(max_size=5),
    ),
    st.text(st.characters(max_codepoint=0x9F), max_size=10),  # control characters
)

_numbers = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30),
    st.sampled_from([0, 1, -1, 10**40, 0.5, 1.5, -0.0, 1e308]),
    st.floats(allow_nan=True, allow_infinity=True),
)
_scalars = st.one_of(st.none(), st.booleans(), _numbers, hostile_text)

arbitrary_json = st.recursive(
    _scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(hostile_text, children, max_size=4),
    ),
    max_leaves=12,
)


def _field(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly a plausible value, sometimes anything at all."""
    return st.one_of(good, good, arbitrary_json)


_case = st.fixed_dictionaries(
    {"id": _field(st.sampled_from(["c1", "c2", "refund"]) | hostile_text)},
    optional={
        "prompt": _field(hostile_text),
        "grader": _field(
            st.sampled_from(["exact", "regex", "outcome_tag", "llm_judge", "tool_trace", "x"])
        ),
        "expected": _field(hostile_text),
        "output": _field(hostile_text | st.lists(hostile_text, max_size=3)),
        "rubric": _field(hostile_text),
        "min_score": _field(_numbers),
        "tags": _field(st.lists(hostile_text, max_size=3)),
        "tools": _field(st.just([{"name": "lookup", "input_schema": {"type": "object"}}])),
        "expected_tools": _field(st.lists(hostile_text, max_size=3)),
    },
)

evalset_documents = st.fixed_dictionaries(
    {"id": _field(st.just("fuzz") | hostile_text), "cases": _field(st.lists(_case, max_size=4))},
    optional={"description": hostile_text, "extra": arbitrary_json},
)


def document_text(value: Any, *, deep: int = 0) -> str:
    """`value` as a file would hold it: JSON (NaN spelled out, surrogates as escapes),
    optionally wrapped in `deep` levels of arrays."""
    try:
        text = json.dumps(value)
    except ValueError:  # an integer too long for str(): write it out another way
        text = json.dumps(str(value))
    return "[" * deep + text + "]" * deep


def assert_one_printable_line(message: str) -> None:
    """What a user sees of an error: one line, no traceback, nothing a terminal would act on."""
    assert message.strip(), "an empty error message"
    assert "\n" not in message.strip(), f"more than one line: {message[:500]!r}"
    assert "Traceback" not in message
    message = message.strip()
    message.encode("utf-8")  # no lone surrogate
    assert not any(ord(char) < 32 and char not in "\t" for char in message), repr(message[:300])


# -- text aimed at a terminal or a CI log ----------------------------------------------------

#: What starts or hides a CI command: GitHub's `::` after any line break Python or a viewer
#: knows (and after leading whitespace, which the runner trims), the runner's old `##[` form,
#: Azure's `##vso[`, terminal sequences and bidi controls.
CI_PIECES = (
    "\n::",
    "\r\n::",
    "\r::",
    "\u2028::",
    "\u2029::",
    "\x85::",
    "\x0b::",
    "\x0c::",
    "\x1d::",
    "\n \t\u3000::",
    "\n\ufe0f::",
    "\n:\ufe0f:",
    "::",
    "debug::",
    "group::",
    "endgroup::",
    "add-mask::",
    "stop-commands::",
    "set-output name=o::",
    "notice file=a.py,line=1,title=t::",
    "##[",
    "##[section]",
    "##vso[task.complete result=Failed]",
    "#\ufe0f#[",
    "\x1b[2K",
    "\x1b]0;title\x07",
    "\x1bP",
    "\x9b1m",
    "\u202e",
    "\u2068",
    "\u200d",
    "\ufeff",
    "\U000e0021",
)

ci_hostile_text = st.lists(
    st.one_of(
        st.sampled_from(CI_PIECES),
        # Every control, format and separator character, and the ignorable marks around them.
        st.characters(categories=["Cc", "Cf", "Zl", "Zp", "Zs", "Mn"]),
        st.text(st.characters(codec="utf-8"), max_size=6),
    ),
    min_size=1,
    max_size=10,
).map("".join)

#: verdryx's own annotations: a case's (`title=verdryx: KEY failed`) or the gate's.
OWN_ANNOTATION = re.compile(
    r"::error (?:file=[^,:]*,)?(?:line=\d+,)?title=verdryx(?: gate)?%3A [^,:]*::[^\r\n]*"
)
_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp"})
_IGNORABLE = re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0]")


def assert_no_ci_command(text: str, *, where: str = "stdout") -> list[str]:
    """No raw control or format character (newline and tab aside) in `text`, and no line a CI
    runner would run, except verdryx's own annotations, which are returned. Lines are split on
    "\\n" alone, as a runner splits them: any other separator must not be there at all."""
    own: list[str] = []
    for line in text.split("\n"):
        hidden = [char for char in line if unicodedata.category(char) in _HIDDEN and char != "\t"]
        assert not hidden, f"{where}: raw {hidden!r} in {line[:300]!r}"
        visible = _IGNORABLE.sub("", line).lstrip()
        if visible.startswith("::"):
            assert OWN_ANNOTATION.fullmatch(line), f"{where}: a forged CI command: {line[:300]!r}"
            own.append(line)
        assert not re.search(r"##[a-z]*\[", _IGNORABLE.sub("", line), re.IGNORECASE), (
            f"{where}: a forged log command: {line[:300]!r}"
        )
    return own
