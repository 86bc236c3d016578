"""Reaching the SQLite database under a store, for tests of what the file enforces."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import cast

from mnesis.models.parts import (
    FileRefPart,
    MessagePart,
    ReasoningPart,
    TextPart,
    ToolPart,
    ToolStatus,
)
from mnesis.store import ImmutableStore, SQLiteStore
from mnesis.store.sqlite import SQLiteDatabase


def sqlite_db(store: ImmutableStore) -> SQLiteDatabase:
    """The SQLite database under a store (for raw reads and writes in tests)."""
    return cast(SQLiteStore, store.backend).db


def random_parts(
    rng: random.Random,
    words: Sequence[str],
    max_words: int,
    *,
    file_refs: bool = False,
    running_tools: bool = False,
) -> list[MessagePart]:
    """Up to three random parts: text, reasoning, tool calls (completed, or also still
    running) and, if asked, file references, each of 1 to ``max_words`` words."""
    parts: list[MessagePart] = []
    for _ in range(rng.randrange(0, 4)):
        text = " ".join(rng.choice(words) for _ in range(rng.randrange(1, max_words)))
        kind = rng.randrange(4 if file_refs else 3)
        if kind == 0:
            parts.append(TextPart(text=text))
        elif kind == 1:
            parts.append(ReasoningPart(text=text))
        elif kind == 2:
            done = rng.random() < 0.5 if running_tools else True
            parts.append(
                ToolPart(
                    tool_name="read",
                    tool_call_id=f"call_{rng.getrandbits(64):x}",
                    input={"q": text[:20]},
                    output=text if done else None,
                    status=ToolStatus(state="completed" if done else "running"),
                )
            )
        else:
            parts.append(FileRefPart(content_id="c", path="a.txt", exploration_summary=text))
    return parts
