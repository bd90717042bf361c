"""The text rule: what verdryx does with strings that are not valid Unicode or not printable.

JSON can spell a lone UTF-16 surrogate (`"\\ud800"`), and an agent or a provider can hand back
one; such a string cannot be encoded as UTF-8, so SQLite, a terminal, JUnit XML and JSON output
would each fail on it in their own way. And any text that came from an agent, a file or a
server may try to act on whatever shows it: an escape sequence rewrites a terminal, a bidi
override reorders what a reader sees, and a CI log runs the line `::error ...` (or
`::add-mask::`, `::stop-commands::`) as a workflow command. The rule (see
docs/troubleshooting.md, "Reliability"):

- a file verdryx reads (an eval set, a baseline file) that holds one is rejected at load, with
  one line naming the file, the case and the field (`first_invalid_text`);
- text produced while running (an output, a judge's reason) keeps every valid character and
  has each lone surrogate replaced by U+FFFD (`clean_text`), so the run is stored, not lost;
- text shown to a person or a CI log goes through `printable`, once, where it enters the
  view (a failure report, a summary line, a CLI table, an annotation):
  - every control, format, line or paragraph separator character (Unicode categories Cc, Cf,
    Zl, Zp: NUL, ESC, the C1 controls, CR, U+2028, bidi overrides and isolates, zero-width
    characters, the byte order mark) is shown as an escape (`\\x1b`, `\\u202e`); newline and
    tab are kept when the view is multi-line;
  - no line can be read as a CI command: a line whose first visible character is `:` has it
    written `\\x3a` (GitHub Actions trims leading whitespace before it looks for `::`, so
    indenting alone does not defuse a command), and the `#` of every `##[` (the Actions
    runner's old form, found anywhere in a line), `##vso[` (Azure Pipelines) or `##teamcity[`
    is written `\\x23`;
- ids are refused at load when they hold such a character (`first_hidden_character`): an id
  is shown in every listing and cannot be escaped in all of them.

Escaping is idempotent: text already made printable comes back unchanged, so a view that
applies the rule to text another view already treated changes nothing.
"""

from __future__ import annotations

import io
import json
import re
import unicodedata
from collections.abc import Iterator
from typing import Any, Final, TextIO

__all__ = [
    "HIDDEN_CATEGORIES",
    "REPLACEMENT",
    "PrintableStream",
    "clean_text",
    "clean_value",
    "first_hidden_character",
    "first_invalid_text",
    "is_valid_text",
    "json_text_may_hold_invalid",
    "labelled",
    "printable",
    "printable_json",
    "unwrapped",
]

REPLACEMENT: Final = "\ufffd"
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
#: A JSON escape of a UTF-16 surrogate (a pair or a lone one): `\\ud83d`, `\\uDC00`.
_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")

#: The Unicode categories a terminal or a log viewer acts on or hides instead of showing:
#: controls (Cc: C0, DEL, C1), format characters (Cf: bidi overrides and isolates, zero-width
#: characters, the soft hyphen, the byte order mark, tags), and the line and paragraph
#: separators (Zl, Zp) that Python's `splitlines()` and some viewers take as line breaks.
HIDDEN_CATEGORIES: Final = frozenset({"Cc", "Cf", "Zl", "Zp"})

# Characters outside those categories that have no weight in a culture-aware comparison, as
# the .NET `StartsWith`/`IndexOf` of a CI runner may make (variation selectors, the combining
# grapheme joiner, Hangul fillers, Mongolian free variation selectors): the guards below look
# through them, so `:\ufe0f:error` is defused like `::error`.
_IGNORABLE: Final = (
    "\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180d\u180f\u3164\ufe00-\ufe0f\uffa0"
    "\U000e0100-\U000e01ef"
)
# A line whose first visible character is `:` (GitHub Actions: `::command::`, after the
# runner's TrimStart of any whitespace). Group 1 is what precedes the colon on its line.
_COMMAND_LINE: Final = re.compile(rf"^((?:[^\S\n]|[{_IGNORABLE}])*):", re.MULTILINE)
# `##[`, `##vso[`, `##teamcity[`... anywhere in a line: the Actions runner's old command form
# and Azure Pipelines' logging commands are found wherever they start in the line.
_LOG_COMMAND: Final = re.compile(
    rf"#(?=[{_IGNORABLE}]*#[{_IGNORABLE}]*(?:[A-Za-z][{_IGNORABLE}]*)*\[)"
)


