"""Parallel operators: ``LLMMap`` (one model call per input) and ``AgenticMap``
(one full sub-session per input), their per-run ``MapOptions``, result types and
the typed errors an item fails with (``TemplateRenderError``, ``TemplateLimitError``)."""

from mnesis.operators.agentic_map import AgenticMap
from mnesis.operators.errors import TemplateLimitError, TemplateRenderError
from mnesis.operators.llm_map import LLMMap
from mnesis.operators.options import MapOptions
from mnesis.operators.results import (
    AgentMapBatch,
    AgentMapResult,
    MapBatch,
    MapFileSummary,
    MapResult,
)

__all__ = [
    "AgentMapBatch",
    "AgentMapResult",
    "AgenticMap",
    "LLMMap",
    "MapBatch",
    "MapFileSummary",
    "MapOptions",
    "MapResult",
    "TemplateLimitError",
    "TemplateRenderError",
]
