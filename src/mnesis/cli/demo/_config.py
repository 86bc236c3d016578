"""The demo's configuration: the fake model, a 32k window, offline extractive summaries."""

from __future__ import annotations

from mnesis.config import CompactionConfig, MnesisConfig, StoreConfig

__all__ = ["DEFAULT_DEMO_DB", "DEMO_MODEL", "DEMO_OVERRIDES", "SYSTEM_PROMPT", "demo_config"]

DEMO_MODEL = "fake/demo"
"""The model string of demo sessions: the built-in fake, no key and no network."""
DEFAULT_DEMO_DB = "mnesis-demo.db"
"""Where ``mnesis demo`` writes unless ``--db`` is given (in the current directory)."""
DEMO_OVERRIDES = {"context_limit": 32_000, "max_output_tokens": 2_000}
"""The demo's window: small, so that compaction happens every few turns."""
SYSTEM_PROMPT = (
    "You are a senior Python engineer working in the acme/payments repository. Use the "
    "bash, read_file, grep and edit tools; keep changes small and run the tests after each."
)
"""The system prompt of demo sessions."""


def demo_config(db_path: str = DEFAULT_DEMO_DB) -> MnesisConfig:
    """The configuration of demo sessions: a 32k window and offline extractive summaries.

    The window is small so that a few hundred turns go through many compactions; every
    other compaction setting is the default, which scales with the window.
    """
    return MnesisConfig(
        store=StoreConfig(db_path=db_path),
        model_overrides=dict(DEMO_OVERRIDES),
        compaction=CompactionConfig(compaction_model="extractive"),
    )
