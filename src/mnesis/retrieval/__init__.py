"""Retrieval: describe, grep and expand whatever compaction took out of the context."""

from mnesis.retrieval.engine import RetrievalEngine
from mnesis.retrieval.query import ParsedQuery, parse_query
from mnesis.retrieval.results import (
    DescribeResult,
    ExpandedMessage,
    ExpandedSummary,
    ExpandQueryResult,
    ExpandResult,
    FileDescription,
    GrepMatch,
    GrepResult,
    MessageDescription,
    SummaryDescription,
)

__all__ = [
    "DescribeResult",
    "ExpandQueryResult",
    "ExpandResult",
    "ExpandedMessage",
    "ExpandedSummary",
    "FileDescription",
    "GrepMatch",
    "GrepResult",
    "MessageDescription",
    "ParsedQuery",
    "RetrievalEngine",
    "SummaryDescription",
    "parse_query",
]
