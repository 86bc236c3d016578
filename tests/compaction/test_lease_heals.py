"""Compaction leases heal: one this process left behind is taken over at once.

Issue 34: disk full made the lease's release fail (``close()`` raised
``StoreFullError``); once space returned, ``load(...).compact()`` in the same process
answered "another compactor holds session …'s lock" until the lease expired (420 s):
takeover happened only for dead processes. ``mnesis check`` now shows each lease's
holder and age.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mnesis import MnesisSession, StorePool
from mnesis.cli import app
from mnesis.compaction.lease import CompactionLease
from mnesis.errors import CompactionLockedError, StoreFullError
from mnesis.models.ids import new_id

TTL = 420.0


async def _failing_release(*_: Any) -> None:
    raise StoreFullError("database or disk is full")


async def test_a_lease_whose_release_failed_is_taken_at_once_and_a_held_one_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db_path = str(tmp_path / "lease.db")
    pool = StorePool()
    session = await MnesisSession.create(model="fake/m", db_path=db_path, pool=pool)
    store = session.store
    first, second = CompactionLease(store), CompactionLease(store)

    with monkeypatch.context() as patch:
        patch.setattr(store.backend, "release_compaction_lock", _failing_release)
        async with first.hold(session.id, TTL):
            # Held by a running block of this process: never taken over.
            with pytest.raises(CompactionLockedError):
                async with second.hold(session.id, TTL):
                    pass
    leases = await store.compaction_leases()
    assert [(lease.session_id, lease.owner) for lease in leases] == [(session.id, first.owner)], (
        "the failed release left the lease row behind"
    )

    async with second.hold(session.id, TTL):
        assert [lease.owner for lease in await store.compaction_leases()] == [second.owner]
    assert await store.compaction_leases() == []
    await session.close()
    await pool.close_all()


async def _leave_a_lease(db_path: str, owner: str) -> str:
    pool = StorePool()
    session = await MnesisSession.create(model="fake/m", db_path=db_path, pool=pool)
    assert await session.store.acquire_compaction_lock(session.id, owner, TTL)
    await session.close()
    await pool.close_all()
    return session.id


def test_check_shows_each_lease_with_its_holder_and_age(tmp_path: Path) -> None:
    db_path = str(tmp_path / "lease.db")
    gone = f"{socket.gethostname()}:{2**22 + 7}:{new_id('run')}"
    session_id = asyncio.run(_leave_a_lease(db_path, gone))

    result = CliRunner().invoke(app, ["check", "--db", db_path, "--json"])
    assert result.exit_code == 0, result.output
    (lease,) = json.loads(result.output)["compaction_leases"]
    assert lease["session_id"] == session_id
    assert lease["holder"] == gone
    assert 0 <= lease["age_seconds"] < 600
    assert 0 < lease["expires_in_seconds"] <= TTL
    assert lease["holder_gone"] is (not os.path.exists(f"/proc/{2**22 + 7}"))

    text = CliRunner().invoke(app, ["check", "--db", db_path])
    shown = " ".join(text.output.split())
    assert f"compaction lease on session {session_id}: held by {gone} for " in shown
    assert "expires in" in shown
