"""``import mnesis`` and ``import mnesis.integrations`` import no agent framework."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FRAMEWORKS = ["agents", "pydantic_ai", "langchain_core", "langgraph", "google.adk"]


def test_the_core_never_imports_a_framework() -> None:
    code = (
        "import sys, mnesis, mnesis.integrations, mnesis.integrations.append_only, "
        "mnesis.integrations.tools\n"
        f"print([m for m in {FRAMEWORKS!r} if m in sys.modules])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
