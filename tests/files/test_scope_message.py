"""One scope message for every ID kind (issue 34).

``OutOfScopeError`` for another session's file ID said the file "was handled by
another session" (the MCP server hides it; the API leaked it); a message ID said it
"belongs to another session".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mnesis import FileConfig, MnesisConfig, MnesisSession, StorePool
from mnesis.errors import OutOfScopeError

SOURCE = "\n".join(f"def handler_{i}(event):\n    return event * {i}\n" for i in range(400))


async def test_every_kind_of_id_gets_the_same_message(tmp_path: Path) -> None:
    (tmp_path / "private.py").write_text(SOURCE)
    pool = StorePool()
    config = MnesisConfig(file=FileConfig(inline_threshold=200))
    db_path = str(tmp_path / "s.db")
    owner = await MnesisSession.create(model="fake/m", db_path=db_path, pool=pool, config=config)
    other = await MnesisSession.create(model="fake/m", db_path=db_path, pool=pool, config=config)
    ref = (await owner.handle_file(str(tmp_path / "private.py"))).file_ref
    assert ref is not None and ref.file_id is not None
    turn = await owner.record("the secret plan", "noted")

    messages = []
    for object_id in (ref.file_id, turn.user_message_id):
        with pytest.raises(OutOfScopeError) as caught:
            await other.describe(object_id)
        messages.append(str(caught.value))
    assert messages == [
        f"{ref.file_id} is not in this caller's scope",
        f"{turn.user_message_id} is not in this caller's scope",
    ]
    await owner.close()
    await other.close()
    await pool.close_all()
