"""The README's "Bring your own LLM" loops run as written, with the OpenAI and the
Anthropic SDK, against the local provider servers."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.providers.servers import FINAL_TEXT, ProviderServer

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
