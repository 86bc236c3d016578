"""The core-only scenario: a provider model string through create, record x 300, compact,
context in both formats, grep and load, with no model client installed.

Run by ``test_install_profiles.py`` (litellm imports blocked) and by ``.ci/run`` in a real
venv that has only the core install: ``python tests/providers/core_only_scenario.py DB``.
"""

import asyncio
import logging
import sys

from mnesis import MnesisSession
from mnesis.errors import MissingDependencyError

notices = []
logging.getLogger("mnesis").addHandler(
    type(
        "H", (logging.Handler,), {"emit": lambda self, record: notices.append(record.getMessage())}
    )()
)


async def main(db):
    session = await MnesisSession.create(model="anthropic/claude-sonnet-4-5", db_path=db)
    for i in range(300):
        await session.record(
            f"turn {i}: where is setting_{i}? " + "context " * 20,
            f"setting_{i} lives in config/{i}.toml " + "detail " * 20,
        )
    result = await session.compact()
    assert result.level_used > 0, result
    openai = await session.context_for_next_turn()
    anthropic = await session.context_for_next_turn(format="anthropic")
    assert openai[0]["role"] == "system" and "[LCM summary" in openai[1]["content"]
    assert anthropic["messages"][0]["role"] == "user"
    assert (await session.grep("setting_7")).matches
    try:
        await session.send("hello")
    except MissingDependencyError as exc:
        assert "mnesis-lcm[litellm]" in str(exc)
    else:
        raise AssertionError("send without litellm must say what to install")
    anthropic = await session.context_for_next_turn(format="anthropic")
    assert anthropic["messages"][-1]["content"][-1] == {"type": "text", "text": "hello"}
    await session.close()
    loaded = await MnesisSession.load(session.id, db_path=db)
    assert await loaded.context_for_next_turn(format="anthropic") == anthropic
    await loaded.close()


asyncio.run(main(sys.argv[-1]))
assert "litellm" not in sys.modules
assert sum("extractive" in n for n in notices) == 1, notices
print("core-only ok")
