"""What the map operators return: one result per input, and batches of them.

Every result carries the ``index`` of its input (its position in ``inputs``, or
its line number in file mode) and the ``input`` itself, because results stream
back in completion order, not input order.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from mnesis.models.tokens import TokenUsage

__all__ = ["AgentMapBatch", "AgentMapResult", "MapBatch", "MapFileSummary", "MapResult"]


class MapResult(BaseModel):
    """The outcome of one input of :class:`~mnesis.operators.LLMMap`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: int
    input: Any
    success: bool
    output: Any = None
    """The validated output: an instance of the pydantic model given as
    ``output_schema``, the parsed JSON for a JSON-schema dict, else the reply text."""
    error: str | None = None
    """Why the item failed (the last error), ``None`` on success."""
    error_type: str | None = None
    """The class name of that error (``TemplateRenderError``, ``TemplateLimitError``,
    ``LLMError``, ``LLMTimeoutError``, ``InvalidOutput``, …), ``None`` on success."""
    attempts: int = 0
    """Model calls made for this item (retries included)."""
    token_usage: TokenUsage = Field(default_factory=TokenUsage)


class MapFileSummary(BaseModel):
    """Counts of an :meth:`~mnesis.operators.LLMMap.run_jsonl` run (results are in the file)."""

    run_id: str
    output_path: str
    total: int
    completed: int
    failed: int
    elapsed_ms: int


class AgentMapResult(BaseModel):
    """The outcome of one input of :class:`~mnesis.operators.AgenticMap`.

    The parent sees only the sub-agent's final text; its whole conversation stays
    in the sub-session ``session_id`` for audit.
    """

    run_id: str
    index: int
    input: Any
    success: bool
    output_text: str = ""
    """The sub-agent's final reply; empty when the item failed."""
    session_id: str | None = None
    """The sub-session of the attempt that produced this result."""
    error: str | None = None
    """Why the item failed, as ``"<error class>: <message>"``; ``None`` on success."""
    error_type: str | None = None
    """The class name of that error (``TemplateRenderError``, ``LLMError``, …)."""
    attempts: int = 0
    """Sub-sessions started for this item, including ones a crashed process left."""
    turns: int = 0
    """User turns sent to the sub-session of the last attempt."""
    finish_reason: str = "stop"
    """``stop``, ``max_turns`` (the turn limit ended the loop), ``doom_loop`` or ``error``."""
    token_usage: TokenUsage = Field(default_factory=TokenUsage)
    resumed: bool = False
    """True when the result was finished by an earlier run with the same ``run_id``
    and read back from the store rather than computed now."""


R = TypeVar("R", bound=MapResult | AgentMapResult)


class _Batch(BaseModel, Generic[R]):
    """Every result of one run, sorted by ``index``, and its counts."""

    run_id: str
    results: list[R]
    completed: int
    failed: int
    elapsed_ms: int

    @property
    def total(self) -> int:
        """Number of inputs."""
        return len(self.results)

    @property
    def failures(self) -> list[R]:
        """The failed results."""
        return [r for r in self.results if not r.success]


class MapBatch(_Batch[MapResult]):
    """Every result of an :class:`~mnesis.operators.LLMMap` run, sorted by ``index``."""

    @property
    def outputs(self) -> list[Any]:
        """The output of each input in input order (``None`` for failed items)."""
        return [r.output if r.success else None for r in self.results]


class AgentMapBatch(_Batch[AgentMapResult]):
    """Every result of an :class:`~mnesis.operators.AgenticMap` run, sorted by ``index``."""

    @property
    def outputs(self) -> list[str | None]:
        """The final text of each input in input order (``None`` for failed items)."""
        return [r.output_text if r.success else None for r in self.results]
