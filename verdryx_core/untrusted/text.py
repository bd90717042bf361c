"""The text rule: what verdryx does with strings that are not valid Unicode or not printable.

JSON can spell a lone UTF-16 surrogate (`"\\ud800"`), and an agent or a provider can hand back
one; such a string cannot be encoded as UTF-8, so SQLite, a terminal, JUnit XML and JSON output
would each fail on it in their own way. The rule (see docs/troubleshooting.md):

- a file verdryx reads (an eval set, a baseline file) that holds one is rejected at load, with
  one line naming the file, the case and the field (`first_invalid_text`);
- text produced while running (an output, a judge's reason) keeps every valid character and
  has each lone surrogate replaced by U+FFFD (`clean_text`), so the run is stored, not lost;
- text shown to a person (failure reports, CLI tables) also has control characters, NUL
  included, escaped (`printable`), so a stray escape sequence cannot rewrite the terminal.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from typing import Any, Final, TextIO

__all__ = [
    "REPLACEMENT",
    "PrintableStream",
    "clean_text",
    "clean_value",
    "first_invalid_text",
    "is_valid_text",
    "printable",
]

REPLACEMENT: Final = "\ufffd"
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
# C0 and C1 controls and DEL, except tab and newline (those lay text out, they do not hide it).
_CONTROL: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


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
    """`text` fit for a terminal: surrogates replaced, control characters escaped (`\\x00`).

    Newlines and tabs are kept when `keep_newlines` (a multi-line output stays readable), else
    escaped too (a one-line field such as a case id stays one line).
    """
    text = clean_text(text)
    if not keep_newlines:
        text = text.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


def first_invalid_text(value: Any) -> tuple[tuple[str | int, ...], str] | None:
    """The path to the first string (a key or a value) in a JSON value that is not valid
    Unicode, and that string made printable; None when every string is valid."""
    for path, text in _strings(value, ()):
        if not is_valid_text(text):
            return path, printable(text, keep_newlines=False)
    return None


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
    through one, so no command can put a raw control character or a lone surrogate from a
    stored output, a case id or a file name on the terminal."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(printable(text))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return bool(getattr(self._stream, "isatty", lambda: False)())

    def writable(self) -> bool:
        return True
