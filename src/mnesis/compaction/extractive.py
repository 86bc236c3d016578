"""The offline extractive summariser: Level 1's eight sections, filled from the text itself.

No model and no network: the goal comes from the first user turns, constraints
from imperative sentences, and files, commands, identifiers, errors and
decisions from pattern matches over messages and tool calls. Items are added
by priority, round-robin across sections, until the token target is reached,
so the output always honours ``target_tokens``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence

from mnesis.compaction.prompts import LEVEL1_SECTIONS
from mnesis.models.message import MessageWithParts
from mnesis.models.parts import FileRefPart, PatchPart, TextPart, ToolPart
from mnesis.tokens.estimator import TokenEstimator

__all__ = [
    "extract_facts",
    "extractive_condense",
    "extractive_summary",
    "fit_sections",
    "parse_sections",
]

_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+|\n+")
_CONSTRAINT_RE = re.compile(
    r"\b(must|never|always|do not|don't|should|shouldn't|required?|make sure|only|avoid|"
    r"no longer|ensure|prefer|forbidden|not allowed)\b",
    re.IGNORECASE,
)
_DECISION_RE = re.compile(
    r"\b(decided|decision|we will|we'll|going with|chose|switch(?:ed)? to|moved? (?:the )?\w+ "
    r"to|instead of|settled on|agreed)\b",
    re.IGNORECASE,
)
_ERROR_RE = re.compile(
    r"\b(error|exception|traceback|failed|failure|panic|fatal|denied|refused|timeout)\b",
    re.IGNORECASE,
)
_TODO_RE = re.compile(r"\b(todo|next step|remaining|still need|later|follow[- ]up)\b", re.I)
_PATH_RE = re.compile(
    r"(?<![\w/.-])(?:~?/)?(?:[\w.-]+/)+[\w.-]+|(?<![\w/.-])[\w-]+\.(?:py|pyi|ts|tsx|js|jsx|json|"
    r"ya?ml|toml|md|sql|sh|go|rs|java|kt|c|h|cc|cpp|hpp|txt|csv|tsv|cfg|ini|lock|html|css|"
    r"proto|env)\b"
)
_IDENT_RE = re.compile(
    r"`([^`\n]{2,80})`"
    r"|\b((?:https?|postgres(?:ql)?|redis|s3)://[^\s)\]>\"']+)"
    r"|\b([A-Z][A-Z0-9]*_[A-Z0-9_]{2,})\b"
    r"|\b((?:sess|msg|sum|file|part)_[0-9A-Za-z]{8,})\b"
    r"|\b(v?\d+\.\d+\.\d+(?:[-+][\w.]+)?)\b"
    r"|\b((?:port|PORT)\s*[:=]?\s*\d{2,5})\b"
    r"|\b([\w.-]+:\d{2,5})\b"
    r"|\b([0-9a-f]{7,40})\b"
)


# Sentences a user starts with one of these words state standing rules ("Keep the sync
# client importable until v2.4.0"), unless they are a short nod ("Keep going."). Task
# verbs ("Run the tests", "Use grep") are deliberately absent: they are work, not rules.
_IMPERATIVE_STARTS = frozenset("keep always never don't avoid remember prefer stop".split())


def _is_instruction(sentence: str) -> bool:
    words = sentence.split()
    return len(words) >= 4 and words[0].lower().strip(",:;") in _IMPERATIVE_STARTS


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_RE.split(text) if s and s.strip()]


def _clip(text: str, limit: int = 220) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _add(bucket: dict[str, None], item: str) -> None:
    item = item.strip()
    if item:
        bucket.setdefault(item, None)


def _tool_command(part: ToolPart) -> str:
    for key in ("command", "cmd", "path", "file", "query", "pattern", "url"):
        value = part.input.get(key)
        if isinstance(value, str) and value:
            return f"{part.tool_name} {value}"
    if part.input:
        return f"{part.tool_name} {json.dumps(part.input, sort_keys=True)[:120]}"
    return part.tool_name


def extract_facts(messages: Iterable[MessageWithParts]) -> dict[str, list[str]]:
    """Candidate items per Level 1 section, most important first."""
    goal: dict[str, None] = {}
    constraints: dict[str, None] = {}
    findings: dict[str, None] = {}
    completed: dict[str, None] = {}
    progress: dict[str, None] = {}
    remaining: dict[str, None] = {}
    files: dict[str, None] = {}
    other: dict[str, None] = {}
    user_turns = 0
    last_assistant = ""
    for message in messages:
        role = message.role
        for part in message.parts:
            texts: list[str] = []
            if isinstance(part, TextPart):
                texts.append(part.text)
                if role == "user":
                    user_turns += 1
                    if user_turns <= 2:
                        _add(goal, _clip(" ".join(_sentences(part.text)[:2]), 300))
                elif role == "assistant":
                    last_assistant = part.text
            elif isinstance(part, ToolPart):
                command = _clip(_tool_command(part), 160)
                state = part.status.state
                if state == "completed":
                    _add(completed, command)
                elif state == "error":
                    _add(findings, _clip(f"{command} failed: {part.error_message or ''}"))
                else:
                    _add(progress, f"{command} ({state})")
                _scan(
                    json.dumps(part.input, ensure_ascii=False),
                    role,
                    constraints,
                    findings,
                    remaining,
                    files,
                    other,
                    sentences=False,
                )
                if part.output and part.status.compacted_at is None:
                    texts.append(part.output)
                if part.error_message:
                    texts.append(part.error_message)
            elif isinstance(part, FileRefPart):
                _add(files, part.path)
                if part.file_id:
                    _add(other, part.file_id)
            elif isinstance(part, PatchPart):
                for f in part.files:
                    _add(files, f)
            for text in texts:
                _scan(text, role, constraints, findings, remaining, files, other)
    if last_assistant:
        first = _sentences(last_assistant)
        if first:
            _add(progress, _clip(first[0]))
    return {
        LEVEL1_SECTIONS[0]: list(goal),
        LEVEL1_SECTIONS[1]: list(constraints),
        LEVEL1_SECTIONS[2]: list(findings),
        LEVEL1_SECTIONS[3]: list(completed),
        LEVEL1_SECTIONS[4]: list(progress),
        LEVEL1_SECTIONS[5]: list(remaining),
        LEVEL1_SECTIONS[6]: list(files),
        LEVEL1_SECTIONS[7]: list(other),
    }


def _scan(
    text: str,
    role: str,
    constraints: dict[str, None],
    findings: dict[str, None],
    remaining: dict[str, None],
    files: dict[str, None],
    other: dict[str, None],
    *,
    sentences: bool = True,
) -> None:
    if len(text) > 200_000:
        text = text[:100_000] + "\n" + text[-100_000:]
    for match in _PATH_RE.finditer(text):
        path = match.group(0).rstrip(".,:;")
        if "/" in path or "." in path:
            _add(files, path)
    for match in _IDENT_RE.finditer(text):
        value = next(g for g in match.groups() if g)
        _add(other, value.strip())
    if not sentences:
        return
    for sentence in _sentences(text):
        if len(sentence) < 8:
            continue
        if role == "user" and (_CONSTRAINT_RE.search(sentence) or _is_instruction(sentence)):
            _add(constraints, _clip(sentence))
        elif _DECISION_RE.search(sentence):
            # Decisions bind later work like constraints do: keep them with the
            # constraints, which every summary and merge keeps first.
            decision = _clip(sentence)
            if not decision.lower().startswith("decision"):
                decision = f"Decision: {decision}"
            _add(constraints, decision)
        elif _ERROR_RE.search(sentence) and len(sentence) < 400:
            _add(findings, _clip(sentence))
        if _TODO_RE.search(sentence):
            _add(remaining, _clip(sentence))


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
    """Items per Level 1 section of a summary (Level 1 or Level 2 format, or free text)."""
    sections: dict[str, list[str]] = {name: [] for name in LEVEL1_SECTIONS}
    by_lower = {name.lower(): name for name in LEVEL1_SECTIONS}
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
            sections[target].extend(p.strip() for p in rest.split(";") if p.strip())
            continue
        item = line[2:].strip() if line.startswith(("- ", "* ")) else line
        if item and item != "-":
            sections[current].append(item)
    return sections


def extractive_condense(
    contents: Sequence[str], *, target_tokens: int, estimator: TokenEstimator
) -> str:
    """Merge summaries (oldest first) section by section, within ``target_tokens``.

    Goals and constraints keep their oldest items first (they accumulate);
    progress and remaining work come from the newest summaries first.
    """
    merged: dict[str, dict[str, None]] = {name: {} for name in LEVEL1_SECTIONS}
    parsed = [parse_sections(c) for c in contents]
    newest_first = (LEVEL1_SECTIONS[3], LEVEL1_SECTIONS[4], LEVEL1_SECTIONS[5], LEVEL1_SECTIONS[6])
    for name in LEVEL1_SECTIONS:
        order = reversed(parsed) if name in newest_first else iter(parsed)
        for sections in order:
            for item in sections[name]:
                merged[name].setdefault(item, None)
    return fit_sections(
        {name: list(items) for name, items in merged.items()},
        target_tokens=target_tokens,
        estimator=estimator,
    )
