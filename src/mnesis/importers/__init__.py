"""Transcript import: bring the history other agents already wrote into a mnesis store.

Formats (see each module): Claude Code session JSONL (:mod:`.claude_code`), Codex CLI
rollouts (:mod:`.codex`), OpenAI chat-completions JSON/JSONL (:mod:`.openai_chat`) and
the documented generic JSONL (:mod:`.generic_jsonl`); and databases of the earlier
``mnesis`` library (:func:`upgrade_database`, :mod:`.mnesis_legacy`). One mnesis session per source
session; tool calls and results become :class:`~mnesis.models.parts.ToolPart` s paired
by call ID. :func:`import_file` is idempotent, streaming and tolerant::

    store = await ImmutableStore.open("history.db")
    report = await import_file(store, "~/.claude/projects/p/abc.jsonl")
"""

from mnesis.importers.api import (
    FORMATS,
    ImportReport,
    Parser,
    default_paths,
    detect_format,
    import_file,
)
from mnesis.importers.mnesis_legacy import UpgradeReport, is_legacy_database, upgrade_database

__all__ = [
    "FORMATS",
    "ImportReport",
    "Parser",
    "UpgradeReport",
    "default_paths",
    "detect_format",
    "import_file",
    "is_legacy_database",
    "upgrade_database",
]
