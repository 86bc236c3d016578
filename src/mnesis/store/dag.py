"""Former home of ``SummaryDAGStore``; it lives in :mod:`mnesis.store.summary_dag`
(the documented path). Re-exported here so existing imports keep working."""

from mnesis.store.summary_dag import SummaryDAGStore

__all__ = ["SummaryDAGStore"]
