"""0.4.0's module path ``mnesis.models.snapshot``: what :meth:`MnesisSession.history`
returns, re-exported from :mod:`mnesis.models.message` (where the results live)."""

from mnesis.models.message import ContextBreakdown, TurnSnapshot

__all__ = ["ContextBreakdown", "TurnSnapshot"]
