"""Retrieval, the ``lcm_*`` agent tools and child sessions of a :class:`MnesisSession`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from mnesis.config import MnesisConfig
from mnesis.errors import InvalidArgumentError
from mnesis.files import FileHandleResult, LargeFileHandler
from mnesis.llm import LLMClient
from mnesis.retrieval.engine import RetrievalEngine
from mnesis.retrieval.results import DescribeResult, ExpandQueryResult, ExpandResult, GrepResult
from mnesis.retrieval.tools import LCM_TOOL_NAMES, anthropic_tools, execute_lcm_tool, openai_tools
from mnesis.store.immutable import ImmutableStore
from mnesis.store.pool import StorePool
from mnesis.tokens.estimator import TokenEstimator

if TYPE_CHECKING:
    from mnesis.session import MnesisSession

__all__ = ["ToolsMixin"]


class ToolsMixin:
    """Describe / grep / expand, ``lcm_*`` tool calls and child sessions (part of
    :class:`~mnesis.session.MnesisSession`)."""

    # Set up by MnesisSession.__init__; declared here for the type checker.
    _config: MnesisConfig
    _store: ImmutableStore
    _estimator: TokenEstimator
    _llm: LLMClient
    _pool: StorePool
    _db_path: str
    _retrieval: RetrievalEngine
    _tool_engine: RetrievalEngine
    _tool_token_cap: int | None
    _files: LargeFileHandler | None
    tool_calls_run: int

    if TYPE_CHECKING:

        @property
        def id(self) -> str: ...

        @property
        def model(self) -> str: ...

        def _check_open(self) -> None: ...

    # -- retrieval ----------------------------------------------------------
    async def describe(self, object_id: str) -> DescribeResult:
        """Describe a summary, message or file ID (see :meth:`RetrievalEngine.describe`)."""
        self._check_open()
        return await self._retrieval.describe(object_id)

    async def grep(self, query: str, **kwargs: Any) -> GrepResult:
        """Search this session's history (see :meth:`RetrievalEngine.grep`)."""
        self._check_open()
        return await self._retrieval.grep(query, **kwargs)

    async def expand(
        self,
        summary_id: str,
        *,
        depth: int = 1,
        include_messages: bool = True,
        token_cap: int | None = None,
    ) -> ExpandResult:
        """Open a summary (see :meth:`RetrievalEngine.expand`)."""
        self._check_open()
        return await self._retrieval.expand(
            summary_id, depth=depth, include_messages=include_messages, token_cap=token_cap
        )

    async def handle_file(self, path: str) -> FileHandleResult:
        """Inline a small file or turn a large one into a content-addressed ``FileRefPart``.

        Put ``result.file_ref`` (or a ``TextPart`` of ``result.inline_content``) into the
        next ``send``/``record``; the file's ID then flows into summaries and
        ``describe(file_id)`` returns its structural summary.
        """
        self._check_open()
        if self._files is None:
            self._files = LargeFileHandler(self._store, self._estimator, self._config.file)
        return await self._files.handle_file(path, session_id=self.id)

    # -- agent tools --------------------------------------------------------
    def lcm_tool_definitions(
        self, *, format: str = "openai", exclude: Sequence[str] = ()
    ) -> list[dict[str, Any]]:
        """Definitions of ``lcm_grep``/``lcm_describe``/``lcm_expand``/``lcm_expand_query``
        in the ``"openai"`` (litellm) or ``"anthropic"`` format."""
        names = [n for n in sorted(LCM_TOOL_NAMES) if n not in exclude]
        if format == "openai":
            return openai_tools(names)
        if format == "anthropic":
            return anthropic_tools(names)
        raise InvalidArgumentError(f"format must be 'openai' or 'anthropic', got {format!r}")

    async def execute_tool(self, name: str, arguments: dict[str, Any] | str | None) -> str:
        """Run an ``lcm_*`` tool call against this session; returns JSON for the model.

        Errors are reported inside the JSON (``{"error": ...}``), never raised.
        """
        self._check_open()
        self.tool_calls_run += 1

        async def _expand_query(kw: dict[str, Any]) -> dict[str, Any]:
            result = await self.expand_query(**kw)
            return result.model_dump()

        return await execute_lcm_tool(
            self._tool_engine,
            name,
            arguments,
            expand_query=_expand_query if self._tool_engine is self._retrieval else None,
            max_token_cap=self._tool_token_cap,
        )

    async def expand_query(
        self,
        prompt: str,
        *,
        query: str | None = None,
        summary_ids: Sequence[str] | None = None,
        token_cap: int | None = None,
        max_answer_tokens: int = 800,
        timeout: float = 120.0,
    ) -> ExpandQueryResult:
        """Answer a narrow question about compacted history with a bounded sub-agent.

        See :func:`mnesis.retrieval.subagent.expand_query`.
        """
        self._check_open()
        from mnesis.retrieval.subagent import expand_query

        return await expand_query(
            cast("MnesisSession", self),
            prompt,
            query=query,
            summary_ids=summary_ids,
            token_cap=token_cap,
            max_answer_tokens=max_answer_tokens,
            timeout=timeout,
        )

    async def spawn_child(self, *, agent: str, system_prompt: str) -> MnesisSession:
        """A new session whose ``parent_id`` is this one, on the same store and model."""
        self._check_open()
        from mnesis.session import MnesisSession

        config = self._config.model_copy(deep=True)
        config.store.db_path = self._db_path
        return await MnesisSession.create(
            model=self.model,
            agent=agent,
            parent_id=self.id,
            config=config,
            system_prompt=system_prompt,
            pool=self._pool,
            llm=self._llm,
        )

    def use_tool_engine(self, engine: RetrievalEngine, *, max_token_cap: int | None = None) -> None:
        """Run this session's ``lcm_*`` tool calls against ``engine`` (a restricted grant)."""
        self._tool_engine = engine
        self._tool_token_cap = max_token_cap
