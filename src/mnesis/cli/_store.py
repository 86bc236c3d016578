"""Opening the database for a command: read-only for inspection, writable for changes.

Every command body is an ``async`` function of an :class:`ImmutableStore`; these
helpers resolve ``--db``, open the store the right way, run the body, close the store
and turn mnesis errors into one friendly line (see :func:`~mnesis.cli._common.fail`).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

from mnesis.cli._common import checked_database
from mnesis.config import MnesisConfig
from mnesis.store.immutable import ImmutableStore
from mnesis.store.readonly import open_read_only

__all__ = ["progress_bar", "run_read_only", "run_writable"]

T = TypeVar("T")
Body = Callable[[ImmutableStore, MnesisConfig], Awaitable[T]]


async def _with_read_only(config: MnesisConfig, body: Body[T]) -> T:
    store = await open_read_only(config.store)
    try:
        return await body(store, config)
    finally:
        await store.close()


async def _with_writable(config: MnesisConfig, body: Body[T]) -> T:
    store = ImmutableStore(config.store)
    await store.initialize()
    try:
        return await body(store, config)
    finally:
        await store.close()


def run_read_only(db: str | None, body: Body[T]) -> tuple[T, str]:
    """Run ``body`` on the database opened read-only; returns its result and the location.

    A missing file, a directory, an empty or foreign file is one error line (exit 1);
    nothing on disk is created or changed."""
    with checked_database(db, must_exist=True) as (config, location):
        return asyncio.run(_with_read_only(config, body)), location


def run_writable(db: str | None, body: Body[T], *, must_exist: bool = True) -> tuple[T, str]:
    """Run ``body`` on the database opened for writing (``must_exist=False``: a missing
    SQLite file is created)."""
    with checked_database(db, must_exist=must_exist) as (config, location):
        return asyncio.run(_with_writable(config, body)), location


@contextmanager
def progress_bar(description: str, total: float | None) -> Iterator[Callable[[float], None]]:
    """A progress bar on stderr when it is a terminal (silent when piped); yields a
    function that sets the completed amount."""
    if not sys.stderr.isatty():
        yield lambda done: None
        return
    columns = (
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeRemainingColumn(),
    )
    console = Console(stderr=True)
    with Progress(*columns, console=console, transient=True, redirect_stdout=False) as bar:
        task = bar.add_task(description, total=total)
        yield lambda done: bar.update(task, completed=done)
