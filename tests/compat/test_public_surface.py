"""The earlier library's whole public surface (mnesis 0.4.0) resolves here, generated from
``fixtures/mnesis-0.4.0-public-api.md`` (issue 31).

One test per *name* of the file (540): every top-level line (a re-export, a constant, a
class, a function) and every member line of a class (a field, ``__init__``, a method, a
property). What each checks:

* **re-export / constant**: importable at the documented path; a re-export is the very
  object its defining module exports.
* **class**: a class, with the documented bases (``Exception``, ``StrEnum``, ``dict``,
  ``BaseModel``, another listed error), an enum with every documented member and value.
* **function / method / __init__**: async where it was (an async generator where it
  returned one), and every documented parameter accepted at the same place: a
  positional one at the same index under the same name, a keyword-only one by name (or
  as a key of the ``Unpack[TypedDict]`` the operators take), with a default wherever it
  had one, and the same default unless :data:`DEFAULT_DEVIATIONS` says why not. No
  parameter of ours that it did not list may be required.
* **class with fields**: no field of ours that 0.4.0 did not have is required.
* **field**: a field of the model (pydantic or dataclass), or a renamed field that
  accepts the old name as an alias and reads it back as a property; optional wherever it was,
  with the same default (or a listed deviation) which its type accepts; a required
  field's type accepts a sample value of the documented type.
* **property**: readable on the class (a property, or a field of the model).
* **refused** (:data:`REFUSED`): a call 0.4.0 allowed that this design cannot honour
  raises ``InvalidArgumentError`` saying what to use instead.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
import re
import typing
from collections.abc import Callable
from typing import Annotated, Any

import pytest
from pydantic import AliasChoices, BaseModel, TypeAdapter
from pydantic.fields import FieldInfo

from mnesis.errors import InvalidArgumentError
from tests.compat.surface import FACTORY, REQUIRED, Entry, Member, Param, parse

ENTRIES = parse()
EXPECTED_NAMES = 540

DEFAULT_DEVIATIONS: dict[str, str] = {
    "mnesis.models.config:ModelInfo.provider_id": "'unknown' names a provider no table "
    "entry matched; no behaviour depends on it",
    "mnesis.models.message:Message.model_id": "None (not '') when no model wrote the "
    "message; both are falsy",
    "mnesis.models.message:Message.provider_id": "as model_id",
    "mnesis.models.message:ToolStatus.state": "'completed': a ToolPart given to record() "
    "carries its output; 'pending' would store a call that never finished",
    "mnesis.operators.llm_map:MapResult.attempts": "0 when no model call was made (a "
    "template that cannot render); results always set it",
    "mnesis.store.immutable:ImmutableStore.list_sessions.active_only": "False: a closed "
    "session is a whole history (0.4.0 had deleted ones); listing commands show it",
}
"""Defaults deliberately different from 0.4.0's, each with its reason."""

REFUSED: dict[str, str] = {
    "mnesis.session:MnesisSession.__init__": "a session is wired from its stored row; "
    "MnesisSession.create / load / open build it (0.4.0 took the collaborators)",
}
"""Names that exist but whose 0.4.0 call cannot be honoured on this design: called with
the documented number of arguments, each raises ``InvalidArgumentError`` naming what to
use instead (docs/compat.md repeats these)."""


def _names() -> list[tuple[str, Entry, Member | None]]:
    out: list[tuple[str, Entry, Member | None]] = []
    for entry in ENTRIES:
        out.append((f"{entry.module}:{entry.name}", entry, None))
        for member in entry.members:
            out.append((f"{entry.module}:{entry.name}.{member.name}", entry, member))
    return out


NAMES = _names()


def test_the_surface_file_lists_540_names() -> None:
    assert len(NAMES) == EXPECTED_NAMES
    assert len({n for n, _, _ in NAMES}) == EXPECTED_NAMES


def _resolve(module: str, name: str) -> Any:
    mod = importlib.import_module(module)
    assert hasattr(mod, name), f"{module} has no {name}"
    return getattr(mod, name)


@pytest.mark.parametrize(("name", "entry", "member"), NAMES, ids=[n for n, _, _ in NAMES])
def test_name_resolves_compatibly(name: str, entry: Entry, member: Member | None) -> None:
    obj = _resolve(entry.module, entry.name)
    if member is None:
        _check_entry(entry, obj)
        return
    assert inspect.isclass(obj), f"{name}: {entry.name} is not a class"
    key = f"{entry.module}:{entry.name}.{member.name}"
    if member.kind == "field":
        _check_field(key, obj, member)
    elif member.kind == "property":
        _check_property(obj, member)
    elif key in REFUSED:
        with pytest.raises(InvalidArgumentError, match="use "):
            obj(*[None] * len(member.params))
    elif member.kind == "init":
        _check_params(key, obj, member.params, drop_first=False)
    else:
        _check_method(key, obj, member)


