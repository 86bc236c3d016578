"""Helpers of the retrieval tests: a session on the test's store, the candidate search's
query, and a store that counts what ``grep`` asks its backend."""

from __future__ import annotations

import inspect
from collections import Counter
from typing import Any

from mnesis import MnesisConfig, MnesisSession, StorePool
from mnesis.store.base import StoreBackend
from mnesis.store.immutable import ImmutableStore
from mnesis.store.search_query import SearchQuery, Term

__all__ = ["counting_store", "levels_query", "new_session"]


async def new_session(db_path: str, pool: StorePool) -> MnesisSession:
    return await MnesisSession.create(
        model="fake/m", db_path=db_path, pool=pool, config=MnesisConfig()
    )


def levels_query(*words: str, at_least: int = 1, context: bool = True) -> SearchQuery:
    """The shape of ``grep``'s candidate search: any of ``words``, level by level."""
    return SearchQuery(
        any_of=tuple(Term.word(w) for w in words),
        at_least=at_least,
        include_context=context,
        newest_first=True,
        group_limit=5,
        descending=True,
    )


def counting_store(backend: StoreBackend) -> tuple[ImmutableStore, Counter[str]]:
    """A facade over ``backend`` that counts each call it makes to it (by method name);
    every call goes on to the real backend. Closing the facade leaves ``backend`` open."""
    calls: Counter[str] = Counter()

    def forward(name: str) -> Any:
        real = getattr(backend, name)
        if inspect.iscoroutinefunction(real):

            async def call_async(self: StoreBackend, *args: Any, **kwargs: Any) -> Any:
                calls[name] += 1
                return await real(*args, **kwargs)

            return call_async

        def call(self: StoreBackend, *args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return real(*args, **kwargs)

        return call

    properties = ("location", "map_runs", "vectors")
    namespace: dict[str, Any] = {
        name: forward(name) for name in StoreBackend.__abstractmethods__ if name not in properties
    }
    for name in properties:
        namespace[name] = property(lambda self, name=name: getattr(backend, name))

    async def close(self: StoreBackend) -> None:
        return None

    namespace["close"] = close
    counting = type("CountingBackend", (StoreBackend,), namespace)()
    return ImmutableStore.over(counting), calls
