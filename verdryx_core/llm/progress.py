"""Progress of model calls in flight: one rewritten line on a terminal, sparse lines in CI logs.

A CI log keeps every line, so there a line is written only when at least ~2 s and ~10 % of the
calls have passed since the last one (or a minute with no line), plus one at the end: a
thousand calls make about ten lines, not a thousand.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Final, Protocol

__all__ = ["Progress", "TextStream", "call_words"]


class TextStream(Protocol):
    """What the progress line writes to: a text file, or a face's terminal writer."""

    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...

    def isatty(self) -> bool: ...


#: The order kinds of calls are named in: the output's source first, then the graders'.
_KIND_ORDER: Final = ("target calls", "model calls", "judge calls", "sandbox runs")


def call_words(kinds: Sequence[str]) -> str:
    """`target calls`, `target calls and sandbox runs`, `model calls, judge calls and
    sandbox runs`: what a run called, each kind once."""
    rank = {kind: index for index, kind in enumerate(_KIND_ORDER)}
    unique = sorted(dict.fromkeys(kinds), key=lambda kind: rank.get(kind, len(rank)))
    unique = unique or ["calls"]
    if len(unique) == 1:
        return unique[0]
    return f"{', '.join(unique[:-1])} and {unique[-1]}"


_TTY_INTERVAL: Final = 0.1
_LOG_INTERVAL: Final = 2.0
_LOG_STEP: Final = 0.10
_LOG_HEARTBEAT: Final = 60.0


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class Progress:
    """Counts finished calls out of `total`; `advance()` is thread-safe."""

    def __init__(
        self,
        total: int,
        *,
        stream: TextStream,
        label: str = "model calls",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = total
        self.label = label
        self.done = 0
        self._stream = stream
        # Injectable so tests can step time instead of sleeping.
        self._now = clock
        isatty = getattr(stream, "isatty", None)
        self._tty = bool(isatty and isatty())
        self._start = self._now()
        self._last_time = self._start
        self._last_done = 0
        self._width = 0
        self._closed = False
        self._lock = threading.Lock()

    def line(self) -> str:
        """`label: done/total, rate/s, ETA` as of now."""
        elapsed = self._now() - self._start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        text = f"{self.label}: {self.done}/{self.total}, {rate:.1f}/s"
        if self.done < self.total:
            eta = (self.total - self.done) / rate if rate > 0 else None
            text += f", ETA {_duration(eta)}" if eta is not None else ", ETA ?"
        else:
            text += f", done in {_duration(elapsed)}"
        return text

    def advance(self, count: int = 1) -> None:
        with self._lock:
            if self._closed:
                return
            self.done = min(self.total, self.done + count)
            now = self._now()
            since = now - self._last_time
            if self._tty:
                due = since >= _TTY_INTERVAL
            else:
                step = (self.done - self._last_done) >= max(1.0, _LOG_STEP * self.total)
                due = (since >= _LOG_INTERVAL and step) or (
                    since >= _LOG_HEARTBEAT and self.done > self._last_done
                )
            if due and self.done < self.total:
                self._write(self.line())
                self._last_time = now
                self._last_done = self.done

    def close(self) -> None:
        """Write the final line (nothing at all when there were no calls)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self.total <= 0:
                return
            self._write(self.line())
            if self._tty:
                self._stream.write("\n")
                self._stream.flush()

    def _write(self, text: str) -> None:
        if self._tty:
            # Pad over the previous, possibly longer, line instead of relying on terminal codes.
            padded = text.ljust(self._width)
            self._width = len(text)
            self._stream.write("\r" + padded)
        else:
            self._stream.write(text + "\n")
        self._stream.flush()