def _check_entry(entry: Entry, obj: Any) -> None:
    if entry.kind == "reexport":
        assert obj is _resolve(entry.source, entry.name), (
            f"{entry.module}.{entry.name} is not {entry.source}.{entry.name}"
        )
    elif entry.kind == "class":
        assert inspect.isclass(obj), f"{entry.name} is not a class"
        for base in entry.bases:
            _check_base(entry, obj, base)
        documented = {m.name for m in entry.members if m.kind == "field"}
        if documented and issubclass(obj, BaseModel):
            for field_name, info in obj.model_fields.items():
                names = {field_name} | _aliases(info)
                assert not info.is_required() or names & documented, (
                    f"{entry.name} requires {field_name!r}, which 0.4.0 did not have"
                )
        for member_name, value in entry.enum_members.items():
            assert member_name in obj.__members__, f"{entry.name}.{member_name} missing"
            assert obj[member_name].value == value
    elif entry.kind == "function":
        assert callable(obj)
        _check_async(f"{entry.module}.{entry.name}", obj, entry.is_async, entry.returns)
        _check_params(f"{entry.module}:{entry.name}", obj, entry.params, drop_first=False)


def _aliases(info: FieldInfo) -> set[str]:
    alias = info.validation_alias
    if isinstance(alias, AliasChoices):
        return {c for c in alias.choices if isinstance(c, str)}
    return {alias} if isinstance(alias, str) else set()


def _check_base(entry: Entry, cls: type, base: str) -> None:
    if base == "dict":  # TypedDicts refuse issubclass; their MRO has dict
        assert dict in cls.__mro__, f"{entry.name} is not a dict"
    elif base == "BaseModel":
        assert issubclass(cls, BaseModel), f"{entry.name} is not a pydantic model"
    elif base == "StrEnum":
        assert issubclass(cls, enum.StrEnum), f"{entry.name} is not a StrEnum"
    elif base == "Exception":
        assert issubclass(cls, Exception)
    else:  # another class of the surface, e.g. MnesisStoreError
        home = next(e for e in ENTRIES if e.name == base and e.kind == "class")
        assert issubclass(cls, _resolve(home.module, base)), f"{entry.name} is no {base}"


def _check_async(where: str, func: Any, is_async: bool, returns: str) -> None:
    raw = inspect.unwrap(func)
    coroutine = inspect.iscoroutinefunction(raw)
    if not is_async:
        assert not coroutine, f"{where} was synchronous and is a coroutine function here"
    elif re.match(r"Async(Generator|Iterator)\b", returns):
        assert inspect.isasyncgenfunction(raw) or not coroutine, (
            f"{where} returned an async iterator and is a coroutine function here"
        )
    else:
        assert coroutine, f"{where} was a coroutine function and is not here"


def _check_method(key: str, cls: type, member: Member) -> None:
    assert hasattr(cls, member.name), f"{key} missing"
    static = inspect.getattr_static(cls, member.name)
    if member.binding == "instance":
        func = getattr(cls, member.name)
        drop = not isinstance(static, classmethod | staticmethod)
    else:
        assert isinstance(static, classmethod | staticmethod), (
            f"{key} was a {member.binding}: callable on the class"
        )
        func = getattr(cls, member.name)
        drop = False
    _check_async(key, func, member.is_async, member.returns)
    _check_params(key, func, member.params, drop_first=drop)


def _unpacked_keys(func: Callable[..., Any], var_kw: inspect.Parameter) -> frozenset[str]:
    hints = typing.get_type_hints(func, include_extras=True)
    hint = hints.get(var_kw.name)
    if typing.get_origin(hint) is not typing.Unpack:
        return frozenset()
    typed_dict = typing.get_args(hint)[0]
    return frozenset(typed_dict.__optional_keys__) | frozenset(typed_dict.__required_keys__)


