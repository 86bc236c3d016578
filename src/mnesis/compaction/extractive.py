"""The offline extractive summariser: Level 1's eight sections, filled from the text itself.

No model and no network: the goal comes from the first user turns, constraints
from imperative sentences, and files, commands, identifiers, errors and
decisions from pattern matches over messages and tool calls. Items are added
by priority, round-robin across sections, until the token target is reached,
so the output always honours ``target_tokens``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from mnesis.compaction.facts import CURRENT_TASK, extract_facts, item_key
from mnesis.compaction.facts import IDENT_RE as _IDENT_RE  # noqa: F401  (benchmarks/bench_summariser.py)
from mnesis.compaction.facts import PATH_RE as _PATH_RE  # noqa: F401
from mnesis.compaction.prompts import LEVEL1_SECTIONS
from mnesis.models.message import MessageWithParts
from mnesis.tokens.estimator import TokenEstimator

__all__ = [
    "extract_facts",
    "extractive_condense",
    "extractive_summary",
    "fit_sections",
    "parse_sections",
]

# Round-robin priority: which sections get the next item first.
_PRIORITY = (0, 1, 6, 7, 2, 3, 5, 4)


def extractive_summary(
    messages: Iterable[MessageWithParts],
    *,
    target_tokens: int,
    estimator: TokenEstimator,
    compact: bool = False,
) -> str:
    """A Level 1 (or, with ``compact``, Level 2 style) summary within ``target_tokens``."""
    return fit_sections(
        extract_facts(messages), target_tokens=target_tokens, estimator=estimator, compact=compact
    )


def fit_sections(
    facts: dict[str, list[str]],
    *,
    target_tokens: int,
    estimator: TokenEstimator,
    compact: bool = False,
) -> str:
    """Render section items within ``target_tokens``, most important first.

    The goal and the constraints come first (what summaries must not lose), then file
    paths and identifiers as compact comma-separated lists (cheap, and exactly what a
    model needs to find things again), then the other sections round-robin.
    """
    names = list(facts)
    chosen: dict[str, list[str]] = {name: [] for name in names}
    used = sum(estimator.estimate(f"## {n}\n") for n in names) + 8
    taken: set[str] = set()
    cursors = dict.fromkeys(names, 0)
    listed = {LEVEL1_SECTIONS[6], LEVEL1_SECTIONS[7]}

    def take(name: str, limit: float, count: int | None = None) -> bool:
        nonlocal used
        added = False
        items = facts.get(name, [])
        while cursors[name] < len(items) and (count is None or count > 0):
            item = items[cursors[name]]
            if item in taken:
                cursors[name] += 1
                continue
            cost = estimator.estimate(item) + (1 if name in listed else 2)
            if used + cost > limit:
                return added
            cursors[name] += 1
            chosen[name].append(item)
            taken.add(item)
            used += cost
            added = True
            if count is not None:
                count -= 1
        return added

    sections = {name: name for name in names}
    goal, constraints = LEVEL1_SECTIONS[0], LEVEL1_SECTIONS[1]
    if constraints in facts:
        # The user's own instructions before the decisions taken along the way.
        items = facts[constraints]
        facts = {
            **facts,
            constraints: [i for i in items if not i.startswith("Decision:")]
            + [i for i in items if i.startswith("Decision:")],
        }
    if goal in sections:
        take(goal, target_tokens, count=2)
    if constraints in sections:
        take(constraints, target_tokens * 0.4)
    for name in (LEVEL1_SECTIONS[6], LEVEL1_SECTIONS[7]):
        if name in sections:
            take(name, target_tokens * (0.6 if name == LEVEL1_SECTIONS[6] else 0.75))
    progress = True
    while progress:
        progress = False
        for index in _PRIORITY:
            if index < len(names) and take(names[index], target_tokens, count=1):
                progress = True
    lines: list[str] = []
    for name in names:
        items = chosen[name]
        if compact:
            if items:
                lines.append(f"{name.upper()}: " + "; ".join(items))
            continue
        lines.append(f"## {name}")
        if not items:
            lines.append("-")
        elif name in listed:
            lines.append("- " + ", ".join(items))
        else:
            lines.extend(f"- {item}" for item in items)
    text = "\n".join(lines)
    while estimator.estimate(text) > target_tokens and len(text) > 16:
        text = text[: int(len(text) * 0.9)]
    return text


_LEVEL2_TO_SECTION = {
    "GOAL": LEVEL1_SECTIONS[0],
    "CONSTRAINTS": LEVEL1_SECTIONS[1],
    "FILES": LEVEL1_SECTIONS[6],
    "NEXT": LEVEL1_SECTIONS[5],
    "CONTEXT": LEVEL1_SECTIONS[7],
}


def parse_sections(text: str) -> dict[str, list[str]]:
    """Items per Level 1 section of a summary (Level 1 or Level 2 format, or free text).

    The comma-separated lists of files and identifiers are split back into items.
    """
    sections: dict[str, list[str]] = {name: [] for name in LEVEL1_SECTIONS}
    by_lower = {name.lower(): name for name in LEVEL1_SECTIONS}
    listed = {LEVEL1_SECTIONS[6], LEVEL1_SECTIONS[7], "FILES"}
    current = LEVEL1_SECTIONS[7]
    for raw in text.splitlines():
        line = raw.strip()
        if not line or (line.startswith("[") and line.endswith("]")):
            continue
        if line.startswith("#"):
            current = by_lower.get(line.lstrip("#").strip().lower(), LEVEL1_SECTIONS[7])
            continue
        head, sep, rest = line.partition(":")
        if sep and head.strip().upper() in _LEVEL2_TO_SECTION:
            target = _LEVEL2_TO_SECTION[head.strip().upper()]
            sep_re = r"[;,]\s+" if head.strip().upper() in listed else r";\s*"
            sections[target].extend(p.strip() for p in re.split(sep_re, rest) if p.strip())
            continue
        item = line[2:].strip() if line.startswith(("- ", "* ")) else line
        if not item or item == "-":
            continue
        if current in listed:
            sections[current].extend(p.strip() for p in item.split(", ") if p.strip())
        else:
            sections[current].append(item)
    return sections


def extractive_condense(
    contents: Sequence[str], *, target_tokens: int, estimator: TokenEstimator
) -> str:
    """Merge summaries (oldest first) section by section, within ``target_tokens``.

    Items are de-duplicated (case, spacing and labels ignored), never concatenated.
    The goal keeps the oldest standing request and the newest current task; the
    constraints and the findings keep their oldest items first (they accumulate);
    progress, remaining work and files come from the newest summaries first.
    """
    parsed = [parse_sections(c) for c in contents]
    newest_first = (LEVEL1_SECTIONS[3], LEVEL1_SECTIONS[4], LEVEL1_SECTIONS[5], LEVEL1_SECTIONS[6])
    merged: dict[str, list[str]] = {}
    for name in LEVEL1_SECTIONS:
        seen: dict[str, str] = {}
        for sections in reversed(parsed) if name in newest_first else parsed:
            for item in sections[name]:
                seen.setdefault(item_key(item), item)
        merged[name] = list(seen.values())
    goals = merged[LEVEL1_SECTIONS[0]]
    standing = [g for g in goals if not g.startswith(CURRENT_TASK)]
    tasks = [g for g in goals if g.startswith(CURRENT_TASK)]
    merged[LEVEL1_SECTIONS[0]] = standing[:1] + tasks[-1:] + standing[1:]
    return fit_sections(merged, target_tokens=target_tokens, estimator=estimator)
