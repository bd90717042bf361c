"""Natural order for ids that carry numbers: `HumanEval/18` before `HumanEval/106`."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["natural_key", "score_order"]

_DIGITS: Final = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[tuple[int, int, str], ...]:
    """Runs of digits compare as numbers, the rest as text (case-folded, then as written,
    so the order is total)."""
    return tuple(
        (1, int(part), part) if part.isdigit() else (0, 0, part.casefold() + "\0" + part)
        for part in _DIGITS.split(text)
        if part
    )


def score_order(eval_set_id: str, case_id: str) -> tuple[object, ...]:
    """The key that lists cases by eval set, then case id, both in natural order."""
    return (natural_key(eval_set_id), natural_key(case_id))
