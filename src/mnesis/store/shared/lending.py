"""What both backend stores are to a :class:`~mnesis.store.pool.StorePool`: a store lent
out over a shared database handle, or one that owns its handle (``pool`` None).

``close()`` runs once: it gives the store back to its pool (the last store given back
closes the handle) or closes the handle it owns.
"""

from __future__ import annotations

from typing import Any, Generic, Protocol, TypeVar

__all__ = ["Lender", "LentStore"]


class _Handle(Protocol):
    async def close(self) -> None: ...


class Lender(Protocol):
    """A pool that takes its stores back (:meth:`~mnesis.store.pool.StorePool.release`)."""

    async def release(self, store: Any) -> None: ...


DB = TypeVar("DB", bound=_Handle)


class LentStore(Generic[DB]):
    """The database handle of a backend store, and who closes it."""

    def __init__(self, db: DB, *, pool: Lender | None, pool_key: str) -> None:
        self.db = db
        self.pool = pool
        self.pool_key = pool_key
        self._released = False

    async def close(self) -> None:
        """Give the store back to its pool, or close the handle it owns; later calls do
        nothing."""
        if self._released:
            return
        self._released = True
        if self.pool is not None:
            await self.pool.release(self)
        else:
            await self.db.close()
