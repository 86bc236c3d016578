"""Structured logs with the specification's fields, on the standard ``logging`` module.

mnesis logs under the ``mnesis`` logger. :func:`configure_logging` installs a handler
(plain text, or one JSON object per line with ``format="json"``);
:class:`CompactionLog` logs every compaction run of a session with the spec's fields::

    configure_logging(format="json")
    CompactionLog().attach(session)

A compaction line carries ``conversation_id`` and ``session_id`` (the same ID),
``compaction_id``, ``summary_id``, ``trigger_reason``, ``token_before`` and
``token_after``. Any record with these names in ``extra=`` gets them as JSON fields.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, TextIO

from mnesis.errors import InvalidArgumentError
from mnesis.events.bus import MnesisEvent
from mnesis.models.ids import new_id

if TYPE_CHECKING:
    from mnesis.session import MnesisSession

__all__ = ["SPEC_FIELDS", "CompactionLog", "JsonFormatter", "configure_logging"]

SPEC_FIELDS = (
    "conversation_id",
    "session_id",
    "compaction_id",
    "summary_id",
    "trigger_reason",
    "token_before",
    "token_after",
)
"""The structured log fields of the specification's Observability section."""

_STANDARD_ATTRIBUTES = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
    "taskName",
}

logger = logging.getLogger("mnesis.compaction.log")


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time (test runners swap it)."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        pass


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ``ts``, ``level``, ``logger``, ``message``, then the
    record's extra fields (spec fields first), and ``exc_info`` when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        extras = {k: v for k, v in record.__dict__.items() if k not in _STANDARD_ATTRIBUTES}
        for name in SPEC_FIELDS:
            if name in extras:
                data[name] = extras.pop(name)
        data.update(extras)
        if record.exc_info:
            data["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(data, ensure_ascii=False, default=str)


def configure_logging(
    *,
    format: Literal["text", "json"] = "text",
    level: int | str = logging.INFO,
    stream: TextIO | None = None,
) -> logging.Handler:
    """Send the ``mnesis`` logs to ``stream`` (default stderr) as text or JSON lines.

    Replaces the handler a previous call installed; returns the new one.
    """
    if format not in ("text", "json"):
        raise InvalidArgumentError(f"log format must be 'text' or 'json', got {format!r}")
    root = logging.getLogger("mnesis")
    for old in [h for h in root.handlers if getattr(h, "_mnesis_handler", False)]:
        root.removeHandler(old)
    handler: logging.StreamHandler = (  # type: ignore[type-arg]
        _StderrHandler() if stream is None else logging.StreamHandler(stream)
    )
    handler._mnesis_handler = True  # type: ignore[attr-defined]
    handler.setFormatter(
        JsonFormatter()
        if format == "json"
        else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    root.addHandler(handler)
    root.setLevel(level)
    return handler


class CompactionLog:
    """Logs each compaction run of the sessions it is attached to, with the spec's fields.

    The reason comes from the ``COMPACTION_TRIGGERED`` event (``soft_threshold``,
    ``hard_threshold`` or ``manual``); each run gets a fresh ``compaction_id``.
    """

    def __init__(self, log: logging.Logger | None = None) -> None:
        self.log = log or logger
        self._reasons: dict[str, str] = {}

    def attach(self, session: MnesisSession) -> None:
        """Follow ``session``'s compaction events."""
        session.subscribe(MnesisEvent.COMPACTION_TRIGGERED, self._on_triggered)
        session.subscribe(MnesisEvent.COMPACTION_COMPLETED, self._on_finished)
        session.subscribe(MnesisEvent.COMPACTION_FAILED, self._on_finished)

    def _on_triggered(self, event: MnesisEvent, payload: dict[str, Any]) -> None:
        self._reasons[str(payload.get("session_id"))] = str(payload.get("reason") or "unknown")

    def _on_finished(self, event: MnesisEvent, payload: dict[str, Any]) -> None:
        result = payload.get("result") or {}
        session_id = str(payload.get("session_id") or result.get("session_id"))
        fields = {
            "conversation_id": session_id,
            "session_id": session_id,
            "compaction_id": new_id("run"),
            "summary_id": result.get("summary_id"),
            "trigger_reason": self._reasons.pop(session_id, "unknown"),
            "token_before": int(result.get("tokens_before") or 0),
            "token_after": int(result.get("tokens_after") or 0),
        }
        if event == MnesisEvent.COMPACTION_FAILED:
            self.log.warning(
                "compaction failed: %s", payload.get("error"), extra={**fields, "event": "failed"}
            )
            return
        committed = bool(result.get("level_used"))
        self.log.info(
            "compaction %s: %d -> %d tokens",
            "committed" if committed else "found nothing to do",
            fields["token_before"],
            fields["token_after"],
            extra={**fields, "event": "committed" if committed else "noop"},
        )
