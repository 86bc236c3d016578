"""Durable state of :class:`~mnesis.operators.AgenticMap` runs: the interface backends implement.

Two tables live next to the session tables, in the same database:

* ``map_runs``: one row per run (``config`` is the JSON of what was asked);
* ``map_items``: one row per input, keyed ``(run_id, idx)``.

Invariants every backend keeps:

* An item moves ``pending → running → completed | failed``; only :meth:`MapRunStore.claim`
  moves it to ``running`` and it increments ``attempts`` in the same transaction, so
  ``attempts`` counts every sub-session ever started for the item, including one a killed
  process left ``running``.
* :meth:`~MapRunStore.claim`, :meth:`~MapRunStore.complete` and :meth:`~MapRunStore.fail`
  never touch a ``completed`` row, so an item completes once, however often its run is
  resumed.
* Rows are created with the run in one transaction: a run's items all exist or none do.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mnesis.errors import InvalidArgumentError

__all__ = ["ItemRow", "ItemState", "MapRunStore", "RunStart", "check_same_run"]

ItemState = Literal["pending", "running", "completed", "failed"]


@dataclass(frozen=True, slots=True)
class ItemRow:
    """One ``map_items`` row (``input`` and ``output`` are JSON text)."""

    idx: int
    input: str
    state: ItemState
    attempts: int
    output: str | None
    error: str | None
    session_id: str | None


@dataclass(frozen=True, slots=True)
class RunStart:
    """What :meth:`MapRunStore.start` was asked."""

    run_id: str
    kind: str
    config: dict[str, Any]
    inputs: tuple[str, ...]
    fixed_keys: tuple[str, ...]
    retry_failed: bool

    def config_json(self) -> str:
        """``config`` as it is stored."""
        return json.dumps(self.config, ensure_ascii=False, sort_keys=True)

    def fresh_items(self) -> list[ItemRow]:
        """The items of a run just created."""
        return [
            ItemRow(idx, text, "pending", 0, None, None, None)
            for idx, text in enumerate(self.inputs)
        ]

    def check_resume(self, stored_kind: str, stored_config: str, stored: Sequence[ItemRow]) -> None:
        """Raise unless the stored run (its kind, config JSON and items) is this one."""
        check_same_run(
            self.run_id,
            stored_kind=stored_kind,
            stored_config=json.loads(stored_config),
            stored_inputs=[r.input for r in stored],
            kind=self.kind,
            config=self.config,
            inputs=self.inputs,
            fixed_keys=self.fixed_keys,
        )


class MapRunStore(ABC):
    """Reads and writes ``map_runs`` / ``map_items`` (``store.map_runs``)."""

    async def start(
        self,
        run_id: str,
        *,
        kind: str,
        config: dict[str, Any],
        inputs: Sequence[str],
        fixed_keys: Sequence[str] = (),
        retry_failed: bool = False,
    ) -> tuple[list[ItemRow], bool]:
        """Create the run with one ``pending`` item per input, or load it if it exists.

        Returns the items (by ``idx``, as they were before this call) and whether the run
        already existed. Resuming requires the same ``kind``, the same inputs (JSON text)
        and the same values of ``fixed_keys`` in ``config`` (see :func:`check_same_run`),
        else :class:`~mnesis.errors.InvalidArgumentError`. With ``retry_failed`` the run's
        ``failed`` items become ``pending`` again.
        """
        return await self._start(
            RunStart(run_id, kind, config, tuple(inputs), tuple(fixed_keys), retry_failed)
        )

    @abstractmethod
    async def _start(self, request: RunStart) -> tuple[list[ItemRow], bool]:
        """:meth:`start` in one transaction of the backend."""

    @abstractmethod
    async def claim(self, run_id: str, idx: int) -> int | None:
        """Mark the item ``running`` for a new attempt; returns its attempt count, or
        ``None`` if it is already ``completed`` or ``failed``."""

    @abstractmethod
    async def attach_session(self, run_id: str, idx: int, session_id: str) -> None:
        """Record the sub-session of the running attempt."""

    @abstractmethod
    async def note_error(self, run_id: str, idx: int, error: str) -> None:
        """Record the error of a failed attempt that will be retried."""

    @abstractmethod
    async def complete(self, run_id: str, idx: int, output: str, session_id: str) -> None:
        """Mark a ``running`` item ``completed`` with its output (JSON text)."""

    @abstractmethod
    async def fail(self, run_id: str, idx: int, error: str) -> None:
        """Mark the item ``failed`` (it will not run again unless retried explicitly)."""

    @abstractmethod
    async def release(self, run_id: str, idx: int) -> None:
        """Put an interrupted (cancelled) attempt back to ``pending``."""

    @abstractmethod
    async def items(self, run_id: str) -> list[ItemRow]:
        """Every item of the run, by ``idx`` (empty if the run does not exist)."""


def check_same_run(
    run_id: str,
    *,
    stored_kind: str,
    stored_config: dict[str, Any],
    stored_inputs: Sequence[str],
    kind: str,
    config: dict[str, Any],
    inputs: Sequence[str],
    fixed_keys: Sequence[str],
) -> None:
    """Raise :class:`InvalidArgumentError` unless a resumed run asks for what was stored."""
    if stored_kind != kind:
        raise InvalidArgumentError(
            f"run {run_id!r} is a {stored_kind!r} run, not {kind!r}; use a new run_id"
        )
    for key in fixed_keys:
        if stored_config.get(key) != config.get(key):
            raise InvalidArgumentError(
                f"run {run_id!r} was started with {key}={stored_config.get(key)!r}; resume it "
                f"with the same value (got {config.get(key)!r}) or use a new run_id"
            )
    if len(stored_inputs) != len(inputs):
        raise InvalidArgumentError(
            f"run {run_id!r} has {len(stored_inputs)} inputs but {len(inputs)} were given; "
            "resume it with the same inputs or use a new run_id"
        )
    for idx, (old, new) in enumerate(zip(stored_inputs, inputs, strict=True)):
        if old != new:
            raise InvalidArgumentError(
                f"input {idx} of run {run_id!r} differs from the one stored "
                f"({old[:80]!r} vs {new[:80]!r}); resume it with the same inputs"
            )
