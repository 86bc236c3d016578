"""Token accounting value objects."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from mnesis.models.checked import CheckedModel
from mnesis.models.limits import INT64_MAX, saturating_add

__all__ = ["TokenUsage"]


class TokenUsage(CheckedModel):
    """Token counts of one model call or of a whole session (supports ``+``).

    Each counter is a 64-bit integer (what the store can hold); ``+`` saturates at the
    largest one instead of overflowing.
    """

    model_config = ConfigDict(frozen=True)

    input: int = Field(default=0, ge=0, le=INT64_MAX)
    output: int = Field(default=0, ge=0, le=INT64_MAX)
    cache_read: int = Field(default=0, ge=0, le=INT64_MAX)
    cache_write: int = Field(default=0, ge=0, le=INT64_MAX)
    total: int = Field(default=0, ge=0, le=INT64_MAX)

    def effective_total(self) -> int:
        """Return ``total`` when set, else the sum of all counters."""
        return self.total or min(
            self.input + self.output + self.cache_read + self.cache_write, INT64_MAX
        )

    def __add__(self, other: object) -> TokenUsage:
        if not isinstance(other, TokenUsage):
            return NotImplemented
        return TokenUsage(
            input=saturating_add(self.input, other.input),
            output=saturating_add(self.output, other.output),
            cache_read=saturating_add(self.cache_read, other.cache_read),
            cache_write=saturating_add(self.cache_write, other.cache_write),
            total=saturating_add(self.effective_total(), other.effective_total()),
        )
