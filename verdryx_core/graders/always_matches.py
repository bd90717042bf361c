"""Whether a regex matches every output, so a case holding it could never fail: decided by
proof (`matches_anything`), checked against varied outputs, never guessed from samples."""

from __future__ import annotations

import random
import re
import string
from typing import Any, Final

__all__ = ["matches_anything"]

#: Outputs unlike one another: every printable ASCII character, lines, other scripts, digits,
#: and random text (seeded: the same probes every run).
_PROBES: Final = (
    "",
    "x",
    "\n\n",
    string.printable,
    "\u00e9\u6f22\u0416\n second line \U0001f600",
    "0123456789" * 4,
    *(
        "".join(random.Random(seed).choices(string.printable + "\u00e9\u6f22\u2028", k=64))
        for seed in range(3)
    ),
)
#: The stdlib syntax (`compile_pattern` takes only what `re` reads) that looks at the text
#: around where a match starts, by what it looks at.
_BEFORE: Final = re.compile(r"\^|\(\?<[=!]")  # `^`, a lookbehind
_AFTER: Final = re.compile(r"\$|\(\?[=!]")  # `$`, a lookahead
_ATOMIC: Final = re.compile(r"\(\?>|[*+?}]\+")  # no backtracking into it


def _context_syntax(pattern: str) -> frozenset[str]:
    """What in `pattern` reads the text around a match: `before` (`^`, `\\A`, a lookbehind),
    `after` (`$`, `\\Z`, a lookahead), `boundary` (`\\b`, `\\B`: the characters on both
    sides), `atomic` (an atomic group or a possessive quantifier). Read off the text with
    escapes taken whole and character classes not told apart, so it may find more than the
    pattern has (`[$]`), never less: finding more only ever keeps a pattern."""
    plain: list[str] = []
    escaped: set[str] = set()
    chars = iter(pattern)
    for char in chars:
        if char == "\\":
            escaped.add(next(chars, ""))
            plain.append("_")
        else:
            plain.append(char)
    text = "".join(plain)
    found = set()
    if _BEFORE.search(text) or "A" in escaped:
        found.add("before")
    if _AFTER.search(text) or "Z" in escaped:
        found.add("after")
    if escaped & {"b", "B"}:
        found.add("boundary")
    if _ATOMIC.search(text):
        found.add("atomic")
    return frozenset(found)


def matches_anything(pattern: Any) -> bool:
    """Whether `pattern` finds a match in every output, so its case can never fail. Decided by
    proof, never guessed from samples (`^(?!.*secret)` matches every probe, and a case may
    rightly require it): the pattern matches the empty output, and

    - nothing in it reads the text before where a match starts (`^`, a lookbehind, `\\b`):
      then it matches at the end of every output, where it sees what it saw in the empty
      one (`.*`, `x*`, `(?:)`, `$|x`, `(?=)`, `(?=.*)`, `(?!x)`); or
    - nothing in it reads the text after (`$`, a lookahead, `\\b`) nor stops backtracking:
      then it matches at the start of every output, as in the empty one (`^`, `^.*`); or
    - what it reads around the start is only `\\b` / `\\B` besides `^` and lookbehinds:
      then what it sees there is whether the output starts with a word character, a
      non-word character or nothing, and it matches emptily there in all three (`\\b|\\B`).

    Each proof is checked against the probes too (the empty output, varied and random text):
    a pattern that misses one is kept, whatever its syntax looked like."""
    syntax = _context_syntax(pattern.pattern)
    try:
        if pattern.match("", timeout=1.0) is None:
            return False
        at_end = not syntax & {"before", "boundary"}
        at_start = not syntax & {"after", "boundary", "atomic"}
        at_boundary = "boundary" in syntax and not syntax & {"after", "atomic"}
        if at_boundary:
            at_boundary = all(
                (found := pattern.match(start, timeout=1.0)) is not None and found.end() == 0
                for start in ("a", "-")
            )
        if not (at_end or at_start or at_boundary):
            return False
        return all(pattern.search(probe, timeout=1.0) is not None for probe in _PROBES)
    except TimeoutError:
        return False
