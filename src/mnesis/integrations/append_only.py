"""What removing history means on a store that never deletes, the same in every adapter.

mnesis stores a conversation append-only: nothing a framework asks to remove is deleted
(``mnesis purge`` is the only real deletion). Instead:

* **clear** (Agents SDK ``clear_session``, LangChain ``clear``, ADK ``delete_session``):
  the adapter moves to a *new linked session*: a fresh session on the same store whose
  ``parent_id`` is the old one. The next model call sees an empty history; the old
  session stays stored and searchable (``mnesis grep``, ``session.grep(...,
  session_ids=[old_id])``, ``mnesis show``). ADK's ``delete_session`` removes the
  session from ADK's view; the linked session starts when its ID is created again.
* **pop** (Agents SDK ``pop_item``): the adapter moves to a new linked session that holds
  the current context view (summaries included, as text) minus its last item, and returns
  that item. The old session, the popped item included, stays stored and searchable.
* **delete an item** (LangGraph store ``delete``): the key leaves the store's map of
  current items (:mod:`mnesis.integrations.langgraph_store`); its versions stay stored.

The adapters keep the ID of the session they currently write to in ``session_id``; the
chain of sessions is the ``parent_id`` links.
"""

from __future__ import annotations

from typing import Any

from mnesis.session import MnesisSession

__all__ = ["fork_without_last", "linked_session", "view_items"]


async def linked_session(session: MnesisSession) -> MnesisSession:
    """A new, empty session on ``session``'s store and model whose parent is ``session``."""
    record = await session.store.get_session(session.id)
    return await session.spawn_child(agent=record.agent, system_prompt=record.system_prompt)


async def view_items(session: MnesisSession) -> list[dict[str, Any]]:
    """The session's context view as Responses input items, without the system item."""
    items = await session.context_for_next_turn(format="responses")
    return [item for item in items if item.get("role") not in ("system", "developer")]


async def fork_without_last(
    session: MnesisSession,
) -> tuple[MnesisSession, dict[str, Any] | None]:
    """(a new linked session holding ``session``'s view minus its last item, that item).

    Returns ``(session, None)`` unchanged when the view is empty.
    """
    items = await view_items(session)
    if not items:
        return session, None
    child = await linked_session(session)
    kept = items[:-1]
    # A kept summary is a user message: it starts a turn, as any user text does.
    if kept:
        await child.record_messages(kept, format="responses")
    return child, items[-1]
