"""The shape of a JSON-like value: kinds, object fields, array lengths and elements.

A :class:`Shape` merges every value seen at one position of a document (all
elements of an array share one element shape), so a million-record array is
described by one record type with its optional fields marked. Memory is bounded:
at most :data:`MAX_FIELDS` fields per object shape and :data:`SAMPLE_ELEMENTS`
elements merged per array.
"""

from __future__ import annotations

import datetime as dt
import json
from itertools import islice
from typing import Any

from mnesis.files.explorers._common import SummaryBuilder
from mnesis.files.explorers._format import clip, fmt_int

__all__ = ["MAX_FIELDS", "SAMPLE_ELEMENTS", "Shape", "render_shape"]

MAX_FIELDS = 60
"""Fields kept per object shape; more are counted, not described."""
SAMPLE_ELEMENTS = 1_000
"""Elements of each array merged into its element shape; the rest are only counted."""
MAX_DEPTH = 6
"""Nesting below this depth is counted as a kind, not described."""
RENDER_DEPTH = 3
"""Levels printed below the top level."""
NODE_BUDGET = 200_000
"""Values one :meth:`Shape.add_value` call visits at most (YAML aliases can make a
small document an enormous tree)."""


def kind_of(value: object) -> str:
    """The JSON-ish kind of a Python value (``bool`` before ``int``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return "date"
    return type(value).__name__


class Shape:
    """Everything seen at one position of a document, merged."""

    __slots__ = (
        "count",
        "cut",
        "element",
        "example",
        "extra_fields",
        "fields",
        "kinds",
        "max_len",
        "min_len",
        "objects",
    )

    def __init__(self) -> None:
        self.count = 0
        self.kinds: dict[str, int] = {}
        self.fields: dict[str, Shape] = {}
        self.extra_fields = 0
        self.objects = 0
        self.element: Shape | None = None
        self.min_len: int | None = None
        self.max_len: int | None = None
        self.example: str | None = None
        self.cut = False
        """True if a scan stopped inside an array here: its length is a lower bound."""

    # -- recording -----------------------------------------------------------
    def _seen(self, kind: str) -> None:
        self.count += 1
        self.kinds[kind] = self.kinds.get(kind, 0) + 1

    def open_object(self) -> None:
        """Record one object (its fields are recorded with :meth:`field`)."""
        self._seen("object")
        self.objects += 1

    def field(self, name: str) -> Shape | None:
        """The shape of field ``name``; None once :data:`MAX_FIELDS` are known."""
        found = self.fields.get(name)
        if found is None:
            if len(self.fields) >= MAX_FIELDS:
                return None
            found = self.fields[name] = Shape()
        return found

    def open_array(self) -> Shape:
        """Record one array (call :meth:`close_array` with its length); its element shape."""
        self._seen("array")
        if self.element is None:
            self.element = Shape()
        return self.element

    def close_array(self, length: int) -> None:
        """Record the length of the array opened last."""
        self.min_len = length if self.min_len is None else min(self.min_len, length)
        self.max_len = length if self.max_len is None else max(self.max_len, length)

    def add_scalar(self, value: object) -> None:
        """Record a scalar value, keeping the first short example."""
        kind = kind_of(value)
        self._seen(kind)
        if self.example is None and kind in ("string", "number", "boolean", "date"):
            shown = json.dumps(value, ensure_ascii=False) if kind != "date" else str(value)
            self.example = clip(shown, 40)

    def add_value(self, value: Any, depth: int = 0, budget: list[int] | None = None) -> None:
        """Record an already-parsed value; dicts and lists are walked, bounded in
        depth, in elements per array and in values visited (``budget``)."""
        if budget is None:
            budget = [NODE_BUDGET]
        budget[0] -= 1
        descend = depth < MAX_DEPTH and budget[0] > 0
        if isinstance(value, dict):
            self.open_object()
            if not descend:
                return
            skipped = 0
            for key, item in value.items():
                sub = self.field(str(key))
                if sub is None:
                    skipped += 1
                    continue
                sub.add_value(item, depth + 1, budget)
            self.extra_fields = max(self.extra_fields, skipped)
        elif isinstance(value, list | tuple):
            element = self.open_array()
            if descend:
                for item in islice(value, SAMPLE_ELEMENTS):
                    element.add_value(item, depth + 1, budget)
            self.close_array(len(value))
        else:
            self.add_scalar(value)

    # -- describing ----------------------------------------------------------
    def describe(self) -> str:
        """One line: ``string | null, e.g. "x"`` or ``array[3] of object``."""
        parts: list[str] = []
        for kind, _ in sorted(self.kinds.items(), key=lambda kv: -kv[1]):
            if kind == "array":
                parts.append(self._describe_array())
            elif kind == "object":
                keys = len(self.fields) + self.extra_fields
                parts.append(f"object ({fmt_int(keys)} key{'s' if keys != 1 else ''})")
            else:
                parts.append(kind)
        text = " | ".join(parts) or "empty"
        if self.example is not None:
            text += f", e.g. {self.example}"
        return text

    def _describe_array(self) -> str:
        if self.min_len is None or self.max_len is None:
            length = "?"
        elif self.min_len == self.max_len:
            length = fmt_int(self.max_len)
        else:
            length = f"{fmt_int(self.min_len)}..{fmt_int(self.max_len)}"
        if self.cut:
            length = f"≥{length.split('..')[-1]}"
        element = self.element
        if element is None or element.count == 0:
            return f"array[{length}]"
        if set(element.kinds) == {"array"}:  # an array of arrays: say what the inner ones hold
            return f"array[{length}] of {element._describe_array()}"
        kinds = " | ".join(k for k, _ in sorted(element.kinds.items(), key=lambda kv: -kv[1]))
        return f"array[{length}] of {kinds}"


def _children(shape: Shape) -> tuple[Shape, dict[str, Shape], int]:
    """The shape whose fields are printed under ``shape`` (itself, or its array element)."""
    if shape.fields:
        return shape, shape.fields, shape.extra_fields
    element = shape.element
    while element is not None and not element.fields and element.element is not None:
        element = element.element
    if element is not None and element.fields:
        return element, element.fields, element.extra_fields
    return shape, {}, 0


def render_shape(shape: Shape, out: SummaryBuilder, indent: str = "  ", depth: int = 0) -> None:
    """Append the fields under ``shape`` to ``out``, one per line, ``?`` marking optional ones."""
    owner, fields, extra = _children(shape)
    for name, sub in fields.items():
        optional = "?" if sub.count < owner.objects else ""
        if not out.add(f"{indent}{clip(name, 60)}{optional}: {sub.describe()}"):
            return
        if depth + 1 < RENDER_DEPTH:
            render_shape(sub, out, indent + "  ", depth + 1)
    if extra:
        out.add(f"{indent}… and {fmt_int(extra)} more keys")
