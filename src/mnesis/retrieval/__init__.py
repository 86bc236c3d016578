"""Retrieval: describe, grep and expand whatever compaction took out of the context."""

from mnesis.retrieval import results
from mnesis.retrieval.engine import RetrievalEngine
from mnesis.retrieval.query import ParsedQuery, parse_query
from mnesis.retrieval.results import *  # noqa: F403  (the typed results, as listed there)

__all__ = ["ParsedQuery", "RetrievalEngine", "parse_query"]
__all__ += results.__all__
