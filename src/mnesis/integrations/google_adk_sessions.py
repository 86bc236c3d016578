"""Google ADK's ``BaseSessionService`` over mnesis (the service behind
:mod:`mnesis.integrations.google_adk`).

Each ADK session ``(app, user, session_id)`` is a mnesis session; every event the
``Runner`` appends is recorded into it as OpenAI chat messages (ordered rounds), and
``get_session`` returns the mnesis window (compacted history, summaries included) as
events, so the agent's next model call fits the window. ``state`` (session, ``user:``,
``app:``; ``temp:`` is never stored) lives in :mod:`~mnesis.integrations.registry`.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session
from google.adk.sessions.state import State
from pydantic_core import to_jsonable_python

from mnesis.config import MnesisConfig
from mnesis.errors import InvalidArgumentError
from mnesis.integrations.google_adk_events import event_to_messages, messages_to_events
from mnesis.integrations.held import Held
from mnesis.integrations.registry import Registry, Row, key
from mnesis.llm.resolve import ClientLike
from mnesis.session import MnesisSession
from mnesis.store.pool import StorePool

__all__ = ["MnesisSessionService"]


class MnesisSessionService(BaseSessionService):
    """ADK sessions stored in mnesis (a SQLite file or a PostgreSQL URL).

    ``MnesisSessionService(model="openai/gpt-4.1", db_path="agent.db")``: ``model`` is
    the model the sessions' window is sized for (``config.model_overrides`` /
    ``context_limit`` state a local model's window), ``llm`` the client compaction
    summarises with (default: as :meth:`MnesisSession.create`).

    ``delete_session`` follows :mod:`mnesis.integrations.append_only`: the ADK session is
    gone for ADK (``get_session`` returns None, ``list_sessions`` leaves it out), its
    history stays stored and searchable; creating the same ID again starts a new mnesis
    session linked to the old one (``parent_id``). Call :meth:`close` when done.
    """

    def __init__(
        self,
        *,
        model: str,
        db_path: str | None = None,
        config: MnesisConfig | None = None,
        pool: StorePool | None = None,
        llm: ClientLike | None = None,
        system_prompt: str = "You are a helpful assistant.",
    ) -> None:
        """Sessions on ``db_path`` (or ``config.store``), sized for ``model``."""
        if not isinstance(model, str) or not model:
            raise InvalidArgumentError(f"model must be a non-empty string, got {model!r}")
        self._model = model
        self._system_prompt = system_prompt
        self._held = Held(db_path, config, pool, llm)
        self._lock = asyncio.Lock()

    # -- ADK's interface ------------------------------------------------------
    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        """A new ADK session (its ID is the mnesis session's unless ``session_id``
        names one); raises ADK's ``AlreadyExistsError`` for an ID in use."""
        _check_names(app_name, user_id, session_id)
        deltas = _split_state(state or {})
        registry = await self._rows()
        async with self._lock:
            old = await registry.get("session", app_name, user_id, session_id or "")
            if old is not None and not old.state.get("deleted"):
                raise AlreadyExistsError(f"Session with id {session_id} already exists.")
            mnesis = await self._new_session(app_name, old.session_id if old else None)
            sid = session_id or mnesis.id
            now = time.time()
            previous = [*old.state.get("previous", []), old.session_id] if old else []
            row = Row(
                key("session", app_name, user_id, sid),
                mnesis.id,
                {"state": deltas["session"], "created": now, "updated": now, "previous": previous},
            )
            app, user = await self._app_and_user(app_name, user_id)
            app.state["state"].update(deltas["app"])
            user.state["state"].update(deltas["user"])
            if sid not in user.state["sessions"]:
                user.state["sessions"].append(sid)
            for changed in (row, app, user):
                await registry.put(changed)
        return _adk_session(app_name, user_id, sid, row, app, user)

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        """The session with the mnesis window as its events; None if there is none (or
        it was deleted). ``config.num_recent_events`` keeps the latest events;
        ``after_timestamp`` those stamped at or after it (window events carry the time
        of the session's last update before this read)."""
        _check_names(app_name, user_id, session_id)
        registry = await self._rows()
        row = await registry.get("session", app_name, user_id, session_id)
        if row is None or row.state.get("deleted"):
            return None
        mnesis = await self._session(row.session_id)
        window = await mnesis.context_for_next_turn(format="openai")
        updated = float(row.state["updated"])
        events = messages_to_events(
            [m for m in window if m.get("role") != "system"],
            invocation_id=f"mnesis-{mnesis.id}",
            timestamp=updated,
        )
        if config is not None and config.after_timestamp is not None:
            events = [e for e in events if e.timestamp >= config.after_timestamp]
        if config is not None and config.num_recent_events is not None:
            count = config.num_recent_events
            events = events[len(events) - count :] if count else []
        app = await registry.get("app", app_name)
        user = await registry.get("user", app_name, user_id)
        return _adk_session(app_name, user_id, session_id, row, app, user, events)

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        """The user's sessions (every user's without ``user_id``), oldest update first,
        without events; deleted ones left out."""
        _check_names(app_name, user_id or "-", None)
        registry = await self._rows()
        app_row = await registry.get("app", app_name)
        users = [user_id] if user_id else list(app_row.state["users"]) if app_row else []
        sessions: list[Session] = []
        for user_name in users:
            user_row = await registry.get("user", app_name, user_name)
            for sid in user_row.state["sessions"] if user_row else []:
                row = await registry.get("session", app_name, user_name, sid)
                if row is None or row.state.get("deleted"):
                    continue
                sessions.append(_adk_session(app_name, user_name, sid, row, app_row, user_row))
        sessions.sort(key=lambda s: s.last_update_time)
        return ListSessionsResponse(sessions=sessions)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Remove the session from ADK's view; its history stays stored and searchable
        (``mnesis purge`` deletes it)."""
        _check_names(app_name, user_id, session_id)
        registry = await self._rows()
        async with self._lock:
            row = await registry.get("session", app_name, user_id, session_id)
            if row is None or row.state.get("deleted"):
                return
            row.state["deleted"] = True
            await registry.put(row)
        await self._held.forget(row.session_id)

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        """The user's ``user:`` state, keys without the prefix."""
        _check_names(app_name, user_id, None)
        row = await (await self._rows()).get("user", app_name, user_id)
        return dict(row.state["state"]) if row else {}

    async def append_event(self, session: Session, event: Event) -> Event:
        """Apply the event to ``session`` and record its content into the mnesis session
        (checked first: content that cannot be stored raises ``InvalidArgumentError``
        before anything changes). ADK's own compaction events are not recorded: mnesis
        compacts the stored history itself."""
        if event.partial:
            return event
        compaction = event.actions is not None and event.actions.compaction is not None
        messages = [] if compaction else event_to_messages(event)
        registry = await self._rows()
        async with self._lock:
            row = await registry.get("session", session.app_name, session.user_id, session.id)
            if row is None or row.state.get("deleted"):
                raise SessionNotFoundError(f"Session {session.id} not found.")
            if messages:
                await (await self._session(row.session_id)).record_messages(messages)
            event = await super().append_event(session, event)
            deltas = _split_state(event.actions.state_delta if event.actions else {})
            row.state["state"].update(deltas["session"])
            row.state["updated"] = max(float(row.state["updated"]), event.timestamp)
            row.count += 1
            await registry.put(row)
            if deltas["app"] or deltas["user"]:
                app, user = await self._app_and_user(session.app_name, session.user_id)
                app.state["state"].update(deltas["app"])
                user.state["state"].update(deltas["user"])
                await registry.put(app)
                await registry.put(user)
        session.last_update_time = float(row.state["updated"])
        return event

    # -- mnesis ---------------------------------------------------------------
    async def mnesis_session(self, session: Session) -> MnesisSession:
        """The open mnesis session holding ``session`` (for the ``lcm_*`` tools,
        ``compact``, ``grep``); raises ADK's ``SessionNotFoundError``."""
        row = await (await self._rows()).get(
            "session", session.app_name, session.user_id, session.id
        )
        if row is None or row.state.get("deleted"):
            raise SessionNotFoundError(f"Session {session.id} not found.")
        return await self.open_mnesis(row.session_id)

    async def open_mnesis(self, session_id: str) -> MnesisSession:
        """The mnesis session ``session_id`` of this service's store, opened once and
        kept open until :meth:`close`."""
        return await self._session(session_id)

    async def mnesis_session_ids(self, app_name: str, user_id: str) -> list[str]:
        """Every mnesis session of the user's ADK sessions, deleted and re-created
        ones included (their history stays searchable)."""
        registry = await self._rows()
        user = await registry.get("user", app_name, user_id)
        ids: list[str] = []
        for sid in user.state["sessions"] if user else []:
            row = await registry.get("session", app_name, user_id, sid)
            if row is not None:
                ids.extend([*row.state.get("previous", []), row.session_id])
        return ids

    async def registry(self) -> Registry:
        """The registry rows of this service's store."""
        return await self._rows()

    async def new_session(self, app_name: str) -> MnesisSession:
        """A new mnesis session of ``app_name`` on this service's store (kept open)."""
        return await self._new_session(app_name, None)

    async def close(self) -> None:
        """Close the mnesis sessions this service opened and release its store."""
        await self._held.close()

    async def __aenter__(self) -> MnesisSessionService:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- helpers --------------------------------------------------------------
    async def _rows(self) -> Registry:
        return await self._held.registry()

    async def _new_session(self, app_name: str, parent_id: str | None) -> MnesisSession:
        return await self._held.create(
            self._model, f"google-adk:{app_name}", self._system_prompt, parent_id
        )

    async def _session(self, session_id: str) -> MnesisSession:
        return await self._held.session(session_id)

    async def _app_and_user(self, app_name: str, user_id: str) -> tuple[Row, Row]:
        """The app's and user's rows (made, with the app's registry session, if new)."""
        registry = await self._rows()
        app = await registry.get("app", app_name)
        if app is None:
            anchor = await self._new_session(app_name, None)
            app = Row(key("app", app_name), anchor.id, {"state": {}, "users": []})
            await registry.put(app)
        user = await registry.get("user", app_name, user_id)
        if user is None:
            user = Row(
                key("user", app_name, user_id), app.session_id, {"state": {}, "sessions": []}
            )
        if user_id not in app.state["users"]:
            app.state["users"].append(user_id)
            await registry.put(app)
        return app, user