def is_valid_text(text: str) -> bool:
    """Whether `text` encodes as UTF-8 (it holds no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def clean_text(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD; valid text is returned as is."""
    if is_valid_text(text):
        return text
    return _SURROGATE.sub(REPLACEMENT, text)


def clean_value(value: Any) -> Any:
    """A JSON-like value with `clean_text` applied to every string in it (keys included);
    returned as is when it holds no invalid text, so the common case copies nothing."""
    if first_invalid_text(value) is None:
        return value
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_value(key): clean_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(clean_value(item) for item in value)
    return value


def printable(text: str, *, keep_newlines: bool = True) -> str:
    """`text` fit for a terminal or a CI log, by the rule in the module doc: surrogates
    replaced, control and format characters escaped (`\\x00`, `\\u202e`), and no line that a
    CI runner would take for a command.

    Newlines and tabs are kept when `keep_newlines` (a multi-line output stays readable), else
    escaped too (a one-line field such as a case id stays one line).
    """
    text = clean_text(text)
    if not text.isprintable():  # the common case, all printable, is one C-speed check
        text = text.translate(_MULTI_LINE if keep_newlines else _ONE_LINE)
    return _defused(text)


def _defused(text: str) -> str:
    """`text` (already escaped) with every CI command prefix broken by an escape."""
    if ":" in text:
        text = _COMMAND_LINE.sub(r"\1\\x3a", text)
    if "#" in text:
        text = _LOG_COMMAND.sub(r"\\x23", text)
    return text


def _escape(code: int) -> str:
    """A code point as Python writes it in a string literal: `\\x1b`, `\\u202e`, `\\U000e0001`."""
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _json_escape(code: int) -> str:
    """A code point as a JSON string escape (a surrogate pair outside the BMP)."""
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


class _Escapes(dict[int, str]):
    """A `str.translate` table that decides each code point on first sight and remembers it
    (BMP only, so the table stays small whatever text goes through it): translating is then
    a C loop over dictionary hits."""

    def __init__(self, escape: Any, preset: dict[int, str]) -> None:
        super().__init__(preset)
        self._escape = escape

    def __missing__(self, code: int) -> str:
        char = chr(code)
        shown = self._escape(code) if unicodedata.category(char) in HIDDEN_CATEGORIES else char
        if code <= 0xFFFF:
            self[code] = shown
        return shown


