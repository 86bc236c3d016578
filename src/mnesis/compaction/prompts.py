"""Every prompt the compaction engine sends. Override them in ``CompactionConfig``."""

from __future__ import annotations

__all__ = [
    "CONDENSE_LEVEL1_PROMPT",
    "CONDENSE_LEVEL2_PROMPT",
    "LEVEL1_PROMPT",
    "LEVEL1_SECTIONS",
    "LEVEL2_FIELDS",
    "LEVEL2_PROMPT",
]

LEVEL1_SECTIONS = (
    "Goal",
    "Key Instructions & Constraints",
    "Discoveries & Findings",
    "Completed Work",
    "In Progress",
    "Remaining Work",
    "Relevant Files & Directories",
    "Other Important Context",
)
LEVEL2_FIELDS = ("GOAL", "CONSTRAINTS", "FILES", "NEXT", "CONTEXT")

LEVEL1_PROMPT = (
    "You are the memory of a long-running coding agent. Summarise the conversation "
    "span below so the agent can continue without it. Keep every constraint the user "
    "gave, every file path, command, identifier, error and decision, verbatim where "
    "possible. Answer in Markdown with exactly these sections, in this order:\n"
    + "\n".join(f"## {name}" for name in LEVEL1_SECTIONS)
    + "\nWrite at most {target_tokens} tokens. Do not add commentary outside the sections."
)

LEVEL2_PROMPT = (
    "Compress the conversation span below as tersely as possible, dropping reasoning "
    "and pleasantries but keeping constraints, file paths and identifiers verbatim. "
    "Answer with exactly these five lines:\n"
    + "\n".join(f"{name}: ..." for name in LEVEL2_FIELDS)
    + "\nWrite at most {target_tokens} tokens."
)

CONDENSE_LEVEL1_PROMPT = (
    "Merge the consecutive summaries below (oldest first) into one summary of the whole "
    "span. Keep every constraint, file path, identifier and decision that is still "
    "relevant; later summaries override earlier ones. Use the same Markdown sections:\n"
    + "\n".join(f"## {name}" for name in LEVEL1_SECTIONS)
    + "\nWrite at most {target_tokens} tokens."
)

CONDENSE_LEVEL2_PROMPT = (
    "Merge the summaries below into one terse summary with exactly these five lines:\n"
    + "\n".join(f"{name}: ..." for name in LEVEL2_FIELDS)
    + "\nWrite at most {target_tokens} tokens."
)
