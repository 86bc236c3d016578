"""``AgenticMap``: one full sub-session per input, in parallel, resumable after a crash.

Invariants:

* Each input gets an ordinary :class:`~mnesis.MnesisSession` (``parent_id`` =
  ``parent_session_id``) with its own history and compaction. All of them share
  one :class:`~mnesis.store.StorePool`, hence one connection and one writer per
  database file: parallel sub-sessions never see "database is locked".
* The caller sees only each sub-agent's final text, plus its ``session_id`` for
  audit; the whole sub-conversation stays in the store.
* Every item's state is stored in ``map_items`` (see :mod:`mnesis.store.map_runs`) before and
  after each attempt. Running the same ``run_id`` again resumes the run: completed
  items are returned from the store and never run again; items a dead process left
  ``running`` are run again, their lost attempt counted in ``attempts``.
* Sub-agents never spawn sub-agents: ``lcm_expand_query`` is neither offered nor
  executed. With ``read_only=True`` they are offered only the ``lcm_*`` retrieval
  tools (mnesis has no general tool executor, so "no mutating tools" means no tool
  but those) and their sessions are created with the agent name suffix ``:ro``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Sequence
from typing import Any, Unpack

from mnesis.config import DEFAULT_DB_PATH, MnesisConfig, OperatorConfig
from mnesis.errors import InvalidArgumentError
from mnesis.events.bus import EventBus
from mnesis.llm import LLMClient, resolve_client
from mnesis.operators.active_runs import ACTIVE_RUNS
from mnesis.operators.agentic_item import ItemWorker, stored_result
from mnesis.operators.agentic_plan import (
    DEFAULT_AGENT,
    DEFAULT_SYSTEM_PROMPT,
    PER_RUN_STORE,
    AgenticMapOptions,
    AgentPlan,
    ToolHandler,
    plan_run,
)
from mnesis.operators.checks import check_event_bus, check_model, operator_config
from mnesis.operators.concurrency import iterate
from mnesis.operators.results import AgentMapBatch, AgentMapResult
from mnesis.operators.runner import MapRun, collect_batch
from mnesis.store.map_runs import ItemRow, MapRunStore
from mnesis.store.pool import StorePool

__all__ = ["DEFAULT_AGENT", "DEFAULT_SYSTEM_PROMPT", "AgenticMap", "ToolHandler"]


class AgenticMap:
    """Run a full multi-turn sub-session for every input, in parallel.

    ``config`` gives ``agentic_map_concurrency`` and ``max_retries``; ``event_bus``,
    if given, receives ``map.started``, ``map.item_completed`` and ``map.completed``.
    Sub-sessions use ``model`` (given here or per :meth:`run`), the client ``llm`` (default: the one
    :func:`~mnesis.llm.resolve_client` picks), ``session_config`` (default:
    :meth:`MnesisConfig.from_env`) and the database ``db_path`` (default:
    ``session_config.store.db_path``) through ``pool`` (default: the process-wide
    pool, shared with the caller's own sessions on that file).
    """

    def __init__(
        self,
        config: OperatorConfig | MnesisConfig | None = None,
        event_bus: EventBus | None = None,
        model: str | None = None,
        *,
        db_path: str | None = None,
        pool: StorePool | None = None,
        llm: LLMClient | None = None,
        session_config: MnesisConfig | None = None,
    ) -> None:
        self._config = operator_config(config)
        self._bus = check_event_bus(event_bus)
        if model is not None:
            check_model(model)
        if pool is not None and not isinstance(pool, StorePool):
            raise InvalidArgumentError(f"pool must be a StorePool, got {type(pool).__name__}")
        if session_config is not None and not isinstance(session_config, MnesisConfig):
            raise InvalidArgumentError(
                f"session_config must be a MnesisConfig, got {type(session_config).__name__}"
            )
        sub_config = (
            session_config.model_copy(deep=True)
            if session_config is not None
            else MnesisConfig.from_env()
        )
        if db_path is not None:
            if not isinstance(db_path, str) or not db_path.strip() or "\x00" in db_path:
                raise InvalidArgumentError(f"db_path must be a non-empty path, got {db_path!r}")
            configured = sub_config.store.db_path
            if session_config is not None and configured not in (DEFAULT_DB_PATH, db_path):
                raise InvalidArgumentError(
                    "give either db_path or session_config.store.db_path, not both "
                    f"({db_path!r} vs {configured!r})"
                )
            sub_config.store.db_path = db_path
        self._model = model
        self._pool = pool
        self._llm = llm
        self._session_config = sub_config

    # -- public API -----------------------------------------------------------
    def run(
        self,
        inputs: Sequence[Any],
        agent_prompt_template: str,
        **options: Unpack[AgenticMapOptions],
    ) -> AsyncGenerator[AgentMapResult, None]:
        """Run one sub-session per input; yields results in completion order.

        Each sub-session receives the rendered template (``item``, ``index``) as its
        first message. While the model asks for tools, the calls are executed
        (``lcm_*`` by the session, others by ``tool_handler``) and another turn is
        sent, up to ``max_turns`` turns. A failed attempt (model error, …) is retried
        in a fresh sub-session up to ``max_retries`` times; then the item is
        ``failed``. The keyword ``options`` are those of
        :class:`~mnesis.operators.AgenticMapOptions`.

        Pass your own ``run_id`` (e.g. ``new_id("run")``) to be able to resume: calling
        ``run`` again with it and the same inputs and template returns the items
        finished earlier (``resumed=True``) and runs only the rest. Failed items stay
        failed unless ``retry_failed=True``. Inputs must be JSON-serialisable (they
        are stored).

        Raises :class:`~mnesis.errors.InvalidArgumentError` immediately for a
        template without ``{{ item }}`` or any bad argument
        (:class:`~mnesis.operators.UnknownOptionError` for a keyword that is no
        option); when iteration starts, for a ``run_id`` already running in this
        process or stored with other inputs, and
        :class:`~mnesis.errors.SessionNotFoundError` for an unknown parent.
        """
        target = self._for_run(options)
        plan = plan_run(self._config, self._model, inputs, agent_prompt_template, options)
        return target._stream(plan)

    async def run_all(
        self,
        inputs: Sequence[Any],
        agent_prompt_template: str,
        **options: Unpack[AgenticMapOptions],
    ) -> AgentMapBatch:
        """Like :meth:`run`, collected into an :class:`AgentMapBatch` sorted by ``index``."""
        target = self._for_run(options)
        plan = plan_run(
            self._config, self._model, inputs, agent_prompt_template, options, "AgenticMap.run_all"
        )
        return await collect_batch(target._stream(plan), plan.run_id, AgentMapBatch)

    def _for_run(self, options: AgenticMapOptions) -> AgenticMap:
        """This operator, or, when the run names its own store (0.4.0's per-run
        ``lcm_config`` / ``db_path`` / ``pool``), one like it over that store."""
        if all(options.get(name) is None for name in PER_RUN_STORE):
            return self
        config = options.get("lcm_config")
        if config is not None and not isinstance(config, MnesisConfig):
            raise InvalidArgumentError(
                f"lcm_config must be a MnesisConfig, got {type(config).__name__}"
            )
        sub_config = (config or self._session_config).model_copy(deep=True)
        db_path = options.get("db_path")
        if db_path is not None:
            if not isinstance(db_path, str) or not db_path.strip() or "\x00" in db_path:
                raise InvalidArgumentError(f"db_path must be a non-empty path, got {db_path!r}")
            sub_config.store.db_path = db_path
        pool = options.get("pool")
        return AgenticMap(
            self._config,
            self._bus,
            self._model,
            pool=pool if pool is not None else self._pool,
            llm=self._llm,
            session_config=sub_config,
        )

    # -- execution ------------------------------------------------------------
    async def _stream(self, plan: AgentPlan) -> AsyncGenerator[AgentMapResult, None]:
        pool = self._pool or StorePool.default()
        store = await pool.acquire(self._session_config.store)
        try:
            with ACTIVE_RUNS.hold(store.location, plan.run_id):
                if plan.parent_id is not None:
                    await store.get_session(plan.parent_id)  # SessionNotFoundError if absent
                runs = store.map_runs
                rows, existed = await runs.start(
                    plan.run_id,
                    kind="agentic",
                    config=plan.config_record(),
                    inputs=plan.input_json,
                    fixed_keys=("template",),
                    retry_failed=plan.retry_failed,
                )
                # aclosing: if the consumer stops early, the workers must be stopped
                # (and their items released) before the store is given back below.
                execution = self._execute(plan, runs, pool, rows, existed)
                async with contextlib.aclosing(execution) as results:
                    async for result in results:
                        yield result
        finally:
            await store.close()

    async def _execute(
        self,
        plan: AgentPlan,
        runs: MapRunStore,
        pool: StorePool,
        rows: list[ItemRow],
        existed: bool,
    ) -> AsyncGenerator[AgentMapResult, None]:
        runnable = ("pending", "running", "failed") if plan.retry_failed else ("pending", "running")
        todo = [row for row in rows if row.state in runnable]
        done = [row for row in rows if row.state not in runnable]
        run = MapRun("agentic_map", plan.run_id, self._bus)
        run.start(
            len(rows),
            to_run=len(todo),
            resumed=existed,
            model=plan.model,
            concurrency=plan.concurrency,
        )
        for row in done:
            run.count(row.state == "completed")
            yield stored_result(plan, row)
        worker = ItemWorker(
            plan=plan,
            runs=runs,
            pool=pool,
            client=resolve_client(plan.model, self._llm),
            session_config=self._session_config,
        )
        mapped = run.map(
            iterate(todo),
            worker.run,
            concurrency=plan.concurrency,
            total=len(rows),
            details=lambda result: {"session_id": result.session_id},
        )
        async with contextlib.aclosing(mapped) as results:
            async for result in results:
                yield result
        run.finish(len(rows))
