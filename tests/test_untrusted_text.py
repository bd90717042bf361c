"""The text rule for what reaches a terminal or a CI log (verdryx_core/untrusted/text.py):
control and format characters escaped, no line a CI runner would run as a command, and the
same text back when the rule is applied twice (docs/troubleshooting.md, "Reliability")."""

from __future__ import annotations

import io
import json
import re
import unicodedata

import pytest
from fuzz_support import FUZZ
from hypothesis import given
from hypothesis import strategies as st

from verdryx_core.reporting.ci import CaseFailure, case_annotation, github_annotations
from verdryx_core.reporting.ci.annotations import command
from verdryx_core.untrusted.text import (
    PrintableStream,
    first_hidden_character,
    labelled,
    printable,
    printable_json,
    unwrapped,
)

HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp"})


def hidden_in(text: str, *, allowed: str = "\n\t") -> list[str]:
    """The characters of `text` a terminal or log viewer would act on or hide."""
    return [c for c in text if unicodedata.category(c) in HIDDEN and c not in allowed]


def runnable_lines(text: str) -> list[str]:
    """Lines a CI runner would take for a command: GitHub's `::` after leading whitespace,
    and the `##[` / `##vso[` forms anywhere in a line (case-insensitive, as a reader may be)."""
    return [
        line
        for line in text.split("\n")
        if line.lstrip().startswith("::") or re.search(r"##[a-z]*\[", line, re.IGNORECASE)
    ]


# -- escaping --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("char", "shown"),
    [
        ("\x07", "\\x07"),  # BEL (C0)
        ("\x7f", "\\x7f"),  # DEL
        ("\x9d", "\\x9d"),  # OSC (C1): starts a hyperlink or a title sequence on some terminals
        ("\x85", "\\x85"),  # NEL: a line break to Python's splitlines()
        ("\u2029", "\\u2029"),  # PARAGRAPH SEPARATOR (Zp)
        ("\u2028", "\\u2028"),  # LINE SEPARATOR (Zl)
        ("\u2067", "\\u2067"),  # RIGHT-TO-LEFT ISOLATE
        ("\u202d", "\\u202d"),  # LEFT-TO-RIGHT OVERRIDE
        ("\u2060", "\\u2060"),  # WORD JOINER (zero width)
        ("\u00ad", "\\xad"),  # SOFT HYPHEN
        ("\U000e0062", "\\U000e0062"),  # a TAG character, invisible
    ],
)
def test_every_control_and_format_character_is_escaped(char: str, shown: str) -> None:
    assert printable(f"a{char}b") == f"a{shown}b"
    assert printable(f"a{char}b", keep_newlines=False) == f"a{shown}b"


def test_visible_text_is_kept_as_is() -> None:
    text = "naïve café ✓ 😀 日本語\u00a0nbsp a::b x: y ## heading #1 [link]"
    assert printable(text) == text
    assert printable("two\n\tlines") == "two\n\tlines"
    assert printable("two\n\tlines", keep_newlines=False) == "two\\n\\tlines"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("ok\n::notice title=t::PLANTED", "ok\n\\x3a:notice title=t::PLANTED"),
        ("::add-path::/tmp/bin", "\\x3a:add-path::/tmp/bin"),
        # The runner trims leading whitespace (any Unicode space) before it looks for `::`.
        ("a\n \t\u3000::group::hidden", "a\n \t\u3000\\x3a:group::hidden"),
        # A variation selector has no weight in a culture-aware comparison.
        ("\ufe0e::endgroup::", "\ufe0e\\x3a:endgroup::"),
        (":\ufe0f:save-state name=n::v", "\\x3a\ufe0f:save-state name=n::v"),
        # The old form and Azure's are found anywhere in a line.
        ("see ##[warning]planted", "see \\x23#[warning]planted"),
        ("x ##VSO[task.setvariable variable=v]1", "x \\x23#VSO[task.setvariable variable=v]1"),
        ("###[a]", "#\\x23#[a]"),
        ("##teamcity[buildStatus text='x']", "\\x23#teamcity[buildStatus text='x']"),
    ],
)
def test_no_line_can_begin_a_ci_command(text: str, shown: str) -> None:
    assert printable(text) == shown
    assert runnable_lines(printable(text)) == []


