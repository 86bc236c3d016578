"""The one place a session's collaborators are built and wired together."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from mnesis._session.doom import DoomLoopDetector
from mnesis._session.expansion import SpawnSubAgent, SubAgentExpander
from mnesis._session.gate import CompactionGate
from mnesis._session.indexer import SemanticIndexer
from mnesis._session.meter import ContextMeter
from mnesis._session.model_round import ModelRound
from mnesis._session.opening import StoredSession
from mnesis._session.retrying import with_retries
from mnesis._session.state import OpenState
from mnesis._session.target import SessionCompaction
from mnesis._session.tools import ToolLoop
from mnesis._session.turns import TurnRunner
from mnesis._session.writer import MessageWriter
from mnesis.compaction.engine import CompactionEngine
from mnesis.compaction.summariser import ExtractiveSummariser
from mnesis.config import MnesisConfig
from mnesis.context.builder import ContextBuilder
from mnesis.events.bus import EventBus
from mnesis.files import LargeFileHandler
from mnesis.llm import DeferredClient, LLMClient, needs_litellm
from mnesis.models.model_info import ModelInfo
from mnesis.retrieval.engine import RetrievalEngine
from mnesis.retrieval.tools import ExpandQueryFn
from mnesis.store.dag import SummaryDAGStore
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS, TokenEstimator

__all__ = ["Wiring", "wire"]

_log = logging.getLogger("mnesis.session")
_notices_logged: set[str] = set()
"""The offline-compaction notices already logged by this process (each is logged once)."""


def _notice_once(key: str, message: str, *args: object) -> None:
    if key not in _notices_logged:
        _notices_logged.add(key)
        _log.warning(message, *args)


def _offline_compaction(engine: CompactionEngine, config: MnesisConfig, llm: LLMClient) -> None:
    """Compaction calls a model only when the user gave one: an ``llm=`` client (for the
    session's own model) or ``compaction.compaction_model``. Without either, and without
    litellm for the model given, it uses the offline extractive summariser (and says so
    once per process), never a model call the user did not ask for."""
    chosen = config.compaction.compaction_model
    model = chosen or engine.session_model
    client = llm if model == engine.session_model else None
    if chosen is None and isinstance(llm, DeferredClient):
        engine.summarisers = [ExtractiveSummariser(level=1)]
        _notice_once(
            "no-model",
            "no llm= client and no compaction_model were given for model %r: compaction "
            "uses the offline extractive summariser and calls no model (pass llm= or set "
            "compaction.compaction_model to summarise with a model)",
            model,
        )
        return
    if not needs_litellm(model, client):
        return
    engine.summarisers = [ExtractiveSummariser(level=1)]
    _notice_once(
        "no-litellm",
        "litellm is not installed and no llm= client was given for compaction model %r: "
        "compaction uses the offline extractive summariser (pip install "
        "'mnesis-lcm[litellm]' or pass llm= to summarise with a model)",
        model,
    )


@dataclass(frozen=True)
class Wiring:
    """The collaborators of one session."""

    state: OpenState
    model_info: ModelInfo
    estimator: TokenEstimator
    builder: ContextBuilder
    meter: ContextMeter
    engine: CompactionEngine
    gate: CompactionGate
    retrieval: RetrievalEngine
    expander: SubAgentExpander
    tools: ToolLoop
    turns: TurnRunner
    files: LargeFileHandler
    indexer: SemanticIndexer | None
    """Keeps the semantic vectors filled after turns (``RetrievalConfig.semantic``)."""


def wire(
    stored: StoredSession,
    llm: LLMClient,
    bus: EventBus,
    *,
    spawn: SpawnSubAgent,
    expand_tool: ExpandQueryFn,
) -> Wiring:
    """Build the collaborators of the ``stored`` session; ``spawn`` makes the sub-agents
    of an expansion, ``expand_tool`` answers ``lcm_expand_query`` calls."""
    record, store, config = stored.record, stored.store, stored.config
    session_id = record.id
    model_info = ModelInfo.from_model_string(record.model, config.model_overrides)
    estimator = TokenEstimator(model_info.encoding)
    state = OpenState(session_id)
    dag = SummaryDAGStore(store)
    builder = ContextBuilder(store, dag, estimator)
    system_tokens = estimator.estimate(record.system_prompt) + MESSAGE_OVERHEAD_TOKENS
    meter = ContextMeter(
        store, session_id, tokens=stored.context_tokens, system_tokens=system_tokens
    )

    def on_compaction_commit() -> None:
        meter.mark_stale()
        builder.invalidate()

    engine = CompactionEngine(
        store,
        dag,
        estimator,
        bus,
        config,
        session_model=record.model,
        llm=llm,
        on_commit=on_compaction_commit,
    )
    _offline_compaction(engine, config, llm)
    gate = CompactionGate(
        SessionCompaction(engine, meter, model_info, session_id), config.compaction
    )
    retrieval = RetrievalEngine(store, session_id, estimator=estimator, config=config.retrieval)
    expander = SubAgentExpander(
        store, session_id, retrieval=retrieval, estimator=estimator, config=config, spawn=spawn
    )
    tools = ToolLoop(retrieval, config, expand_query=expand_tool)
    writer = MessageWriter(record, model_info, store, estimator, bus, meter)
    turn_llm = with_retries(llm, config.session.retry, bus, session_id)
    model_round = ModelRound(record, config, turn_llm, model_info, builder, store, writer, meter)
    turns = TurnRunner(
        record=record,
        store=store,
        state=state,
        writer=writer,
        model_round=model_round,
        meter=meter,
        gate=gate,
        doom=DoomLoopDetector(config, bus, session_id),
        tools=tools,
        token_usage=stored.token_usage,
    )
    return Wiring(
        state=state,
        model_info=model_info,
        estimator=estimator,
        builder=builder,
        meter=meter,
        engine=engine,
        gate=gate,
        retrieval=retrieval,
        expander=expander,
        tools=tools,
        turns=turns,
        files=LargeFileHandler(store, estimator, config.file),
        indexer=SemanticIndexer.attach(retrieval, bus),
    )
