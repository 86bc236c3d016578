"""What a backend store is to a :class:`~mnesis.store.pool.StorePool`: a store lent out
over a shared database handle (:class:`Lender`: the pool it goes back to), or one that
owns its handle. :class:`~mnesis.store.shared.wrapper.BackendWrapper` holds both and
closes once: it gives the store back to its pool (the last store given back closes the
handle) or closes the handle it owns.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

__all__ = ["Handle", "Lender"]


class _Closable(Protocol):
    async def close(self) -> None: ...


class Lender(Protocol):
    """A pool that takes its stores back (:meth:`~mnesis.store.pool.StorePool.release`)."""

    async def release(self, store: Any) -> None: ...


Handle = TypeVar("Handle", bound=_Closable)
"""A backend store's database handle (it can be closed)."""
