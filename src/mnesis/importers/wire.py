"""A :class:`~mnesis.importers.batches.Batch` as plain data, to cross from the parser
process of an import to the writing one: the length of a pickled head (8 bytes,
big-endian), the head, then the batch's rows as :mod:`marshal` data when it has them.

Pickling the pydantic messages and parts of a batch as they are costs the receiving
process ~13 µs per message (every object rebuilt through ``__reduce_ex__``), as tuples
of field values ~10 µs, and packing them costs the parser process less too. The
receiving side restores each model without validating it again (every field counted as
set): the parser process built every one with its validating constructor and ran the
store's batch check on them.
"""

from __future__ import annotations

import marshal
import pickle
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from mnesis.importers.batches import Batch
from mnesis.importers.light import trusted_model
from mnesis.models.message import Message
from mnesis.models.parts import PART_TYPES, MessagePart, ToolStatus
from mnesis.models.tokens import TokenUsage
from mnesis.store.base import NewMessage
from mnesis.store.shared.batch import BatchRows, PreparedRows

__all__ = ["dump_batch", "load_batch"]

_CLASSES: tuple[type[BaseModel], ...] = (Message, TokenUsage, ToolStatus, *PART_TYPES)
_INDEX = {cls: index for index, cls in enumerate(_CLASSES)}

_FIELDS = tuple(tuple(cls.model_fields) for cls in _CLASSES)
_NESTING = frozenset(
    index
    for index, cls in enumerate(_CLASSES)
    if any(
        isinstance(t, type) and issubclass(t, BaseModel)
        for field in cls.model_fields.values()
        for t in (field.annotation, *getattr(field.annotation, "__args__", ()))
    )
)
"""Classes with a field that may hold a model (packed in turn)."""

PackedModel = tuple[int, tuple[Any, ...], tuple[int, ...]]
"""``(class index, field values in the class's field order, positions of the values that
are models, packed in turn)``."""

PackedPart = tuple[PackedModel, dict[str, Any] | None]
"""A packed part and the columns it was encoded to (None: not encoded)."""


@dataclass(slots=True)
class _Packed:
    batch: Batch
    """The batch without its messages and encodings (and without its rows when
    ``marshalled``)."""
    messages: list[tuple[PackedModel, list[PackedPart], list[int] | None, bool]]
    marshalled: bool = False
    """Whether the rows and running calls follow, as :mod:`marshal` data."""


_LENGTH_BYTES = 8


def _marshalled_rows(batch: Batch) -> bytes:
    """The batch's rows and running calls as :mod:`marshal` data, taken out of the
    batch (``b""``, left in place, when there are none or a value is not plain data).

    The rows are plain tuples of strings, numbers and None: marshal writes and reads
    them about four times as fast as pickle (whose memo is of no use for them), in both
    processes. Both ends run the same interpreter, so its marshal format is shared."""
    prepared = batch.rows
    if prepared is None:
        return b""
    rows = prepared.rows
    try:
        data = marshal.dumps((rows.messages, rows.parts, rows.context, batch.calls, rows.links))
    except ValueError:  # not plain data (a str subclass, say): pickled with the batch
        return b""
    batch.rows, batch.calls = PreparedRows(prepared.starts, BatchRows()), []
    return data


def _pack(model: BaseModel) -> PackedModel:
    index = _INDEX[type(model)]
    values = tuple(model.__dict__.values())  # a validated model's are in field order
    if index not in _NESTING:
        return index, values, ()
    nested = tuple(i for i, v in enumerate(values) if isinstance(v, BaseModel))
    packed = tuple(_pack(v) if i in nested else v for i, v in enumerate(values))
    return index, packed, nested


def _unpack(packed: PackedModel) -> Any:
    """The model, restored as pickle restores one (no validation: the parser process
    built it with its validating constructor)."""
    index, values, nested = packed
    names = _FIELDS[index]
    data = dict(zip(names, values, strict=True))
    for position in nested:
        data[names[position]] = _unpack(values[position])
    return trusted_model(_CLASSES[index], data)


def dump_batch(batch: Batch) -> bytes:
    """``batch`` as bytes for :func:`load_batch` (its messages as field dictionaries);
    empties its messages and encodings."""
    columns = {id(part): encoded for part, encoded in batch.encoded}
    messages = [
        (
            _pack(item.message),
            [(_pack(part), columns.get(id(part))) for part in item.parts],
            None if item.part_tokens is None else list(item.part_tokens),
            item.in_context,
        )
        for item in batch.messages
    ]
    batch.messages, batch.encoded = [], []
    rows = _marshalled_rows(batch)
    head = pickle.dumps(_Packed(batch, messages, bool(rows)), protocol=pickle.HIGHEST_PROTOCOL)
    return b"".join((len(head).to_bytes(_LENGTH_BYTES, "big"), head, rows))


def load_batch(data: bytes) -> Batch:
    """The batch :func:`dump_batch` wrote."""
    view = memoryview(data)
    size = int.from_bytes(view[:_LENGTH_BYTES], "big")
    packed: _Packed = pickle.loads(view[_LENGTH_BYTES : _LENGTH_BYTES + size])
    batch = packed.batch
    if packed.marshalled and batch.rows is not None:
        rows = batch.rows.rows
        rows.messages, rows.parts, rows.context, batch.calls, rows.links = marshal.loads(
            view[_LENGTH_BYTES + size :]
        )
    encoded = batch.encoded
    messages = []
    for message, packed_parts, tokens, in_context in packed.messages:
        parts: list[MessagePart] = []
        for packed_part, columns in packed_parts:
            part: MessagePart = _unpack(packed_part)
            parts.append(part)
            if columns is not None:
                encoded.append((part, columns))
        messages.append(NewMessage(_unpack(message), parts, tokens, in_context))
    batch.messages = messages
    return batch
