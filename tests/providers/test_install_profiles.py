"""What each install profile can do, proved in a fresh interpreter whose imports of the
missing extras are blocked (the cheapest honest stand-in for a venv without them).

* core only (``pip install mnesis-lcm``): a provider model string goes through create,
  record × 300, compact, context in both formats, grep and load without importing
  litellm; only ``send`` says what to install;
* ``[litellm]`` without ``[mcp]``: the tool loop over HTTP works and never imports mcp.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

BLOCKER = """
import sys

class _Blocked:
    def __init__(self, names):
        self.names = names

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r} (not installed)", name=name)
        return None

sys.meta_path.insert(0, _Blocked(set(sys.argv[1].split(","))))
"""

CORE_ONLY = (Path(__file__).parent / "core_only_scenario.py").read_text(encoding="utf-8")

LITELLM_WITHOUT_MCP = """
import asyncio, os, sys
sys.path.insert(0, os.environ["MNESIS_TEST_ROOT"])
from tests.providers.servers import FINAL_TEXT, serve
from mnesis import MnesisSession
from mnesis.llm import LiteLLMClient

async def main(db):
    server_run = serve("openai")
    server = next(server_run)
    client = LiteLLMClient(api_base=server.base_url + "/v1", api_key="sk-local")
    session = await MnesisSession.create(model="openai/local", db_path=db, llm=client)
    result = await session.send("Which port?", tools=session.lcm_tool_definitions(),
                                run_lcm_tools=True)
    assert result.text == FINAL_TEXT and len(server.bodies) == 2, result
    await session.close()
    server_run.close()

asyncio.run(main(sys.argv[2]))
assert not any(m == "mcp" or m.startswith("mcp.") for m in sys.modules)
print("litellm-without-mcp ok")
"""


def _run(script: str, blocked: str, db: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "MNESIS_TEST_ROOT": str(ROOT),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    env.pop("MNESIS_MOCK_LLM", None)
    code = textwrap.dedent(BLOCKER) + textwrap.dedent(script)
    return subprocess.run(
        [sys.executable, "-c", code, blocked, str(db)],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
        check=False,
    )


@pytest.mark.slow
def test_core_only_never_imports_litellm(tmp_path: Path) -> None:
    done = _run(CORE_ONLY, "litellm,openai,anthropic", tmp_path / "core.db")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "core-only ok" in done.stdout


@pytest.mark.slow
def test_litellm_alone_runs_the_tool_loop_without_mcp(tmp_path: Path) -> None:
    done = _run(LITELLM_WITHOUT_MCP, "mcp", tmp_path / "tools.db")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "litellm-without-mcp ok" in done.stdout


def test_the_blocker_really_blocks(tmp_path: Path) -> None:
    done = _run("import litellm\n", "litellm", tmp_path / "x.db")
    assert done.returncode != 0 and "not installed" in done.stderr