def _check_params(
    key: str, func: Callable[..., Any], documented: tuple[Param, ...], *, drop_first: bool
) -> None:
    sig = inspect.signature(func)
    params = list(sig.parameters.values())
    if drop_first:
        params = params[1:]
    by_name = {p.name: p for p in params}
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    var_kw = next((p for p in params if p.kind is p.VAR_KEYWORD), None)
    option_keys = frozenset() if var_kw is None else _unpacked_keys(func, var_kw)
    for doc in documented:
        where = f"{key}({doc.name})"
        if doc.kind == "positional":
            assert doc.index < len(positional), f"{where}: no positional parameter {doc.index}"
            ours = positional[doc.index]
            assert ours.name == doc.name, f"{where}: position {doc.index} is {ours.name!r}"
            assert ours.kind is ours.POSITIONAL_OR_KEYWORD, f"{where}: not passable by name"
        elif doc.name in by_name:
            ours = by_name[doc.name]
            assert ours.kind in (ours.POSITIONAL_OR_KEYWORD, ours.KEYWORD_ONLY), where
        else:
            assert doc.name in option_keys, f"{where}: not accepted"
            continue  # an option of the TypedDict: optional, its default documented there
        if doc.default is REQUIRED:
            continue
        assert ours.default is not ours.empty, f"{where}: had a default ({doc.default!r})"
        dev = f"{key}.{doc.name}"
        if dev not in DEFAULT_DEVIATIONS:
            assert ours.default == doc.default, (
                f"{where}: default {ours.default!r}, was {doc.default!r}"
            )
    named = {d.name for d in documented}
    for p in params:
        if p.name in named or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        assert p.default is not p.empty, f"{key}: requires {p.name!r}, which 0.4.0 did not"


_SAMPLES: dict[str, Any] = {
    "str": "x",
    "int": 1,
    "float": 1.5,
    "bool": True,
    "None": None,
}


def _samples(annotation: str) -> list[Any]:
    text = annotation
    if m := re.fullmatch(r"ForwardRef\('(.*)'\)", text):
        text = m.group(1)
    out: list[Any] = []
    for part in (p.strip() for p in text.split("|")):
        if part in _SAMPLES:
            out.append(_SAMPLES[part])
        elif part.startswith("list"):
            out.append([])
        elif part.startswith("dict"):
            out.append({})
    return out


def _field_info(cls: type, name: str) -> tuple[bool, Any, TypeAdapter[Any]]:
    """(required, default, a validator of the field's type)."""
    if issubclass(cls, BaseModel):
        info = _model_field(cls, name)
        ann: Any = info.annotation
        typ = Annotated[(ann, *info.metadata)] if info.metadata else ann
        default = FACTORY if info.default_factory is not None else info.default
        return info.is_required(), default, TypeAdapter(typ)
    assert dataclasses.is_dataclass(cls), f"{cls.__name__} is neither a model nor a dataclass"
    fields = {f.name: f for f in dataclasses.fields(cls)}
    assert name in fields, f"{cls.__name__} has no field {name!r}"
    f = fields[name]
    hints = typing.get_type_hints(cls)
    if f.default is not dataclasses.MISSING:
        return False, f.default, TypeAdapter(hints[name])
    if f.default_factory is not dataclasses.MISSING:
        return False, FACTORY, TypeAdapter(hints[name])
    return True, REQUIRED, TypeAdapter(hints[name])


def _model_field(cls: type[BaseModel], name: str) -> FieldInfo:
    """The field ``name``, or the field that accepts ``name`` as an alias while ``name``
    reads it back as a property (a renamed field, both spellings working)."""
    if name in cls.model_fields:
        return cls.model_fields[name]
    for info in cls.model_fields.values():
        if name in _aliases(info):
            assert isinstance(inspect.getattr_static(cls, name, None), property), (
                f"{cls.__name__}.{name} is accepted but cannot be read back"
            )
            return info
    raise AssertionError(f"{cls.__name__} has no field {name!r}")


def _check_field(key: str, cls: type, member: Member) -> None:
    required, default, adapter = _field_info(cls, member.name)
    if member.default is not REQUIRED:
        assert not required, f"{key}: had a default, required here"
    if member.default is not REQUIRED and member.default is not FACTORY:
        adapter.validate_python(member.default)
        if key not in DEFAULT_DEVIATIONS:
            assert default == member.default, f"{key}: default {default!r}, was {member.default!r}"
    if member.default is REQUIRED:  # a value of the documented type is accepted
        for sample in _samples(member.annotation):
            adapter.validate_python(sample)


def _check_property(cls: type, member: Member) -> None:
    static = inspect.getattr_static(cls, member.name, None)
    if static is None and issubclass(cls, BaseModel):
        assert member.name in cls.model_fields, f"{cls.__name__}.{member.name} missing"
        return
    assert static is not None, f"{cls.__name__}.{member.name} missing"
