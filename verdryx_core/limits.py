"""The largest token counts and dollar amounts verdryx accepts, and the checks that hold
values to them (docs/store.md, "Maxima").

A count or a cost comes from outside: a target's `usage`, a provider's answer, a price file,
a custom grader, an xdist worker, a stored row, a trace file. Python's integers never
overflow, but everything downstream does: SQLite and PostgreSQL keep a signed 64-bit
integer, pyarrow and numpy sum in int64 (silently wrapping), and `math.fsum` of two costs of
1e308 raises OverflowError. So a single value is held to a bound far above any real call at
the point it enters (one line naming where and which field), and every sum is held to what a
signed 64-bit integer keeps, checked before it is written or shown, never wrapped.

The bounds nest: a sum of the largest single values overflows a total only after billions of
them, so a real run never meets the total bounds; a hostile or broken one meets them as one
line, not a traceback.
"""

from __future__ import annotations

import math
from typing import Final

__all__ = [
    "MAX_COST_USD",
    "MAX_PRICE_PER_MTOK",
    "MAX_TOKENS",
    "MAX_TOTAL_COST_MICROUSD",
    "MAX_TOTAL_COST_USD",
    "MAX_TOTAL_TOKENS",
    "MICROUSD_PER_USD",
    "cost_problem",
    "token_problem",
]

#: One token count of one call (input, output, cache read or cache write): a billion, a
#: thousand times the largest context window there is.
MAX_TOKENS: Final = 10**9
#: What one call (or one trace record) may cost: a billion dollars. Bounded prices times
#: bounded counts stay far below it, so only a value that is plainly wrong meets it.
MAX_COST_USD: Final = 10**9
#: A price file's dollars per million tokens: ten thousand (real prices are in the tens).
MAX_PRICE_PER_MTOK: Final = 10**4
#: Any sum of token counts (a case over its samples, a run, a listing): a signed 64-bit
#: integer, what the store's INTEGER / BIGINT columns keep.
MAX_TOTAL_TOKENS: Final = 2**63 - 1
#: Any sum of costs (a case, a run, a trace): nine trillion dollars, so that the same sum
#: in micro-dollars (the trace reduction's unit) still fits a signed 64-bit integer.
MAX_TOTAL_COST_USD: Final = 9 * 10**12
MICROUSD_PER_USD: Final = 1_000_000
MAX_TOTAL_COST_MICROUSD: Final = MAX_TOTAL_COST_USD * MICROUSD_PER_USD


def token_problem(value: object, *, limit: int = MAX_TOKENS) -> str | None:
    """Why `value` is not a token count of at most `limit`, in words; None when it is one.
    A bool is not a count (True would read as 1)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{_shown(value)} is not a whole number of tokens"
    if value < 0:
        return f"{_shown(value)} is negative; a token count is 0 or more"
    if value > limit:
        return f"{_shown(value)} is more than the maximum of {limit:,} tokens (docs/store.md)"
    return None


def cost_problem(value: object, *, limit: float = MAX_COST_USD) -> str | None:
    """Why `value` is not a cost in dollars of at most `limit`; None when it is one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{_shown(value)} is not a number of dollars"
    if isinstance(value, float) and math.isnan(value):
        return "NaN is not a number of dollars"
    if value < 0:
        return f"{_shown(value)} is negative; a cost is 0 or more"
    if value > limit:  # infinity included
        return f"{_shown(value)} is more than the maximum of ${limit:,.0f} (docs/store.md)"
    return None


def _shown(value: object) -> str:
    """A value for a message, short: a 5,000-digit integer is not printed whole."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**40:
        # From the bit length: str() of an integer past 4,300 digits raises ValueError.
        digits = int(abs(value).bit_length() * math.log10(2)) + 1
        return f"{'-' if value < 0 else ''}an integer of about {digits} digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
