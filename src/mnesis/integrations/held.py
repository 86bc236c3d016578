"""The mnesis sessions an adapter keeps open, and its registry's store: what
:mod:`mnesis.integrations.google_adk` and :mod:`mnesis.integrations.langgraph_store` both
hold between their framework's calls."""

from __future__ import annotations

from mnesis.config import MnesisConfig
from mnesis.integrations.registry import FORMAT, Registry
from mnesis.llm.resolve import ClientLike
from mnesis.session import MnesisSession
from mnesis.store.pool import StorePool

__all__ = ["Held"]


class Held:
    """Sessions opened on one store (``db_path`` or ``config.store``), kept open until
    :meth:`close`; the registry rows of format ``fmt`` on the same store."""

    def __init__(
        self,
        db_path: str | None,
        config: MnesisConfig | None,
        pool: StorePool | None,
        llm: ClientLike | None = None,
        fmt: str = FORMAT,
    ) -> None:
        """Nothing is opened before the first call."""
        self.db_path = db_path
        self.config = config
        self.pool = pool
        self.llm = llm
        self._fmt = fmt
        self._registry: Registry | None = None
        self._open: dict[str, MnesisSession] = {}

    async def registry(self) -> Registry:
        """The registry rows (their store acquired from the pool on first use)."""
        if self._registry is None:
            store = await (self.pool or StorePool.default()).acquire(
                self.db_path, config=(self.config or MnesisConfig()).store
            )
            self._registry = Registry(store, self._fmt)
        return self._registry

    async def create(
        self, model: str, agent: str, system_prompt: str, parent_id: str | None = None
    ) -> MnesisSession:
        """A new session, kept open."""
        session = await MnesisSession.create(
            model=model,
            agent=agent,
            parent_id=parent_id,
            config=self.config,
            system_prompt=system_prompt,
            db_path=self.db_path,
            pool=self.pool,
            llm=self.llm,
        )
        self._open[session.id] = session
        return session

    async def session(self, session_id: str) -> MnesisSession:
        """The open session ``session_id`` (loaded and kept open if it was not)."""
        if session_id not in self._open:
            self._open[session_id] = await MnesisSession.load(
                session_id,
                config=self.config,
                db_path=self.db_path,
                pool=self.pool,
                llm=self.llm,
            )
        return self._open[session_id]

    async def forget(self, session_id: str) -> None:
        """Close ``session_id`` if it is open here."""
        opened = self._open.pop(session_id, None)
        if opened is not None:
            await opened.close()

    async def close(self) -> None:
        """Close every session opened here, then release the registry's store."""
        opened, self._open = self._open, {}
        for session in opened.values():
            await session.close()
        if self._registry is not None:
            await self._registry.store.close()
            self._registry = None