def test_a_separator_that_python_splits_on_is_no_line_break_once_printed() -> None:
    # U+2029 and NEL were the way around line-based escaping: after the rule they are text.
    text = "fine\u2029::set-output name=x::y\x85::warning::z"
    shown = printable(text)
    assert shown.splitlines() == [shown]
    assert runnable_lines(shown) == []


def test_first_hidden_character_names_the_first_one_escaped() -> None:
    assert first_hidden_character("plain-id_1.2 é 日本") is None
    assert first_hidden_character("a\u2066b\x00") == "\\u2066"
    assert first_hidden_character("tab\there") == "\\x09"


def test_labelled_indents_every_further_line_under_its_label() -> None:
    assert labelled("output", "one") == "output: one"
    assert labelled("reason", "a\nreason: forged\n::x") == "reason: a\n    reason: forged\n    ::x"


_pieces = st.one_of(
    st.sampled_from(
        ["\n", "\r\n", "::", ":", "#", "##[", "##vso[", "\u3000", " ", "\t", "\ufe0f", "[", "a"]
    ),
    st.characters(categories=["Cc", "Cf", "Zl", "Zp", "Zs", "Mn"]),
    st.text(max_size=4),
)
_hostile = st.lists(_pieces, max_size=12).map("".join)


@FUZZ
@given(text=_hostile, one_line=st.booleans())
def test_printed_text_is_safe_and_the_rule_is_idempotent(text: str, one_line: bool) -> None:
    shown = printable(text, keep_newlines=not one_line)
    assert hidden_in(shown, allowed="" if one_line else "\n\t") == []
    assert runnable_lines(shown) == []
    assert printable(shown, keep_newlines=not one_line) == shown
    if one_line:
        assert "\n" not in shown


@FUZZ
@given(value=st.dictionaries(_hostile, _hostile | st.lists(_hostile, max_size=3), max_size=4))
def test_printable_json_parses_back_to_the_same_value(value: dict[str, object]) -> None:
    text = printable_json(json.dumps(value, indent=2, ensure_ascii=False))
    assert json.loads(text) == value
    assert printable(text) == text  # the CLI's stream finds nothing to change
    assert hidden_in(text) == [] and runnable_lines(text) == []


# -- the CLI's stream -------------------------------------------------------------------------


def test_the_stream_defuses_a_command_written_in_pieces() -> None:
    raw = io.StringIO()
    stream = PrintableStream(raw)  # type: ignore[arg-type]
    for piece in ("  ", ":", ":warning::x", "\n", "next ##", "[y]\n", "tail \x1b[1m"):
        stream.write(piece)
    assert raw.getvalue() == "  \\x3a:warning::x\nnext \\x23#[y]\n"  # the last line is held
    stream.write_command("::error title=t::verdryx's own")
    assert raw.getvalue().endswith("tail \\x1b[1m\n::error title=t::verdryx's own\n")
    assert unwrapped(stream) is raw  # type: ignore[comparison-overlap]
    stream.write("no newline at the end")
    stream.finish()
    assert raw.getvalue().endswith("no newline at the end")


# -- annotations ------------------------------------------------------------------------------


def test_an_annotation_stays_one_line_whatever_the_message_holds() -> None:
    failure = CaseFailure(
        key="s::c1",
        file="evals/s.evalset.json",
        line=3,
        message="s::c1 scored 0.000\noutput: ok\u2028::add-mask::token\x1b]0;title\x07\u202e",
    )
    line = case_annotation(failure)
    assert line.startswith("::error file=evals/s.evalset.json,line=3,title=verdryx%3A s%3A%3Ac1")
    assert hidden_in(line, allowed="") == []
    assert line.splitlines() == [line]
    assert "\\u2028::add-mask::token\\x1b]0;title\\x07\\u202e" in line
    text = github_annotations([failure, failure], None)
    assert text.split("\n") == [line, line, ""]


def test_annotation_properties_are_escaped_after_the_text_rule() -> None:
    line = command("warning", "m", {"title": "a,b:c\u2029d%"})
    assert line == "::warning title=a%2Cb%3Ac\\u2029d%25::m"
