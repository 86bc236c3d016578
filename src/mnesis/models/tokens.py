"""Token accounting value objects."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["TokenUsage"]


class TokenUsage(BaseModel):
    """Token counts of one model call or of a whole session (supports ``+``)."""

    model_config = ConfigDict(frozen=True)

    input: int = Field(default=0, ge=0)
    output: int = Field(default=0, ge=0)
    cache_read: int = Field(default=0, ge=0)
    cache_write: int = Field(default=0, ge=0)
    total: int = Field(default=0, ge=0)

    def effective_total(self) -> int:
        """Return ``total`` when set, else the sum of all counters."""
        return self.total or (self.input + self.output + self.cache_read + self.cache_write)

    def __add__(self, other: object) -> TokenUsage:
        if not isinstance(other, TokenUsage):
            return NotImplemented
        return TokenUsage(
            input=self.input + other.input,
            output=self.output + other.output,
            cache_read=self.cache_read + other.cache_read,
            cache_write=self.cache_write + other.cache_write,
            total=self.effective_total() + other.effective_total(),
        )
