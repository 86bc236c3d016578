"""Commands imported when they run: ``mnesis --help`` lists them from a table instead.

Each command module pulls in the store, the session or the importers (hundreds of modules);
``mnesis --help`` and ``mnesis --version`` need none of them. :class:`LazyGroup` is the
root click group: its ``commands`` mapping imports a command's module on first lookup and
builds the click command exactly as ``app.command(name)`` / ``app.add_typer`` would; while
the group's own help is printed, a command not yet imported is listed from its
:class:`Entry` summary. ``tests/cli/test_lazy.py`` checks that the summaries are the
commands' own help.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any, ClassVar

import typer
from typer.core import TyperCommand, TyperGroup
from typer.main import get_command_from_info, get_group_from_info

__all__ = ["Entry", "LazyCommands", "LazyGroup", "load_target"]

Command = Any
"""A click command (recent typer vendors click, so its class is not named here)."""


@dataclass(frozen=True)
class Entry:
    """One command of the table: where it lives and how the root help lists it."""

    target: str
    """``"module:attribute"``: a command function, or a ``typer.Typer`` of sub-commands."""
    summary: str
    """The first paragraph of its help on one line, as the root help shows it."""


def load_target(target: str) -> Any:
    """Import ``"module:attribute"`` and return the attribute."""
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _build(name: str, target: Any, settings: dict[str, Any]) -> Command:
    """The click command typer builds for ``target`` under an app made with ``settings``."""
    holder = typer.Typer(**settings)
    if isinstance(target, typer.Typer):
        holder.add_typer(target, name=name)
        return get_group_from_info(
            holder.registered_groups[0],
            pretty_exceptions_short=holder.pretty_exceptions_short,
            rich_markup_mode=holder.rich_markup_mode,
            suggest_commands=holder.suggest_commands,
        )
    holder.command(name)(target)
    return get_command_from_info(
        holder.registered_commands[0],
        pretty_exceptions_short=holder.pretty_exceptions_short,
        rich_markup_mode=holder.rich_markup_mode,
    )


class LazyCommands(MutableMapping[str, Command]):
    """``name -> click command``, in the table's order; a command is built on first lookup."""

    def __init__(self, table: dict[str, Entry], settings: dict[str, Any]) -> None:
        self._table = table
        self._settings = settings
        self._built: dict[str, Command] = {}

    def __getitem__(self, name: str) -> Command:
        if name not in self._built:
            entry = self._table[name]
            self._built[name] = _build(name, load_target(entry.target), self._settings)
        return self._built[name]

    def __setitem__(self, name: str, command: Command) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        raise TypeError("the CLI's commands are fixed by its table")

    def __iter__(self) -> Iterator[str]:
        yield from self._table
        yield from (name for name in self._built if name not in self._table)

    def __len__(self) -> int:
        return len(self._table.keys() | self._built.keys())

    def __contains__(self, name: object) -> bool:
        return name in self._table or name in self._built

    def is_built(self, name: str) -> bool:
        """Whether ``name``'s module has been imported and its command built."""
        return name in self._built

    def listed(self, name: str) -> Command | None:
        """The command if built, else a stand-in with its summary (for the help listing)."""
        if name in self._built:
            return self._built[name]
        entry = self._table.get(name)
        return None if entry is None else TyperCommand(name, help=entry.summary)


class LazyGroup(TyperGroup):
    """The root group; a subclass sets :attr:`table` and the app's :attr:`settings`."""

    table: ClassVar[dict[str, Entry]] = {}
    settings: ClassVar[dict[str, Any]] = {}

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        lazy = LazyCommands(self.table, self.settings)
        lazy.update(self.commands)
        self.commands = lazy
        self._listing = False

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)

    def get_command(self, ctx: Any, cmd_name: str) -> Command | None:
        if self._listing:
            assert isinstance(self.commands, LazyCommands)
            return self.commands.listed(cmd_name)
        return self.commands.get(cmd_name)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False
