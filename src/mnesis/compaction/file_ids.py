"""File IDs in summaries: extraction and the bounded ``[LCM File IDs: ...]`` footer.

The footer lists at most ``cap`` IDs (the most recent ones) and says how many
more there are; the complete list stays in the summary row and stays reachable
through lineage, so a session that touched thousands of files cannot produce a
footer larger than its summary target.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

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
__all__ += [  # 0.4.0's helpers (issue 31)
    "collect_file_id_paths_from_nodes",
    "collect_file_ids_from_nodes",
    "extract_file_id_paths",
    "extract_file_id_paths_from_messages",
    "footer_file_id_paths",
    "message_id_text",
    "most_recent_file_ids",
    "most_recent_file_ids_from_nodes",
    "strip_file_ids_footer",
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


def append_file_ids_footer(
    text: str,
    file_ids: list[str],
    paths: Mapping[str, str] | None = None,
    *,
    cap: int = 40,
) -> str:
    """``text`` followed by the ``[LCM File IDs: ...]`` footer of ``file_ids`` (the seeds' call).

    An existing footer at the end of ``text`` is replaced, not repeated; no IDs leave
    the text without a footer. At most ``cap`` IDs (the most recent) are listed, each
    as ``file_… (path)`` when ``paths`` knows its path.
    """
    body = strip_footer(text).rstrip()
    if not file_ids:
        return body
    ids = list(dict.fromkeys(file_ids))
    shown = ids[-cap:]
    hidden = len(ids) - len(shown)
    more = f" (+{hidden} earlier IDs via the summary lineage)" if hidden else ""
    known = paths or {}
    entries = [f"{fid} ({_clean_path(known[fid])})" if known.get(fid) else fid for fid in shown]
    footer = f"[LCM File IDs: {', '.join(entries)}{more}]"
    return f"{body}\n\n{footer}" if body else footer


# -- 0.4.0's helpers (issue 31) ------------------------------------------------------

_ID_PATH_RE = re.compile(FILE_ID_RE.pattern + r" \(([^()\n\]]{1,1000})\)")
_FOOTER_BODY_RE = re.compile(r"\[LCM File IDs:([^\]]*)\]\s*$")


def _clean_path(path: str) -> str:
    return re.sub(r"[()\]\n]", "_", path)[:1000]


def strip_file_ids_footer(text: str) -> str:
    """``text`` without its trailing ``[LCM File IDs: ...]`` footer (0.4.0's name)."""
    return strip_footer(text)


def extract_file_id_paths(text: str) -> dict[str, str]:
    """``{file_id: path}`` of every ``file_… (path)`` mention in ``text``."""
    found: dict[str, str] = {}
    for match in _ID_PATH_RE.finditer(text):
        found.setdefault(match.group(0).split(" ", 1)[0], match.group(1))
    return found


def footer_file_id_paths(text: str) -> dict[str, str]:
    """``{file_id: path}`` of the entries of ``text``'s trailing footer only."""
    match = _FOOTER_BODY_RE.search(text)
    return extract_file_id_paths(match.group(0)) if match else {}


def message_id_text(msg: MessageWithParts) -> str:
    """The text of ``msg`` in which file IDs are looked for (texts, tool inputs and
    outputs, file references)."""
    return "\n".join(_part_text(part) for part in msg.parts)


def extract_file_id_paths_from_messages(messages: Iterable[MessageWithParts]) -> dict[str, str]:
    """``{file_id: path}`` of the file-reference parts of ``messages`` and of every
    ``file_… (path)`` mention in them."""
    found: dict[str, str] = {}
    for message in messages:
        for part in message.parts:
            if isinstance(part, FileRefPart) and part.file_id:
                found.setdefault(part.file_id, part.path)
        for fid, path in extract_file_id_paths(message_id_text(message)).items():
            found.setdefault(fid, path)
    return found


def most_recent_file_ids(messages: Iterable[MessageWithParts]) -> list[str]:
    """The file IDs of ``messages``, each once, ordered by its last mention (the most
    recent last, as footers list them)."""
    order: dict[str, None] = {}
    for message in messages:
        for fid in extract_file_ids_from_messages([message]):
            order.pop(fid, None)
            order[fid] = None
    return list(order)


def _node_text(node: object) -> str:
    content = getattr(node, "content", "")
    return content if isinstance(content, str) else ""


def collect_file_ids_from_nodes(nodes: Iterable[object]) -> list[str]:
    """The file IDs of summary nodes (their recorded ``file_ids``, else their text),
    first occurrence order, each once."""
    found: dict[str, None] = {}
    for node in nodes:
        recorded = getattr(node, "file_ids", None)
        ids = list(recorded) if recorded else extract_file_ids(_node_text(node))
        found.update(dict.fromkeys(ids))
    return list(found)


def collect_file_id_paths_from_nodes(nodes: Iterable[object]) -> dict[str, str]:
    """``{file_id: path}`` of the ``file_… (path)`` mentions in summary nodes' text."""
    found: dict[str, str] = {}
    for node in nodes:
        for fid, path in extract_file_id_paths(_node_text(node)).items():
            found.setdefault(fid, path)
    return found


def most_recent_file_ids_from_nodes(nodes: Iterable[object]) -> list[str]:
    """The file IDs of summary nodes, each once, ordered by its last mention (the
    most recent last)."""
    order: dict[str, None] = {}
    for node in nodes:
        for fid in collect_file_ids_from_nodes([node]):
            order.pop(fid, None)
            order[fid] = None
    return list(order)
