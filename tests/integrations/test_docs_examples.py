"""docs/integrations.md's examples run as written, in this process, against the rejecting
OpenAI-compatible server (``OPENAI_BASE_URL``)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from tests.providers.servers import FINAL_TEXT, ProviderServer

DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"
FRAMEWORKS = ["OpenAI Agents SDK", "pydantic-ai", "LangChain / LangGraph", "Google ADK"]


def _example(heading: str) -> str:
    section = DOC.read_text(encoding="utf-8").split(f"\n## {heading}\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    blocks = [b for b in blocks if "asyncio.run" in b]
    assert len(blocks) == 1, heading
    return blocks[0]


@pytest.mark.parametrize("heading", FRAMEWORKS)
def test_the_example_runs(
    heading: str, tmp_path: Path, openai_server: ProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(_example(heading), f"docs/integrations.md ({heading})", "exec"), {})
    assert out.getvalue().strip() == FINAL_TEXT
    assert openai_server.rejected == []
    assert openai_server.bodies, "the example never called the model"
    assert (tmp_path / "agent.db").exists()


def test_the_store_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(_example("LangGraph store"), "docs/integrations.md (store)", "exec"), {})
    assert out.getvalue().strip() == "The deploy port is 8443."
    assert (tmp_path / "memory.db").exists()
