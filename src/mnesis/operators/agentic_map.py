"""``AgenticMap``: one full sub-session per input, in parallel, resumable after a crash.

Invariants:

* Each input gets an ordinary :class:`~mnesis.MnesisSession` (``parent_id`` =
  ``parent_session_id``) with its own history and compaction. All of them share
  one :class:`~mnesis.store.StorePool`, hence one connection and one writer per
  database file: parallel sub-sessions never see "database is locked".
* The caller sees only each sub-agent's final text, plus its ``session_id`` for
  audit; the whole sub-conversation stays in the store.
* Every item's state is stored in ``map_items`` (see :mod:`.run_store`) before and
  after each attempt. Running the same ``run_id`` again resumes the run: completed
  items are returned from the store and never run again; items a dead process left
  ``running`` are run again, their lost attempt counted in ``attempts``.
* Sub-agents never spawn sub-agents: ``lcm_expand_query`` is neither offered nor
  executed. With ``read_only=True`` they are offered only the ``lcm_*`` retrieval
  tools (mnesis has no general tool executor, so "no mutating tools" means no tool
  but those) and their sessions are created with the agent name suffix ``:ro``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mnesis.config import DEFAULT_DB_PATH, MnesisConfig, OperatorConfig
from mnesis.errors import InvalidArgumentError, MnesisError
from mnesis.events.bus import EventBus, MnesisEvent
from mnesis.llm import LLMClient, resolve_client
from mnesis.models.ids import is_valid_id, new_id
from mnesis.models.parts import ToolPart
from mnesis.models.tokens import TokenUsage
from mnesis.operators.llm_map import bounded_map
from mnesis.operators.results import AgentMapBatch, AgentMapResult
from mnesis.operators.run_store import ItemRow, MapRunStore
from mnesis.operators.template import ItemTemplate, TemplateError
from mnesis.retrieval.engine import RetrievalEngine
from mnesis.retrieval.tools import LCM_TOOL_NAMES
from mnesis.session import MnesisSession
from mnesis.store.pool import StorePool
from mnesis.store.sqlite import SQLiteStore

__all__ = ["DEFAULT_AGENT", "DEFAULT_SYSTEM_PROMPT", "AgenticMap", "ToolHandler"]

logger = logging.getLogger("mnesis.operators")

ToolHandler = Callable[[str, dict[str, Any]], Awaitable[str] | str]
"""``handler(tool_name, arguments) -> output text`` for the caller's own tools."""

DEFAULT_AGENT = "agentic-map"
DEFAULT_SYSTEM_PROMPT = (
    "You are a sub-agent working on one item of a larger task. Work on the item you are "
    "given, use the tools offered if they help, and finish with your final answer."
)
_CONTINUE = "The tool results are above. Continue, and give your final answer when done."
_RETRIEVAL_TOOLS = tuple(sorted(LCM_TOOL_NAMES - {"lcm_expand_query"}))

# Runs executing in this process, by (database path, run_id): a second concurrent
# run() of the same run would claim the same items.
_ACTIVE_RUNS: set[tuple[str, str]] = set()


@dataclass(frozen=True, slots=True)
class _Plan:
    run_id: str
    template: ItemTemplate
    inputs: list[Any]
    input_json: list[str]
    model: str
    agent: str
    system_prompt: str
    read_only: bool
    tools: tuple[dict[str, Any], ...]
    tool_handler: ToolHandler | None
    max_turns: int
    max_attempts: int
    concurrency: int
    parent_id: str | None
    retry_failed: bool

    def config_record(self) -> dict[str, Any]:
        return {
            "template": self.template.source,
            "model": self.model,
            "agent": self.agent,
            "read_only": self.read_only,
            "max_turns": self.max_turns,
            "parent_session_id": self.parent_id,
            "total": len(self.inputs),
        }


@dataclass(frozen=True, slots=True)
class _Outcome:
    session_id: str
    text: str
    turns: int
    usage: TokenUsage
    finish_reason: str


