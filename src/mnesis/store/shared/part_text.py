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

Rows written since the fifth storage pass are also *minimal*: the JSON leaves out
``type`` and a tool part's ``status`` (columns hold them) and every top-level field whose value is
its model's default (a string, bool, integer or None of the same type); a text or
reasoning part whose text is all of ``text_content`` leaves out ``text`` without a
marker. A plain text part is stored as ``{}``. A stored JSON without ``type`` is of this
form: decoding takes the type from ``part_type``, restores the text, and lets the model
fill in the defaults. Older rows (which always hold ``type``) decode as before, and the
decoded type must equal ``part_type`` either way.
"""

from __future__ import annotations

from typing import Any

from mnesis.errors import StoreCorruptError
from mnesis.models.parts import PART_TYPES, MessagePart
from mnesis.store.codec import dumps, loads_column, part_from_data

__all__ = ["MARKER", "decode_stored_part", "shrink_content"]

MARKER = "@text"
_SHORT = 8
_SHORT_SLICE = 32
_FIELDS = {
    "text": "text",
    "reasoning": "text",
    "tool": "output",
    "file_ref": "exploration_summary",
}


_SCALARS = (str, bool, int, type(None))
_DEFAULTS: dict[str, dict[str, object]] = {
    str(model.model_fields["type"].default): {
        name: info.default
        for name, info in model.model_fields.items()
        if name not in ("id", "type")
        and not info.is_required()
        and info.default_factory is None
        and type(info.default) in _SCALARS
    }
    for model in PART_TYPES
}
"""Per part type, the fields a minimal JSON leaves out when they hold this default."""
_IN_COLUMNS = frozenset(("type", "status"))
"""What the columns hold: ``part_type``, and a tool call's status (``tool_state`` and
the three times, which decoding reads over the JSON)."""
_IMPLIED = frozenset(("text", "reasoning"))
"""Part types whose ``text`` (a required field) is all of ``text_content`` when a
minimal JSON leaves it out."""


def _minimal(data: dict[str, Any]) -> dict[str, Any] | None:
    """``data`` without ``type`` and default values; None for an unknown type."""
    defaults = _DEFAULTS.get(data.get("type", ""))
    if defaults is None:
        return None
    missing = object()
    return {
        key: value
        for key, value in data.items()
        if key not in _IN_COLUMNS
        and not (type(value) is type(default := defaults.get(key, missing)) and value == default)
    }


def shrink_content(data: dict[str, Any], text_content: str | None) -> str:
    """The stored JSON of a part's ``data`` (its dump without ``id``): minimal, and
    without the field that ``text_content`` holds verbatim."""
    kind = data.get("type", "")
    kept = _minimal(data)
    if kept is None:
        return dumps(data)
    field = _FIELDS.get(kind)
    value = kept.get(field) if field is not None else None
    if field is None or not isinstance(value, str) or not value or text_content is None:
        return dumps(kept)
    whole = value == text_content
    if whole and kind in _IMPLIED:
        del kept[field]
        return dumps(kept)
    if len(value) < (_SHORT if whole else _SHORT_SLICE):
        return dumps(kept)  # The marker would take more room than the text.
    start = 0 if whole else text_content.find(value)
    if start < 0:
        return dumps(kept)
    del kept[field]
    kept[MARKER] = field if whole else [field, start, len(value)]
    return dumps(kept)


def _corrupt(part_id: str, what: str) -> StoreCorruptError:
    return StoreCorruptError(
        f"message_parts row {part_id!r}: {what}; run `mnesis check --deep` and restore "
        "this database from a backup"
    )


def _restore(part_id: str, data: dict[str, Any], text_content: str | None) -> None:
    """Put back the field that ``data`` names under :data:`MARKER`."""
    where = data.pop(MARKER)
    text = text_content if isinstance(text_content, str) else None
    if isinstance(where, str) and text is not None:
        data[where] = text
        return
    if (
        isinstance(where, list)
        and len(where) == 3
        and isinstance(where[0], str)
        and all(isinstance(n, int) and n >= 0 for n in where[1:])
        and text is not None
        and where[1] + where[2] <= len(text)
    ):
        data[where[0]] = text[where[1] : where[1] + where[2]]
        return
    raise _corrupt(
        part_id, "column content points into text_content, which does not hold that text"
    )


def decode_stored_part(
    part_id: str,
    part_type: str,
    content: str,
    text_content: str | None,
    tool_state: str | None,
    compacted_at: int | None,
    started_at: int | None,
    completed_at: int | None,
) -> MessagePart:
    """Rebuild a stored part (see :func:`~mnesis.store.codec.decode_part`) of the type
    the ``part_type`` column names, restoring what its ``content`` left out."""
    data = loads_column(content, "message_parts", part_id, "content")
    if isinstance(data, dict):
        if MARKER in data:
            _restore(part_id, data, text_content)
        if "type" not in data:
            data["type"] = part_type
            if part_type in _IMPLIED and "text" not in data:
                if not isinstance(text_content, str):
                    raise _corrupt(
                        part_id, "column content leaves its text to an empty text_content"
                    )
                data["text"] = text_content
    part = part_from_data(part_id, data, tool_state, compacted_at, started_at, completed_at)
    if part.type != part_type:
        raise _corrupt(
            part_id, f"column content holds a {part.type!r} part, column part_type {part_type!r}"
        )
    return part
