"""A :class:`~mnesis.importers.batches.Batch` as plain data, to cross from the parser
process of an import to the writing one.

Pickling the pydantic messages and parts of a batch as they are costs the receiving
process ~13 µs per message (every object rebuilt through ``__reduce_ex__``); as field
dictionaries it is a fraction of that. The receiving side restores each model without
validating it again: the parser process built every one with its validating
constructor, and the store's batch check runs on them once more before they are written.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from mnesis.importers.batches import Batch
from mnesis.models.message import Message
from mnesis.models.parts import PART_TYPES, MessagePart, ToolStatus
from mnesis.models.tokens import TokenUsage
from mnesis.store.base import NewMessage

__all__ = ["dump_batch", "load_batch"]

_CLASSES: tuple[type[BaseModel], ...] = (Message, TokenUsage, ToolStatus, *PART_TYPES)
_INDEX = {cls: index for index, cls in enumerate(_CLASSES)}

PackedModel = tuple[int, dict[str, Any], set[str], tuple[str, ...]]
"""``(class index, field values, fields set, names of the fields holding packed models)``."""


PackedPart = tuple[PackedModel, dict[str, Any] | None]
"""A packed part and the columns it was encoded to (None: not encoded)."""


@dataclass(slots=True)
class _Packed:
    batch: Batch
    """The batch without its messages and encodings."""
    messages: list[tuple[PackedModel, list[PackedPart], list[int] | None, bool]]


def _pack(model: BaseModel) -> PackedModel:
    data = model.__dict__
    nested = tuple(name for name, value in data.items() if isinstance(value, BaseModel))
    if nested:
        data = {k: _pack(v) if k in nested else v for k, v in data.items()}
    return _INDEX[type(model)], data, model.__pydantic_fields_set__, nested


def _unpack(packed: PackedModel) -> Any:
    index, data, fields_set, nested = packed
    for name in nested:
        data[name] = _unpack(data[name])
    cls = _CLASSES[index]
    model = cls.__new__(cls)
    model.__setstate__(
        {
            "__dict__": data,
            "__pydantic_fields_set__": fields_set,
            "__pydantic_extra__": None,
            "__pydantic_private__": None,
        }
    )
    return model


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
    return pickle.dumps(_Packed(batch, messages), protocol=pickle.HIGHEST_PROTOCOL)


def load_batch(data: bytes) -> Batch:
    """The batch :func:`dump_batch` wrote."""
    packed: _Packed = pickle.loads(data)
    batch = packed.batch
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
