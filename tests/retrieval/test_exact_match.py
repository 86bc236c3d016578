"""Issue 33: an entity that left the view is reachable with one grep of its quoted
value. The hit holding a quoted identifier or path whole ranks above hits that only
hold it inside a longer one, a summary quoting a message does not hide the message,
and on PostgreSQL (whose parser keeps a path as one lexeme) a quoted path is found."""

from __future__ import annotations

import re
from typing import Any

from mnesis import MnesisConfig, MnesisSession, StorePool
from mnesis.models.parts import TextPart
from mnesis.retrieval.query import parse_query
from mnesis.retrieval.ranking import holds_whole

_WORDS = re.compile(r"[A-Za-z][A-Za-z0-9_./-]{2,}")


def _whole(text: str, value: str) -> bool:
    return re.search(r"(?<![\w/.])" + re.escape(value) + r"(?![\w/]|[.-]\w)", text) is not None


async def test_the_whole_quoted_identifier_or_path_ranks_first(
    db_path: str, pool: StorePool
) -> None:
    session = await MnesisSession.create(
        model="fake/m", db_path=db_path, pool=pool, config=MnesisConfig()
    )
    await session.record(
        "Where is the client built?",
        [TextPart(text="In src/app/db.py: client_cache = payload_session() builds it.")],
    )
    # Newer turns hold both only inside longer identifiers and paths.
    for turn in range(12):
        await session.record(
            f"Step {turn}: check the session store.",
            [
                TextPart(
                    text=f"Updated lib/src/app/db.py and src/app/db.py.bak{turn}: "
                    f"payload_session_id = {turn}, payload_sessions[{turn}] and "
                    f"test_payload_session_{turn} pass."
                )
            ],
        )
    for value in ("payload_session", "src/app/db.py"):
        found = await session.grep(f'"{value}"', limit=3)
        assert found.matches, value
        first = found.matches[0]
        assert first.kind == "message" and _whole(first.snippet, value), (value, first)
    await session.close()


async def test_a_summary_quoting_a_message_does_not_hide_it(db_path: str) -> None:
    async def summarise(messages: list[dict[str, Any]]) -> str:
        # A summariser that copies the start of its input verbatim.
        words = _WORDS.findall(str(messages[-1].get("content", "")))
        return "Summary: " + " ".join(words[:60]) + "."

    session = await MnesisSession.create(
        model="local/model",
        llm=summarise,
        db_path=db_path,
        config=MnesisConfig(compaction={"auto": False}),
        context_limit=16_000,
    )
    # A grep output of near-identical lines: the summary's snippet has the same words.
    grep_output = "\n".join(
        "src/app/workers/retry.py:    client_cache = "
        + ("payload_session" if i == 2 else "helper_cache")
        + "(config_value, retry_budget, timeout_seconds)"
        for i in range(12)
    )
    await session.record("Look at the retry worker.", [TextPart(text=grep_output)])
    for turn in range(5):
        await session.record(f"Turn {turn}: next step.", [TextPart(text=f"Step {turn} done.")])
    result = await session.compact()
    assert result.summary_id is not None
    found = await session.grep('"payload_session"', limit=10)
    kinds = {m.kind for m in found.matches}
    assert kinds == {"message", "summary"}, [(m.kind, m.duplicate_ids) for m in found.matches]
    await session.close()


def test_a_whole_match_is_not_one_inside_a_longer_identifier_or_path() -> None:
    assert holds_whole("x = payload_session()", "payload_session")
    assert holds_whole("the payload_session.", "payload_session")
    assert not holds_whole("payload_session_id and test_payload_session_3", "payload_session")
    assert holds_whole("see `src/app/db.py`, line 3", "src/app/db.py")
    assert holds_whole("./src/app/db.py", "src/app/db.py")
    assert not holds_whole("lib/src/app/db.py src/app/db.py.bak src/app/db.pyc", "src/app/db.py")
    parsed = parse_query('"src/app/db.py" "payload_session" retry-budget')
    assert parsed.exact == ["src/app/db.py", "payload_session"]
    assert parsed.required[0].typed == ("src/app/db.py",)
    assert parsed.required[1].typed == ()
    assert parsed.optional[0].typed == ("retry-budget",)
