"""Text normalisation shared by the text graders (`exact`, `contains`, `icontains`, `f1`).

The options apply in one fixed order, to the output and the expectation alike: NFKC, then
case folding, then punctuation removal, then whitespace collapsing.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["TEXT_OPTIONS", "normalize", "squad_tokens"]

TEXT_OPTIONS: Final = (
    "ignore_case",
    "normalize_whitespace",
    "ignore_punctuation",
    "unicode_normalize",
)

_SPACES: Final = re.compile(r"\s+")
_ARTICLES: Final = re.compile(r"\b(a|an|the)\b")
_ASCII_PUNCTUATION: Final = frozenset(string.punctuation)


def _drop_punctuation(text: str) -> str:
    # Unicode punctuation (categories P*), so a curly quote counts as an ASCII one does.
    return "".join(ch for ch in text if not unicodedata.category(ch).startswith("P"))


def normalize(text: str, options: Mapping[str, Any]) -> str:
    if options.get("unicode_normalize"):
        text = unicodedata.normalize("NFKC", text)
    if options.get("ignore_case"):
        text = text.casefold()
    if options.get("ignore_punctuation"):
        text = _drop_punctuation(text)
    if options.get("normalize_whitespace"):
        text = _SPACES.sub(" ", text).strip()
    return text


def squad_tokens(text: str) -> list[str]:
    """SQuAD's answer normalisation: lower case, ASCII punctuation and the articles a/an/the
    removed, whitespace split."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _ASCII_PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return text.split()