# Multi-line views keep the layout characters; a one-line view spells them as `\\n`, `\\r`, `\\t`.
_MULTI_LINE: Final = _Escapes(_escape, {ord("\n"): "\n", ord("\t"): "\t"})
_ONE_LINE: Final = _Escapes(_escape, {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"})
# JSON text keeps its own newlines (between values; inside a string JSON writes `\\n`).
_JSON: Final = _Escapes(_json_escape, {ord("\n"): "\n", ord("\t"): "\t"})


def printable_json(text: str) -> str:
    """JSON text (as `json.dumps(..., ensure_ascii=False)` writes it) with every character the
    rule escapes written as a JSON escape (`\\u0085`) and the `#` of a CI command prefix as
    `\\u0023`: it parses to the same value, and `printable` finds nothing left to change (an
    escape of its own, `\\x85`, would not be JSON). No JSON line can begin with `:`."""
    text = clean_text(text)
    if not text.isprintable():
        text = text.translate(_JSON)
    if "#" in text:
        text = _LOG_COMMAND.sub(r"\\u0023", text)
    return text


def first_hidden_character(text: str) -> str | None:
    """The first character of `text` that the rule would escape (a control, format, line or
    paragraph separator character), shown escaped (`'\\x1b'`); None when there is none. For
    ids, which are refused rather than escaped."""
    if text.isprintable():
        return None
    for char in text:
        if unicodedata.category(char) in HIDDEN_CATEGORIES or "\ud800" <= char <= "\udfff":
            return _escape(ord(char))
    return None


def labelled(label: str, text: str, *, indent: str = "    ") -> str:
    """`label: text`, each further line of a multi-line `text` indented under the first, so no
    line of an output or a reason passes for a line of the report around it (a forged
    `reason:` line, say). Escaping is left to `printable`, applied to the whole report."""
    first, *rest = text.split("\n")
    return "\n".join([f"{label}: {first}", *(indent + line for line in rest)])


def first_invalid_text(value: Any) -> tuple[tuple[str | int, ...], str] | None:
    """The path to the first string (a key or a value) in a JSON value that is not valid
    Unicode, and that string made printable; None when every string is valid."""
    if _all_text_valid(value):
        return None
    for path, text in _strings(value, ()):
        if not is_valid_text(text):
            return path, printable(text, keep_newlines=False)
    return None


def json_text_may_hold_invalid(text: str) -> bool:
    """Whether JSON `text` (a `str` decoded from UTF-8) can parse to a string that is not
    valid Unicode. A UTF-8 decoder refuses encoded surrogates, so only a `\\ud800`-`\\udfff`
    escape can spell one: text without such an escape needs no walk of its parsed value
    (a pass at C speed over the text, about 15x cheaper than writing the value out)."""
    return _SURROGATE_ESCAPE.search(text) is not None


def _all_text_valid(value: Any) -> bool:
    """True when every string of `value` surely encodes as UTF-8: the whole value written by
    the C encoder and encoded at once, about 20x faster than walking it string by string (a
    20,000-case file is checked on every gated run). False means "walk it to find out": an
    invalid string, or a value the encoder cannot write (too deep, not JSON)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, TypeError, ValueError, RecursionError):
        return False
    return True


def _strings(
    value: Any, path: tuple[str | int, ...]
) -> Iterator[tuple[tuple[str | int, ...], str]]:
    # Iterative: a value nested deeper than the recursion limit must not crash the check.
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            yield where, item
        elif isinstance(item, dict):
            for key, child in reversed(list(item.items())):
                if isinstance(key, str):
                    yield (*where, key), key
                stack.append((child, (*where, key)))
        elif isinstance(item, list | tuple):
            for index in range(len(item) - 1, -1, -1):
                stack.append((item[index], (*where, index)))


class PrintableStream(io.TextIOBase):
    """A text stream that writes `printable(text)` to the stream it wraps: the CLI prints
    through one, so no command can put a raw control character, a lone surrogate or a CI
    command from a stored output, a case id or a file name on the terminal or in a CI log.

    It writes whole lines: whether a line begins a CI command is known only once its start is
    seen, and `print` hands a line over in pieces. The last, unfinished line is written by
    `finish` (a CLI command's output ends with a newline, so in practice there is none)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._partial = ""

    @property
    def wrapped(self) -> TextIO:
        """The stream written to, for verdryx's own output that must stay raw (a progress
        line's carriage return, a workflow command)."""
        return self._stream

    def write(self, text: str) -> int:
        pending = self._partial + text
        cut = pending.rfind("\n") + 1
        if cut:
            self._stream.write(printable(pending[:cut]))
        self._partial = pending[cut:]
        return len(text)

    def write_command(self, line: str) -> None:
        """Write one of verdryx's own CI commands (`::error ...`) as is, on a line of its own:
        its parts were escaped by the code that built it (`reporting.ci.annotations`). An
        unfinished line is ended first: a runner reads a command only at the start of a line."""
        if self._partial:
            self.write("\n")
        self._stream.write(line + "\n")

    def finish(self) -> None:
        """Write the unfinished last line, if any, and flush."""
        if self._partial:
            self._stream.write(printable(self._partial))
            self._partial = ""
        self.flush()

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return bool(getattr(self._stream, "isatty", lambda: False)())

    def writable(self) -> bool:
        return True


def unwrapped(stream: TextIO) -> TextIO:
    """The raw stream behind a `PrintableStream` (else `stream` itself)."""
    return stream.wrapped if isinstance(stream, PrintableStream) else stream
