"""The README's "Bring your own LLM" loops run as written, with the OpenAI and the
Anthropic SDK, against the local provider servers, which reject (HTTP 400) any request
that breaks their provider's rules: once as written, and 100 turns each with compaction
and two rounds of two parallel tool calls per turn."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.providers.servers import FINAL_TEXT, ProviderServer, serve

ROOT = Path(__file__).resolve().parents[2]


def _examples() -> dict[str, str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Bring your own LLM", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    runnable = [b for b in blocks if "asyncio.run(main())" in b]
    return {("anthropic" if "AsyncAnthropic" in b else "openai"): b for b in runnable}


def _run(code: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"), **env},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def test_the_section_has_one_loop_per_sdk() -> None:
    assert sorted(_examples()) == ["anthropic", "openai"]


@pytest.mark.slow
def test_the_openai_sdk_loop(tmp_path: Path, openai_server: ProviderServer) -> None:
    env = {"OPENAI_BASE_URL": openai_server.base_url + "/v1", "OPENAI_API_KEY": "sk-local"}
    done = _run(_examples()["openai"], tmp_path, env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == FINAL_TEXT
    first, second = openai_server.bodies
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    assert second["messages"][3]["tool_call_id"] == second["messages"][2]["tool_calls"][0]["id"]
    assert (tmp_path / "agent.db").exists()


@pytest.mark.slow
def test_the_anthropic_sdk_loop(tmp_path: Path, anthropic_server: ProviderServer) -> None:
    env = {"ANTHROPIC_BASE_URL": anthropic_server.base_url, "ANTHROPIC_API_KEY": "sk-local"}
    done = _run(_examples()["anthropic"], tmp_path, env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == FINAL_TEXT
    first, second = anthropic_server.bodies
    assert first["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
    [use] = [b for b in second["messages"][1]["content"] if b["type"] == "tool_use"]
    assert second["messages"][2]["content"][0]["tool_use_id"] == use["id"]


HUNDRED_TURNS = """
from mnesis.config import CompactionConfig, MnesisConfig

async def hundred_turns() -> None:
    config = MnesisConfig(
        compaction=CompactionConfig(compaction_model="extractive"),
        model_overrides={"context_limit": 24_000, "max_output_tokens": 500},
    )
    async with MnesisSession.open(model="local/m", db_path="agent.db", config=config) as session:
        for number in range(100):
            answer = await ask(session, f"Question {number}: which port does service {number} use?")
            assert answer == "The port is 8443.", answer
        print(len(await session.conversation_messages()))

asyncio.run(hundred_turns())
"""


def _hundred_turns(kind: str, tmp_path: Path) -> tuple[ProviderServer, str]:
    """Run the README loop of ``kind`` for 100 turns against a server making two rounds
    of two parallel tool calls per turn."""
    code = _examples()[kind].replace("asyncio.run(main())", HUNDRED_TURNS)
    for server in serve(kind, rounds=2, parallel=2):
        if kind == "openai":
            env = {"OPENAI_BASE_URL": server.base_url + "/v1", "OPENAI_API_KEY": "sk-local"}
        else:
            env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "sk-local"}
        done = _run(code, tmp_path, env)
        assert done.returncode == 0, (done.stderr[-3000:], server.rejected[:1])
        assert server.rejected == []
        return server, done.stdout
    raise AssertionError("the server did not start")


def _summarised(body: dict[str, Any]) -> bool:
    return "[LCM summary" in json.dumps(body)


@pytest.mark.slow
def test_the_openai_loop_for_100_turns(tmp_path: Path) -> None:
    server, stdout = _hundred_turns("openai", tmp_path)
    assert len(server.bodies) == 300  # three model calls a turn
    assert int(stdout.strip()) == 100 * 4  # the question, two rounds, the answer
    assert any(_summarised(b) for b in server.bodies), "the session never compacted"
    last = server.bodies[-1]["messages"]
    roles = ["user", "assistant", "tool", "tool", "assistant", "tool", "tool"]
    assert [m["role"] for m in last[-7:]] == roles


def _flat(body: dict[str, Any]) -> tuple[list[str], list[int]]:
    """The request's blocks as canonical JSON (``cache_control`` left out, keys sorted)
    tagged with their message and role, and the indexes of the blocks that carry a
    breakpoint."""
    flat: list[str] = []
    marks: list[int] = []
    system = body["system"]
    blocks = system if isinstance(system, list) else [{"type": "text", "text": system}]
    turns = [("system", blocks)] + [
        (
            m["role"],
            m["content"]
            if isinstance(m["content"], list)
            else [{"type": "text", "text": m["content"]}],
        )
        for m in body["messages"]
    ]
    for index, (role, content) in enumerate(turns):
        for block in content:
            if "cache_control" in block:
                marks.append(len(flat))
            plain = {k: v for k, v in block.items() if k != "cache_control"}
            flat.append(f"{index}|{role}|{json.dumps(plain, sort_keys=True)}")
    return flat, marks


@pytest.mark.slow
def test_the_anthropic_loop_for_100_turns_keeps_its_cached_prefixes(tmp_path: Path) -> None:
    server, stdout = _hundred_turns("anthropic", tmp_path)
    assert len(server.bodies) == 300
    assert int(stdout.strip()) == 100 * 4
    assert any(_summarised(b) for b in server.bodies), "the session never compacted"
    kept = compactions = 0
    for before, after in zip(server.bodies, server.bodies[1:], strict=False):
        flat, marks = _flat(before)
        later, later_marks = _flat(after)
        assert 1 <= len(marks) <= 4 and len(later_marks) <= 4
        summaries = [b for b in flat if "[LCM summary" in b]
        if summaries != [b for b in later if "[LCM summary" in b]:
            compactions += 1  # a compaction in between: the prefix starts anew
            continue
        # No compaction in between: the whole prefix up to the last breakpoint is sent
        # again byte for byte, so the provider serves it from its cache.
        assert later[: marks[-1] + 1] == flat[: marks[-1] + 1], (len(flat), marks)
        kept += 1
    assert compactions > 0 and kept > 200, (compactions, kept)
