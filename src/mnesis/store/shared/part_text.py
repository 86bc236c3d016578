"""Each part's text stored once: the ``content`` JSON leaves out what ``text_content``
already holds.

``text_content`` (the indexed text of a part) usually contains the part's largest
field verbatim: all of a text or reasoning part's ``text``, the ``output`` at the end
of a tool part's, the ``exploration_summary`` of a file reference. When it does, the
stored JSON drops that field and names where it lies instead, under the key
:data:`MARKER`: ``"text"`` (the field is all of ``text_content``) or
``[field, start, length]`` (a slice, in code points). The writer checks the slice
before it drops anything, so a value that the indexed text does not hold exactly
(NUL bytes, lone surrogates, CJK bigrams appended to the index text) stays in the JSON.
Rows written before (full JSON, no marker) decode unchanged.
"""

from __future__ import annotations

from typing import Any

from mnesis.errors import StoreCorruptError
from mnesis.models.parts import MessagePart
from mnesis.store.codec import decode_part, dumps, loads_column, part_from_data

__all__ = ["MARKER", "decode_stored_part", "shrink_content"]

MARKER = "@text"
_QUOTED_MARKER = f'"{MARKER}"'
_SHORT = 8
_SHORT_SLICE = 32
_FIELDS = {
    "text": "text",
    "reasoning": "text",
    "tool": "output",
    "file_ref": "exploration_summary",
}


def shrink_content(data: dict[str, Any], text_content: str | None) -> str:
    """The stored JSON of a part's ``data`` (its dump without ``id``), without the
    field that ``text_content`` holds verbatim."""
    field = _FIELDS.get(data.get("type", ""))
    value = data.get(field) if field is not None else None
    if not isinstance(value, str) or not value or text_content is None:
        return dumps(data)
    whole = value == text_content
    if len(value) < (_SHORT if whole else _SHORT_SLICE):
        return dumps(data)  # The marker would take more room than the text.
    start = 0 if whole else text_content.find(value)
    if start < 0:
        return dumps(data)
    kept = {k: v for k, v in data.items() if k != field}
    if not whole:
        kept[MARKER] = [field, start, len(value)]
        return dumps(kept)
    kept[MARKER] = field
    return _dumps_plain(kept)


_PLAIN = frozenset((str, bool, type(None)))
_plain_json: dict[tuple[tuple[object, ...], ...], str] = {}
""":func:`dumps` of recent dictionaries of plain values (what remains of a text part
once its text is left out is the same few dictionaries over and over)."""


def _dumps_plain(data: dict[str, Any]) -> str:
    """``dumps(data)``, remembered when every value is a string, a bool or None. The
    key holds each value's type, so only equal plain values share it (``True == 1``,
    ``0.0 == -0.0``: never remembered)."""
    values = tuple(data.values())
    key = (tuple(data), values, tuple(map(type, values)))
    try:
        text = _plain_json.get(key)
    except TypeError:  # an unhashable value (a list, a dict)
        return dumps(data)
    if text is None:
        text = dumps(data)
        if _PLAIN.issuperset(key[2]):
            if len(_plain_json) >= 256:
                _plain_json.clear()
            _plain_json[key] = text
    return text


def _restore(part_id: str, data: Any, text_content: str | None) -> Any:
    if not isinstance(data, dict) or MARKER not in data:
        return data
    where = data.pop(MARKER)
    text = text_content if isinstance(text_content, str) else None
    if isinstance(where, str) and text is not None:
        data[where] = text
        return data
    if (
        isinstance(where, list)
        and len(where) == 3
        and isinstance(where[0], str)
        and all(isinstance(n, int) and n >= 0 for n in where[1:])
        and text is not None
        and where[1] + where[2] <= len(text)
    ):
        data[where[0]] = text[where[1] : where[1] + where[2]]
        return data
    raise StoreCorruptError(
        f"message_parts row {part_id!r}: column content points into text_content, which "
        "does not hold that text; run `mnesis check --deep` and restore this database "
        "from a backup"
    )


def decode_stored_part(
    part_id: str,
    content: str,
    text_content: str | None,
    tool_state: str | None,
    compacted_at: int | None,
    started_at: int | None,
    completed_at: int | None,
) -> MessagePart:
    """Rebuild a stored part (see :func:`~mnesis.store.codec.decode_part`), restoring
    the field its ``content`` left to ``text_content``."""
    if not isinstance(content, str) or _QUOTED_MARKER not in content:
        return decode_part(part_id, content, tool_state, compacted_at, started_at, completed_at)
    data = _restore(
        part_id, loads_column(content, "message_parts", part_id, "content"), text_content
    )
    return part_from_data(part_id, data, tool_state, compacted_at, started_at, completed_at)
