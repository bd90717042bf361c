"""What one call cost: its tokens by the rate each is billed at, priced by the price book.

Providers count differently (Anthropic's input tokens leave out the cached ones, OpenAI's
prompt tokens include them); each adapter sorts its provider's counts into a `TokenUsage`, and
from there the recorded input tokens and the cost are reckoned one way for every provider.
"""

from __future__ import annotations

from dataclasses import dataclass

from verdryx_core.limits import token_problem
from verdryx_core.llm.prices import PriceBook
from verdryx_core.llm.wire import MalformedAnswer

__all__ = ["TokenUsage"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenUsage:
    #: Input tokens billed at the input rate.
    fresh: int
    output: int
    #: Input tokens read from the provider's prompt cache, billed at its cache-read rate.
    cache_read: int = 0
    #: Input tokens written to the provider's prompt cache, billed at its cache-write rate.
    cache_write: int = 0

    def __post_init__(self) -> None:
        # The adapters read each count through `wire.token_count`, which words the problem
        # as a malformed answer; this holds every other maker (the stub, a test, an SDK
        # object read by attribute) to the same bound, so `input_tokens` and `cost` stay
        # within docs/store.md's maxima whoever built the usage.
        for name in ("fresh", "output", "cache_read", "cache_write"):
            problem = token_problem(getattr(self, name))
            if problem is not None:
                raise MalformedAnswer(f"usage.{name}: {problem}")

    @property
    def input_tokens(self) -> int:
        """Every input token, whatever its rate: what the call records as its input."""
        return self.fresh + self.cache_read + self.cache_write

    def cost(self, prices: PriceBook, model: str, *, factor: float = 1.0) -> float:
        """Dollars, at `model`'s price times `factor` (a Message Batch is billed at half)."""
        cost = prices.cost(
            model,
            self.fresh,
            self.output,
            cache_read_tokens=self.cache_read,
            cache_write_tokens=self.cache_write,
        )
        return cost * factor
