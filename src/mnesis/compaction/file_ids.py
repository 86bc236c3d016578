"""File IDs in summaries: extraction and the bounded ``[LCM File IDs: ...]`` footer.

The footer lists at most ``cap`` IDs (the most recent ones) and says how many
more there are; the complete list stays in the summary row and stays reachable
through lineage, so a session that touched thousands of files cannot produce a
footer larger than its summary target.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from mnesis.models.message import MessageWithParts
from mnesis.models.parts import FileRefPart
from mnesis.tokens.estimator import TokenEstimator

__all__ = [
    "FILE_ID_RE",
    "append_file_ids_footer",
    "extract_file_ids",
    "extract_file_ids_from_messages",
    "file_ids_footer",
]

FILE_ID_RE = re.compile(r"\bfile_(?:[0-9A-HJKMNP-TV-Z]{26}|[0-9a-f]{8,64})\b")
_FOOTER_RE = re.compile(r"\n*\[LCM File IDs:[^\]]*\]\s*$")


def extract_file_ids(text: str) -> list[str]:
    """File IDs mentioned in ``text``, first occurrence order, without duplicates."""
    return list(dict.fromkeys(FILE_ID_RE.findall(text)))


def extract_file_ids_from_messages(messages: Iterable[MessageWithParts]) -> list[str]:
    """File IDs of file-reference parts and of any text, tool input or output."""
    found: dict[str, None] = {}
    for message in messages:
        for part in message.parts:
            if isinstance(part, FileRefPart) and part.file_id:
                found.setdefault(part.file_id, None)
            text = _part_text(part)
            if text and "file_" in text:
                for fid in FILE_ID_RE.findall(text):
                    found.setdefault(fid, None)
    return list(found)


def _part_text(part: object) -> str:
    pieces = []
    for attr in ("text", "output", "error_message", "exploration_summary", "path"):
        value = getattr(part, attr, None)
        if isinstance(value, str):
            pieces.append(value)
    value = getattr(part, "input", None)
    if isinstance(value, dict):
        pieces.append(str(value))
    return "\n".join(pieces)


def strip_footer(text: str) -> str:
    """Remove a trailing footer (so merging summaries does not repeat it)."""
    return _FOOTER_RE.sub("", text)


def file_ids_footer(
    file_ids: list[str],
    *,
    cap: int,
    max_tokens: int,
    estimator: TokenEstimator,
    summary_id: str | None = None,
) -> str:
    """The footer for ``file_ids`` (most recent last), bounded by ``cap`` and ``max_tokens``."""
    if not file_ids:
        return ""
    shown = file_ids[-cap:]
    while True:
        hidden = len(file_ids) - len(shown)
        more = ""
        if hidden:
            where = f"lcm_describe('{summary_id}')" if summary_id else "the summary lineage"
            more = f" (+{hidden} earlier IDs via {where})"
        footer = f"[LCM File IDs: {', '.join(shown)}{more}]"
        if len(shown) <= 1 or estimator.estimate(footer) <= max_tokens:
            return footer
        shown = shown[len(shown) // 2 :]


def append_file_ids_footer(text: str, file_ids: list[str], *, cap: int = 40) -> str:
    """``text`` followed by the ``[LCM File IDs: ...]`` footer of ``file_ids`` (the seeds' call).

    An existing footer at the end of ``text`` is replaced, not repeated; no IDs leave
    the text without a footer. At most ``cap`` IDs (the most recent) are listed.
    """
    body = strip_footer(text).rstrip()
    if not file_ids:
        return body
    ids = list(dict.fromkeys(file_ids))
    shown = ids[-cap:]
    hidden = len(ids) - len(shown)
    more = f" (+{hidden} earlier IDs via the summary lineage)" if hidden else ""
    footer = f"[LCM File IDs: {', '.join(shown)}{more}]"
    return f"{body}\n\n{footer}" if body else footer
