"""A parser of ``fixtures/mnesis-0.4.0-public-api.md``: the earlier library's public surface.

The file has one ``## module`` section per public module and, under it, one line per
public name (``- ...``) followed by indented member lines (``field``, ``__init__``,
``def``, ``async def``, ``classmethod``, ``staticmethod``, ``property``, ``members:``).
Every such line but ``members:`` (the values of an enum, checked with its class) is one
*name* of the surface. :func:`parse` turns the file into :class:`Entry` records, and
:func:`parse_signature` turns a signature line into :class:`Param` records (the line is
valid Python once wrapped as ``def f(...): pass``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SURFACE_FILE = Path(__file__).parent / "fixtures" / "mnesis-0.4.0-public-api.md"

REQUIRED: Any = object()
"""The default of a parameter or field that has none."""
FACTORY: Any = object()
"""The default of a field built by a ``default_factory``."""


@dataclass(frozen=True)
class Param:
    """One parameter of a documented signature (``self`` / ``cls`` left out)."""

    name: str
    kind: str
    """``positional`` (positional-or-keyword) or ``keyword`` (keyword-only)."""
    index: int
    """Position among the positional parameters (``-1`` for keyword-only)."""
    default: Any
    annotation: str


@dataclass(frozen=True)
class Member:
    """One indented member line of a class: a field, a method or a property."""

    kind: str
    """``field``, ``init``, ``method``, ``property``."""
    name: str
    line: str
    is_async: bool = False
    binding: str = "instance"
    """``instance``, ``classmethod`` or ``staticmethod``."""
    params: tuple[Param, ...] = ()
    returns: str = ""
    annotation: str = ""
    """A field's documented type."""
    default: Any = REQUIRED
    """A field's documented default (:data:`REQUIRED`, :data:`FACTORY` or the value)."""


@dataclass
class Entry:
    """One top-level line of a module section and the members under it."""

    module: str
    name: str
    kind: str
    """``reexport`` (``source`` names the defining module), ``constant``, ``class``,
    ``function``."""
    line: str
    source: str = ""
    bases: tuple[str, ...] = ()
    is_async: bool = False
    params: tuple[Param, ...] = ()
    returns: str = ""
    members: list[Member] = field(default_factory=list)
    enum_members: dict[str, str] = field(default_factory=dict)


_SECTION = re.compile(r"^## (\S+)$")
_REEXPORT = re.compile(r"^- `(\w+)`: re-exported from `([\w.]+)`$")
_CONSTANT = re.compile(r"^- `(\w+)`: (\w+)$")
_CLASS = re.compile(r"^- class `(\w+)`\((.*)\)$")
_FUNCTION = re.compile(r"^- (async )?def `(\w+)`(\(.*)$")
_FIELD = re.compile(r"^field `(\w+)`: (.+) \((required|default_factory|default=(.*))\)$")
_METHOD = re.compile(r"^(classmethod |staticmethod )?(async )?def `(\w+)`(\(.*)$")
_PROPERTY = re.compile(r"^property `(\w+)`$")
_MEMBERS = re.compile(r"(\w+)='([^']*)'")


def parse_signature(text: str) -> tuple[tuple[Param, ...], str]:
    """The parameters and the return annotation of ``(a: 'T' = 1, *, b: 'U') -> 'R'``."""
    tree = ast.parse(f"def f{text}: pass")
    func = tree.body[0]
    assert isinstance(func, ast.FunctionDef)
    args = func.args
    assert not args.posonlyargs and args.vararg is None and args.kwarg is None, text
    positional = [a for a in args.args if a.arg not in ("self", "cls")]
    skipped = len(args.args) - len(positional)
    pos_defaults: list[Any] = [REQUIRED] * (len(args.args) - len(args.defaults)) + [
        ast.literal_eval(d) for d in args.defaults
    ]
    params = [
        Param(a.arg, "positional", i, pos_defaults[i + skipped], _annotation(a))
        for i, a in enumerate(positional)
    ]
    for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        default = REQUIRED if d is None else ast.literal_eval(d)
        params.append(Param(a.arg, "keyword", -1, default, _annotation(a)))
    returns = "" if func.returns is None else str(ast.literal_eval(func.returns))
    return tuple(params), returns


def _annotation(arg: ast.arg) -> str:
    return "" if arg.annotation is None else str(ast.literal_eval(arg.annotation))


def _member(text: str) -> Member | None:
    if m := _FIELD.match(text):
        name, annotation, spec, value = m.groups()
        if spec == "required":
            default = REQUIRED
        elif spec == "default_factory":
            default = FACTORY
        else:
            default = ast.literal_eval(value)
        return Member("field", name, text, annotation=annotation, default=default)
    if text.startswith("__init__("):
        params, returns = parse_signature(text[len("__init__") :])
        return Member("init", "__init__", text, params=params, returns=returns)
    if m := _METHOD.match(text):
        binding, is_async, name, sig = m.groups()
        params, returns = parse_signature(sig)
        return Member(
            "method",
            name,
            text,
            is_async=bool(is_async),
            binding=(binding or "instance").strip(),
            params=params,
            returns=returns,
        )
    if m := _PROPERTY.match(text):
        return Member("property", m.group(1), text)
    if text.startswith("members:"):
        return None
    raise ValueError(f"unparsed member line: {text!r}")


def parse(path: Path = SURFACE_FILE) -> list[Entry]:
    """Every top-level entry of the surface file, with its members."""
    entries: list[Entry] = []
    module = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        if m := _SECTION.match(raw):
            module = m.group(1)
            continue
        if raw.startswith("    "):
            text = raw.strip()
            entry = entries[-1]
            if text.startswith("members:"):
                entry.enum_members = dict(_MEMBERS.findall(text))
            member = _member(text)
            if member is not None:
                entry.members.append(member)
            continue
        if not raw.startswith("- ") or not module:
            continue
        entries.append(_entry(module, raw))
    return entries


def _entry(module: str, raw: str) -> Entry:
    if m := _REEXPORT.match(raw):
        return Entry(module, m.group(1), "reexport", raw, source=m.group(2))
    if m := _CLASS.match(raw):
        bases = tuple(b.strip() for b in m.group(2).split(",") if b.strip())
        return Entry(module, m.group(1), "class", raw, bases=bases)
    if m := _FUNCTION.match(raw):
        params, returns = parse_signature(m.group(3))
        return Entry(
            module,
            m.group(2),
            "function",
            raw,
            is_async=bool(m.group(1)),
            params=params,
            returns=returns,
        )
    if m := _CONSTANT.match(raw):
        return Entry(module, m.group(1), "constant", raw)
    raise ValueError(f"unparsed line: {raw!r}")
