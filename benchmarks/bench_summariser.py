"""What the offline extractive summariser keeps, measured on the fixture sessions.

    python -m benchmarks.bench_summariser [--quick]

Each session of ``mnesis.testing.SESSIONS`` is replayed with compaction (32k window,
``compaction_model="extractive"``). For every leaf summary we collect the file paths and
identifiers present in its source span and count how many appear in the summary text:

* *said*: in what the user and assistant wrote and in tool inputs (commands, paths);
* *all*: also in tool outputs (file listings, logs: far more than a 600-token summary
  can hold, so this is a ceiling, not a goal).

File IDs are counted separately: the summary row keeps all of them (``file_ids``),
the footer shows a bounded number. Planted facts: whether the fact's distinctive value
appears in the leaf summary of its span, and in the summary that covers it in the
final context.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sqlite3
import tempfile

from mnesis import MnesisConfig, MnesisSession, StorePool, TextPart, ToolPart
from mnesis.compaction.facts import IDENT_RE, PATH_RE
from mnesis.compaction.file_ids import FILE_ID_RE
from mnesis.config import CompactionConfig
from mnesis.models.message import MessageWithParts
from mnesis.retrieval.results import MessageDescription
from mnesis.testing import SESSIONS, generate, replay

FACT_VALUES = {
    "api_port": "8443",
    "no_migrations": "migrations/",
    "staging_db": "db-staging-7.internal",
    "hashing_decision": "argon2id",
    "release_branch": "release/2024.11",
}


def _config() -> MnesisConfig:
    return MnesisConfig(
        model_overrides={"context_limit": 32_000, "max_output_tokens": 2_000},
        compaction=CompactionConfig(
            compaction_output_budget=4_000,
            compaction_model="extractive",
            prune_protect_tokens=6_000,
            prune_minimum_tokens=3_000,
        ),
    )


def _terms(text: str) -> set[str]:
    found = {m.group(0).rstrip(".,:;") for m in PATH_RE.finditer(text)}
    found |= {next(g for g in m.groups() if g) for m in IDENT_RE.finditer(text)}
    # File IDs are measured separately: the summary row keeps all of them.
    return {t.strip() for t in found if len(t.strip()) > 2 and not FILE_ID_RE.fullmatch(t.strip())}


def _span_terms(messages: list[MessageWithParts]) -> tuple[set[str], set[str]]:
    said: set[str] = set()
    every: set[str] = set()
    for message in messages:
        for part in message.parts:
            if isinstance(part, TextPart):
                said |= _terms(part.text)
            elif isinstance(part, ToolPart):
                said |= _terms(json.dumps(part.input))
                every |= _terms(part.output or "")
    return said, every | said


async def measure(tmp: str, name: str) -> dict[str, float]:
    pool = StorePool()
    session = await MnesisSession.create(
        model="fake/bench", db_path=os.path.join(tmp, f"{name}.db"), pool=pool, config=_config()
    )
    result = await replay(session, generate(SESSIONS[name]))
    await session.compact()
    store = session.store
    with contextlib.closing(sqlite3.connect(os.path.join(tmp, f"{name}.db"))) as raw:
        conn_ids = [
            row[0]
            for row in raw.execute(
                "SELECT id FROM summaries WHERE session_id = ? AND kind = 'leaf'", (session.id,)
            )
        ]
    said_total = said_kept = all_total = all_kept = 0
    fid_total = fid_kept = 0
    for summary_id in conn_ids:
        summary = await store.get_summary(summary_id)
        sources = await store.get_messages_by_ids(await store.get_summary_source_ids(summary_id))
        said, every = _span_terms(sources)
        text = summary.content
        said_total += len(said)
        said_kept += sum(1 for t in said if t in text)
        all_total += len(every)
        all_kept += sum(1 for t in every if t in text)
        span_ids = {
            f for m in sources for p in m.parts for f in FILE_ID_RE.findall(str(p.model_dump()))
        }
        fid_total += len(span_ids)
        fid_kept += len(span_ids & set(summary.file_ids))
    facts_leaf = facts_context = compacted = 0
    for location in result.facts:
        described = await session.describe(location.message_id)
        assert isinstance(described, MessageDescription)
        if described.in_context:
            continue
        compacted += 1
        value = FACT_VALUES[location.fact.key]
        leaves = described.leaf_summary_ids
        if leaves and value in (await store.get_summary(leaves[0])).content:
            facts_leaf += 1
        if (
            described.covering_summary_id
            and value in (await store.get_summary(described.covering_summary_id)).content
        ):
            facts_context += 1
        elif os.environ.get("MNESIS_BENCH_VERBOSE"):
            print(f"  {name}: {location.fact.key} is not in its covering summary")
    await session.close()
    await pool.close_all()
    return {
        "leaves": len(conn_ids),
        "said": said_kept / said_total if said_total else 1.0,
        "all": all_kept / all_total if all_total else 1.0,
        "file_ids": fid_kept / fid_total if fid_total else 1.0,
        "compacted": compacted,
        "facts_leaf": facts_leaf,
        "facts_context": facts_context,
    }


async def main(quick: bool) -> None:
    names = (
        ["bugfix_sprint", "artifact_flood"]
        if quick
        else ["bugfix_sprint", "webapp_auth", "infra_migration", "artifact_flood"]
    )
    print("\nOffline extractive summariser: what leaf summaries keep of their span")
    print(
        f"{'fixture':<17}{'leaves':>7}{'paths+ids said':>16}{'incl. tool output':>19}"
        f"{'file IDs (row)':>16}{'facts in leaf':>15}{'facts in context':>18}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            r = await measure(tmp, name)
            print(
                f"{name:<17}{r['leaves']:>7.0f}{r['said']:>16.0%}{r['all']:>19.0%}"
                f"{r['file_ids']:>16.0%}{r['facts_leaf']:>9.0f}/{r['compacted']:<5.0f}"
                f"{r['facts_context']:>12.0f}/{r['compacted']:<5.0f}"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    asyncio.run(main(parser.parse_args().quick))
