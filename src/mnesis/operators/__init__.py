"""Parallel operators: ``LLMMap`` (one model call per input) and ``AgenticMap``
(one full sub-session per input), their per-run options (``LLMMapOptions`` and
``AgenticMapOptions``, the keywords of ``run``; ``MapOptions``, LLMMap's as one object),
result types and their typed errors (``TemplateRenderError`` and ``TemplateLimitError``,
which an item fails with, and ``UnknownOptionError``, raised for a keyword that is no
option)."""

from mnesis.operators.agentic_map import AgenticMap
from mnesis.operators.agentic_plan import AgenticMapOptions
from mnesis.operators.errors import TemplateLimitError, TemplateRenderError, UnknownOptionError
from mnesis.operators.llm_map import LLMMap
from mnesis.operators.options import LLMMapOptions, MapOptions
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
    "AgenticMapOptions",
    "LLMMap",
    "LLMMapOptions",
    "MapBatch",
    "MapFileSummary",
    "MapOptions",
    "MapResult",
    "TemplateLimitError",
    "TemplateRenderError",
    "UnknownOptionError",
]