class AgenticMap:
    """Run a full multi-turn sub-session for every input, in parallel.

    ``config`` gives ``agentic_map_concurrency`` and ``max_retries``; ``event_bus``,
    if given, receives ``map.started``, ``map.item_completed`` and ``map.completed``.
    Sub-sessions use ``model``, the client ``llm`` (default: the one
    :func:`~mnesis.llm.resolve_client` picks), ``session_config`` (default:
    :meth:`MnesisConfig.from_env`) and the database ``db_path`` (default:
    ``session_config.store.db_path``) through ``pool`` (default: the process-wide
    pool, shared with the caller's own sessions on that file).
    """

    def __init__(
        self,
        config: OperatorConfig | MnesisConfig | None = None,
        event_bus: EventBus | None = None,
        *,
        model: str,
        db_path: str | None = None,
        pool: StorePool | None = None,
        llm: LLMClient | None = None,
        session_config: MnesisConfig | None = None,
    ) -> None:
        if config is None:
            self._config = OperatorConfig()
        elif isinstance(config, MnesisConfig):
            self._config = config.operators
        elif isinstance(config, OperatorConfig):
            self._config = config
        else:
            raise InvalidArgumentError(
                f"config must be an OperatorConfig (or MnesisConfig), got {type(config).__name__}"
            )
        if event_bus is not None and not isinstance(event_bus, EventBus):
            raise InvalidArgumentError(
                f"event_bus must be an EventBus, got {type(event_bus).__name__}"
            )
        if not isinstance(model, str) or not model.strip():
            raise InvalidArgumentError(f"model must be a non-empty string, got {model!r}")
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
        self._bus = event_bus
        self._model = model
        self._pool = pool
        self._llm = llm
        self._session_config = sub_config

    # -- public API -----------------------------------------------------------
    def run(
        self,
        inputs: Sequence[Any],
        prompt_template: str,
        *,
        read_only: bool = False,
        max_turns: int = 20,
        run_id: str | None = None,
        parent_session_id: str | None = None,
        tools: Sequence[dict[str, Any]] | None = None,
        tool_handler: ToolHandler | None = None,
        system_prompt: str = DEFAULT_SYSTEM_PROMPT,
        agent: str = DEFAULT_AGENT,
        max_retries: int | None = None,
        concurrency: int | None = None,
        retry_failed: bool = False,
    ) -> AsyncGenerator[AgentMapResult, None]:
        """Run one sub-session per input; yields results in completion order.

        Each sub-session receives the rendered template (``item``, ``index``) as its
        first message. While the model asks for tools, the calls are executed
        (``lcm_*`` by the session, others by ``tool_handler``) and another turn is
        sent, up to ``max_turns`` turns. A failed attempt (model error, …) is retried
        in a fresh sub-session up to ``max_retries`` times (default
        ``config.max_retries``); then the item is ``failed``.

        Pass your own ``run_id`` (e.g. ``new_id("run")``) to be able to resume: calling
        ``run`` again with it and the same inputs and template returns the items
        finished earlier (``resumed=True``) and runs only the rest. Failed items stay
        failed unless ``retry_failed=True``. Inputs must be JSON-serialisable (they
        are stored).

        Raises :class:`~mnesis.errors.InvalidArgumentError` immediately for a
        template without ``{{ item }}`` or any bad argument; when iteration starts,
        for a ``run_id`` already running in this process or stored with other inputs,
        and :class:`~mnesis.errors.SessionNotFoundError` for an unknown parent.
        """
        plan = self._plan(
            inputs,
            prompt_template,
            read_only=read_only,
            max_turns=max_turns,
            run_id=run_id,
            parent_session_id=parent_session_id,
            tools=tools,
            tool_handler=tool_handler,
            system_prompt=system_prompt,
            agent=agent,
            max_retries=max_retries,
            concurrency=concurrency,
            retry_failed=retry_failed,
        )
        return self._stream(plan)

    async def run_all(
        self,
        inputs: Sequence[Any],
        prompt_template: str,
        *,
        read_only: bool = False,
        max_turns: int = 20,
        run_id: str | None = None,
        parent_session_id: str | None = None,
        tools: Sequence[dict[str, Any]] | None = None,
        tool_handler: ToolHandler | None = None,
        system_prompt: str = DEFAULT_SYSTEM_PROMPT,
        agent: str = DEFAULT_AGENT,
        max_retries: int | None = None,
        concurrency: int | None = None,
        retry_failed: bool = False,
    ) -> AgentMapBatch:
        """Like :meth:`run`, collected into an :class:`AgentMapBatch` sorted by ``index``."""
        plan = self._plan(
            inputs,
            prompt_template,
            read_only=read_only,
            max_turns=max_turns,
            run_id=run_id,
            parent_session_id=parent_session_id,
            tools=tools,
            tool_handler=tool_handler,
            system_prompt=system_prompt,
            agent=agent,
            max_retries=max_retries,
            concurrency=concurrency,
            retry_failed=retry_failed,
        )
        started = time.perf_counter()
        results: list[AgentMapResult] = []
        async with contextlib.aclosing(self._stream(plan)) as stream:
            async for result in stream:
                results.append(result)
        results.sort(key=lambda r: r.index)
        completed = sum(1 for r in results if r.success)
        return AgentMapBatch(
            run_id=plan.run_id,
            results=results,
            completed=completed,
            failed=len(results) - completed,
            elapsed_ms=int((time.perf_counter() - started) * 1000),
        )

    # -- planning -------------------------------------------------------------
    def _plan(
        self,
        inputs: Sequence[Any],
        prompt_template: str,
        *,
        read_only: bool,
        max_turns: int,
        run_id: str | None,
        parent_session_id: str | None,
        tools: Sequence[dict[str, Any]] | None,
        tool_handler: ToolHandler | None,
        system_prompt: str,
        agent: str,
        max_retries: int | None,
        concurrency: int | None,
        retry_failed: bool,
    ) -> _Plan:
        if isinstance(inputs, str | bytes | bytearray | dict) or not isinstance(inputs, Sequence):
            raise InvalidArgumentError(
                f"inputs must be a list of items, got {type(inputs).__name__}"
            )
        items = list(inputs)
        template = ItemTemplate(prompt_template)
        encoded = []
        for index, item in enumerate(items):
            try:
                encoded.append(
                    json.dumps(item, ensure_ascii=False, sort_keys=True, allow_nan=False)
                )
            except (TypeError, ValueError) as exc:
                raise InvalidArgumentError(
                    f"input {index} is not JSON-serialisable ({exc}); AgenticMap stores its "
                    "inputs to be able to resume"
                ) from None
        if not isinstance(read_only, bool):
            raise InvalidArgumentError("read_only must be True or False")
        if not isinstance(retry_failed, bool):
            raise InvalidArgumentError("retry_failed must be True or False")
        turns = _int_at_least(max_turns, 1, "max_turns")
        retries = _int_at_least(
            self._config.max_retries if max_retries is None else max_retries, 0, "max_retries"
        )
        workers = _int_at_least(
            self._config.agentic_map_concurrency if concurrency is None else concurrency,
            1,
            "concurrency",
        )
        if run_id is None:
            run_id = new_id("run")
        elif not isinstance(run_id, str) or not run_id.strip() or len(run_id) > 200:
            raise InvalidArgumentError(f"run_id must be a non-empty string, got {run_id!r}")
        if parent_session_id is not None and not is_valid_id(parent_session_id, "sess"):
            raise InvalidArgumentError(
                f"parent_session_id {parent_session_id!r} is not a session ID"
            )
        if not isinstance(system_prompt, str):
            raise InvalidArgumentError("system_prompt must be a string")
        if not isinstance(agent, str) or not agent.strip():
            raise InvalidArgumentError(f"agent must be a non-empty string, got {agent!r}")
        offered = _check_tools(tools)
        if tool_handler is not None and not callable(tool_handler):
            raise InvalidArgumentError("tool_handler must be callable")
        if read_only and (offered or tool_handler is not None):
            raise InvalidArgumentError(
                "a read_only AgenticMap offers only the lcm_* retrieval tools; "
                "drop tools=/tool_handler= or pass read_only=False"
            )
        return _Plan(
            run_id=run_id,
            template=template,
            inputs=items,
            input_json=encoded,
            model=self._model,
            agent=f"{agent}:ro" if read_only else agent,
            system_prompt=system_prompt,
            read_only=read_only,
            tools=offered,
            tool_handler=tool_handler,
            max_turns=turns,
            max_attempts=retries + 1,
            concurrency=workers,
            parent_id=parent_session_id,
            retry_failed=retry_failed,
        )

    # -- execution ------------------------------------------------------------
    async def _stream(self, plan: _Plan) -> AsyncGenerator[AgentMapResult, None]:
        pool = self._pool or StorePool.default()
        store = await pool.acquire(self._session_config.store)
        key: tuple[str, str] | None = None
        try:
            if not isinstance(store, SQLiteStore):
                raise InvalidArgumentError("AgenticMap needs an SQLite store to record its runs")
            key = (store.path, plan.run_id)
            if key in _ACTIVE_RUNS:
                key = None
                raise InvalidArgumentError(
                    f"run {plan.run_id!r} is already running in this process; "
                    "wait for it to finish before resuming it"
                )
            _ACTIVE_RUNS.add(key)
            if plan.parent_id is not None:
                await store.get_session(plan.parent_id)  # SessionNotFoundError if absent
            runs = MapRunStore(store.db)
            rows, existed = await runs.start(
                plan.run_id,
                kind="agentic",
                config=plan.config_record(),
                inputs=plan.input_json,
                fixed_keys=("template",),
                retry_failed=plan.retry_failed,
            )
            # aclosing: if the consumer stops early, the workers must be stopped (and
            # their items released) before the store is given back below.
            execution = self._execute(plan, runs, pool, rows, existed)
            async with contextlib.aclosing(execution) as results:
                async for result in results:
                    yield result
        finally:
            if key is not None:
                _ACTIVE_RUNS.discard(key)
            await store.close()

    async def _execute(
        self,
        plan: _Plan,
        runs: MapRunStore,
        pool: StorePool,
        rows: list[ItemRow],
        existed: bool,
    ) -> AsyncGenerator[AgentMapResult, None]:
        runnable = ("pending", "running", "failed") if plan.retry_failed else ("pending", "running")
        todo = [row for row in rows if row.state in runnable]
        done = [row for row in rows if row.state not in runnable]
        completed = sum(1 for row in done if row.state == "completed")
        failed = len(done) - completed
        started = time.perf_counter()
        self._publish(
            MnesisEvent.MAP_STARTED,
            {
                "operator": "agentic_map",
                "run_id": plan.run_id,
                "total": len(rows),
                "to_run": len(todo),
                "resumed": existed,
                "model": plan.model,
                "concurrency": plan.concurrency,
            },
        )
        logger.info(
            "agentic_map %s %s: %d items, %d to run, concurrency=%d",
            plan.run_id,
            "resumed" if existed else "started",
            len(rows),
            len(todo),
            plan.concurrency,
        )
        for row in done:
            yield self._stored_result(plan, row)
        client = resolve_client(plan.model, self._llm)

        async def one(row: ItemRow) -> AgentMapResult:
            nonlocal completed, failed
            result = await self._run_item(plan, runs, pool, client, row)
            if result.success:
                completed += 1
            else:
                failed += 1
            self._publish(
                MnesisEvent.MAP_ITEM_COMPLETED,
                {
                    "operator": "agentic_map",
                    "run_id": plan.run_id,
                    "index": result.index,
                    "success": result.success,
                    "attempts": result.attempts,
                    "session_id": result.session_id,
                    "completed": completed + failed,
                    "total": len(rows),
                },
            )
            return result

        async with contextlib.aclosing(bounded_map(_iterate(todo), one, plan.concurrency)) as out:
            async for result in out:
                yield result
        elapsed = int((time.perf_counter() - started) * 1000)
        self._publish(
            MnesisEvent.MAP_COMPLETED,
            {
                "operator": "agentic_map",
                "run_id": plan.run_id,
                "total": len(rows),
                "completed": completed,
                "failed": failed,
                "elapsed_ms": elapsed,
            },
        )
        logger.info(
            "agentic_map %s finished: %d completed, %d failed in %d ms",
            plan.run_id,
            completed,
            failed,
            elapsed,
        )

    async def _run_item(
        self,
        plan: _Plan,
        runs: MapRunStore,
        pool: StorePool,
        client: LLMClient,
        row: ItemRow,
    ) -> AgentMapResult:
        item = plan.inputs[row.idx]
        base = {"run_id": plan.run_id, "index": row.idx, "input": item}
        try:
            prompt = plan.template.render(item, row.idx)
        except TemplateError as exc:
            error = f"the template could not render this input: {type(exc).__name__}: {exc}"
            await runs.fail(plan.run_id, row.idx, error)
            return AgentMapResult(**base, success=False, error=error, attempts=row.attempts)
        # A fresh item (or one retried explicitly) gets the whole budget; one that an
        # earlier process left unfinished gets what remains, but at least one attempt,
        # so resuming always makes progress.
        if row.attempts == 0 or row.state == "failed":
            budget = plan.max_attempts
        else:
            budget = max(1, plan.max_attempts - row.attempts)
        error = row.error or ""
        attempts = row.attempts
        session_id = row.session_id
        for _ in range(budget):
            try:
                claimed = await runs.claim(plan.run_id, row.idx)
                if claimed is None:  # finished meanwhile (cannot happen within one process)
                    break
                attempts = claimed
                holder: list[str] = []
                try:
                    outcome = await self._attempt(plan, runs, pool, client, row.idx, prompt, holder)
                except Exception as exc:
                    error = _describe(exc)
                    session_id = holder[0] if holder else session_id
                    logger.debug(
                        "agentic_map %s item %d attempt %d failed: %s",
                        plan.run_id,
                        row.idx,
                        attempts,
                        error,
                    )
                    await runs.note_error(plan.run_id, row.idx, error)
                    continue
                record = {
                    "text": outcome.text,
                    "turns": outcome.turns,
                    "finish_reason": outcome.finish_reason,
                    "usage": outcome.usage.model_dump(),
                }
                await runs.complete(
                    plan.run_id,
                    row.idx,
                    json.dumps(record, ensure_ascii=False),
                    outcome.session_id,
                )
            except asyncio.CancelledError:
                # Interrupted, not failed: put the item back for a later resume. The
                # store's single writer thread runs writes in order, so this lands
                # after a claim or completion that was still in flight, and a
                # completed item stays completed.
                with contextlib.suppress(Exception):
                    await asyncio.shield(runs.release(plan.run_id, row.idx))
                raise
            return AgentMapResult(
                **base,
                success=True,
                output_text=outcome.text,
                session_id=outcome.session_id,
                attempts=attempts,
                turns=outcome.turns,
                finish_reason=outcome.finish_reason,
                token_usage=outcome.usage,
            )
        await runs.fail(plan.run_id, row.idx, error)
        return AgentMapResult(
            **base,
            success=False,
            error=error,
            session_id=session_id,
            attempts=attempts,
            finish_reason="error",
        )

    async def _attempt(
        self,
        plan: _Plan,
        runs: MapRunStore,
        pool: StorePool,
        client: LLMClient,
        index: int,
        prompt: str,
        holder: list[str],
    ) -> _Outcome:
        session = await MnesisSession.create(
            model=plan.model,
            agent=plan.agent,
            parent_id=plan.parent_id,
            config=self._session_config,
            system_prompt=plan.system_prompt,
            pool=pool,
            llm=client,
        )
        holder.append(session.id)
        try:
            await runs.attach_session(plan.run_id, index, session.id)
            # Sub-agents never spawn sub-agents: an engine of their own session without
            # the expand_query hook makes the session refuse lcm_expand_query.
            session._wiring.tools.restrict(
                RetrievalEngine(
                    session.store,
                    session.id,
                    estimator=session.retrieval.estimator,
                    config=session.config.retrieval,
                )
            )
            offered = [*session.lcm_tool_definitions(exclude=("lcm_expand_query",)), *plan.tools]
            message = prompt
            usage = TokenUsage()
            turns = 0
            while True:
                turns += 1
                result = await session.send(message, tools=offered, run_lcm_tools=True)
                usage = usage + result.tokens
                if result.doom_loop_detected:
                    reason = "doom_loop"
                    break
                if not result.tool_calls:
                    reason = "stop"
                    break
                if turns >= plan.max_turns:
                    reason = "max_turns"
                    break
                for call in result.tool_calls:
                    output, error = await self._call_tool(plan, session, call)
                    await session.complete_tool_call(call.tool_call_id, output=output, error=error)
                message = _CONTINUE
            return _Outcome(session.id, result.text, turns, usage, reason)
        finally:
            # The sub-session takes no more turns, so a compaction its last turn
            # started in the background would only cost model calls.
            await session.close(abort_compaction=True)

    async def _call_tool(
        self, plan: _Plan, session: MnesisSession, call: ToolPart
    ) -> tuple[str | None, str | None]:
        name = call.tool_name
        if name in _RETRIEVAL_TOOLS:
            return await session.execute_tool(name, call.input), None
        if plan.read_only:
            return None, f"tool {name!r} is not available to a read-only sub-agent"
        if plan.tool_handler is None or name in LCM_TOOL_NAMES:
            return None, f"tool {name!r} is not available here"
        try:
            output = plan.tool_handler(name, dict(call.input))
            if inspect.isawaitable(output):
                output = await output
        except Exception as exc:
            return None, f"{type(exc).__name__}: {exc}"
        return str(output), None

    def _stored_result(self, plan: _Plan, row: ItemRow) -> AgentMapResult:
        base = {
            "run_id": plan.run_id,
            "index": row.idx,
            "input": plan.inputs[row.idx],
            "session_id": row.session_id,
            "attempts": row.attempts,
            "resumed": True,
        }
        if row.state != "completed":
            return AgentMapResult(**base, success=False, error=row.error, finish_reason="error")
        record = json.loads(row.output or "{}")
        return AgentMapResult(
            **base,
            success=True,
            output_text=record.get("text", ""),
            turns=record.get("turns", 0),
            finish_reason=record.get("finish_reason", "stop"),
            token_usage=TokenUsage(**record.get("usage", {})),
        )

    def _publish(self, event: MnesisEvent, payload: dict[str, Any]) -> None:
        if self._bus is not None:
            self._bus.publish(event, payload)


def _int_at_least(value: object, minimum: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidArgumentError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def _check_tools(tools: Sequence[dict[str, Any]] | None) -> tuple[dict[str, Any], ...]:
    if tools is None:
        return ()
    if isinstance(tools, dict) or not isinstance(tools, Sequence):
        raise InvalidArgumentError("tools must be a list of tool definitions")
    for tool in tools:
        if not isinstance(tool, dict):
            raise InvalidArgumentError(
                f"each tool must be a dict definition, got {type(tool).__name__}"
            )
    return tuple(tools)


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, MnesisError) else f"{type(exc).__name__}: {text}"


async def _iterate(rows: list[ItemRow]) -> AsyncIterator[ItemRow]:
    for row in rows:
        yield row