def _check_names(app_name: object, user_id: object, session_id: object) -> None:
    for name, value in (("app_name", app_name), ("user_id", user_id)):
        if not isinstance(value, str) or not value:
            raise InvalidArgumentError(f"{name} must be a non-empty string, got {value!r}")
    if session_id is not None and not isinstance(session_id, str):
        raise InvalidArgumentError(f"session_id must be a string, got {session_id!r}")


def _split_state(state: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """ADK state (or a delta) by scope, JSON-safe, prefixes removed; ``temp:`` dropped."""
    deltas: dict[str, dict[str, Any]] = {"app": {}, "user": {}, "session": {}}
    for name, value in to_jsonable_python(state).items():
        if name.startswith(State.APP_PREFIX):
            deltas["app"][name.removeprefix(State.APP_PREFIX)] = value
        elif name.startswith(State.USER_PREFIX):
            deltas["user"][name.removeprefix(State.USER_PREFIX)] = value
        elif not name.startswith(State.TEMP_PREFIX):
            deltas["session"][name] = value
    return deltas


def _adk_session(
    app_name: str,
    user_id: str,
    session_id: str,
    row: Row,
    app: Row | None,
    user: Row | None,
    events: list[Event] | None = None,
) -> Session:
    """ADK's view of the session ``row``: its state with the ``app:`` and ``user:`` state
    merged in, last updated when the row was."""
    state = dict(row.state["state"])
    for prefix, scoped in ((State.APP_PREFIX, app), (State.USER_PREFIX, user)):
        for name, value in (scoped.state["state"] if scoped else {}).items():
            state[prefix + name] = value
    return Session(
        id=session_id,
        app_name=app_name,
        user_id=user_id,
        state=state,
        events=events or [],
        last_update_time=float(row.state["updated"]),
    )
