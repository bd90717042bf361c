"""What one call cost: its tokens by the rate each is billed at, priced by the price book.

Providers count differently (Anthropic's input tokens leave out the cached ones, OpenAI's
prompt tokens include them); each adapter sorts its provider's counts into a `TokenUsage`, and
from there the recorded input tokens and the cost are reckoned one way for every provider.
"""

from __future__ import annotations

from dataclasses import dataclass

from verdryx_core.llm.prices import PriceBook

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
