"""An option's number, read by one rule in both faces: a finite float within the option's
range (docs/options.md, "Numbers").

`float("nan")` compares false with every bound, so a range check alone lets `nan` through
(a coverage floor of `nan` is no floor at all), and `inf` passes every minimum. Every float
option of the pytest plugin (flag or ini key) and of the `verdryx` command line is read here,
at start, before any call is made.
"""

from __future__ import annotations

import math

__all__ = ["option_float"]


def option_float(
    raw: object, *, minimum: float | None = None, maximum: float | None = None
) -> float:
    """`raw` (the option's text, or a number) as a finite float within [minimum, maximum];
    ValueError with the problem in words (the caller names the option)."""
    text = str(raw).strip()
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not a finite number")
    if minimum is not None and value < minimum:
        raise ValueError(f"{text} is below the minimum {minimum:g}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{text} is above the maximum {maximum:g}")
    return value
