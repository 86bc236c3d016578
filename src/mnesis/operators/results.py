"""What the map operators return: one result per input, and batches of them.

Every result carries the ``index`` of its input (its position in ``inputs``, or
its line number in file mode) and the ``input`` itself, because results stream
back in completion order, not input order.
"""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mnesis.models.tokens import TokenUsage

__all__ = [
    "AgentMapBatch",
    "AgentMapResult",
    "ErrorKind",
    "MapBatch",
    "MapFileSummary",
    "MapResult",
    "error_kind",
]

ErrorKind = Literal["timeout", "llm_error", "validation", "template", "input", "error"]
"""What kind of failure a failed result had (0.4.0's ``error_kind``)."""

_KINDS: dict[str, ErrorKind] = {
    "LLMTimeoutError": "timeout",
    "TimeoutError": "timeout",
    "LLMError": "llm_error",
    "LLMResponseError": "llm_error",
    "InvalidOutput": "validation",
    "TemplateRenderError": "template",
    "TemplateLimitError": "template",
    "InvalidArgumentError": "input",
}


def error_kind(error_type: str | None) -> ErrorKind | None:
    """The kind of an error class name: ``timeout``, ``llm_error`` (the model call
    failed), ``validation`` (the output did not match the schema), ``template`` (the
    template could not render the input), ``input`` (an unreadable input) or ``error``
    (anything else); ``None`` for ``None``."""
    if error_type is None:
        return None
    return _KINDS.get(error_type, "error")


class _Outcome(BaseModel):
    """``error_kind`` filled in from ``error_type`` when not given."""

    @model_validator(mode="before")
    @classmethod
    def _kind(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("error_kind") is None and data.get("error_type"):
            data = {**data, "error_kind": error_kind(data["error_type"])}
        return data


class MapResult(_Outcome):
    """The outcome of one input of :class:`~mnesis.operators.LLMMap`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: int = 0
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
    error_kind: ErrorKind | None = None
    """The kind of that error (see :func:`error_kind`); ``None`` on success."""
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


class AgentMapResult(_Outcome):
    """The outcome of one input of :class:`~mnesis.operators.AgenticMap`.

    The parent sees only the sub-agent's final text; its whole conversation stays
    in the sub-session ``session_id`` for audit.
    """

    run_id: str = ""
    index: int = 0
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
    error_kind: ErrorKind | None = None
    """The kind of that error (see :func:`error_kind`); ``None`` on success."""
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
    intermediate_outputs: list[str] = Field(default_factory=list)
    """The sub-agent's replies before its final one (the turns that asked for tools and
    had text), oldest first."""


R = TypeVar("R", bound=MapResult | AgentMapResult)


class _Batch(BaseModel, Generic[R]):
    """Every result of one run, sorted by ``index``, and its counts.

    ``successes``, ``failures`` and ``total_attempts`` (0.4.0's fields) are filled in
    from ``results``; a batch built the 0.4.0 way, from ``successes`` and ``failures``,
    gets ``results`` and the counts from them.
    """

    run_id: str = ""
    results: list[R] = Field(default_factory=list)
    completed: int = 0
    failed: int = 0
    elapsed_ms: int = 0
    successes: list[R] = Field(default_factory=list)
    """The successful results, by ``index``."""
    failures: list[R] = Field(default_factory=list)
    """The failed results, by ``index``."""
    total_attempts: int = 0
    """Attempts over every input (retries included)."""

    @model_validator(mode="before")
    @classmethod
    def _views(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if "results" not in data:
            data["results"] = [*data.get("successes", ()), *data.get("failures", ())]
        results = data["results"]
        ok = [r for r in results if _success(r)]
        bad = [r for r in results if not _success(r)]
        data.setdefault("successes", ok)
        data.setdefault("failures", bad)
        data.setdefault("completed", len(ok))
        data.setdefault("failed", len(bad))
        data.setdefault("total_attempts", sum(_attempts(r) for r in results))
        return data

    @property
    def total(self) -> int:
        """Number of inputs."""
        return len(self.results)


def _success(result: Any) -> bool:
    value = result.get("success") if isinstance(result, dict) else result.success
    return bool(value)


def _attempts(result: Any) -> int:
    value = result.get("attempts", 0) if isinstance(result, dict) else result.attempts
    return int(value)


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
