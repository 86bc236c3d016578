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
from collections.abc import Iterable

from mnesis.compaction.prompts import LEVEL1_SECTIONS
from mnesis.models.message import MessageWithParts
from mnesis.models.parts import FileRefPart, PatchPart, TextPart, ToolPart
from mnesis.tokens.estimator import TokenEstimator

__all__ = ["extract_facts", "extractive_summary"]

_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+|\n+")
_CONSTRAINT_RE = re.compile(
    r"\b(must|never|always|do not|don't|should|shouldn't|required?|make sure|only|avoid|"
    r"no longer|keep|ensure|prefer|forbidden|not allowed)\b",
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
                texts.append(json.dumps(part.input, ensure_ascii=False))
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
    for sentence in _sentences(text):
        if len(sentence) < 8:
            continue
        if role == "user" and _CONSTRAINT_RE.search(sentence):
            _add(constraints, _clip(sentence))
        elif _DECISION_RE.search(sentence) or (_ERROR_RE.search(sentence) and len(sentence) < 400):
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
    facts = extract_facts(messages)
    names = list(facts)
    chosen: dict[str, list[str]] = {name: [] for name in names}
    header_cost = sum(estimator.estimate(f"## {n}\n") for n in names) + 8
    used = header_cost
    cursors = dict.fromkeys(names, 0)
    progress = True
    while progress:
        progress = False
        for index in _PRIORITY:
            name = names[index]
            items = facts[name]
            while cursors[name] < len(items):
                item = items[cursors[name]]
                cursors[name] += 1
                cost = estimator.estimate(item) + 2
                if used + cost <= target_tokens:
                    chosen[name].append(item)
                    used += cost
                    progress = True
                    break
    lines: list[str] = []
    for name in names:
        if compact:
            if chosen[name]:
                lines.append(f"{name.upper()}: " + "; ".join(chosen[name]))
            continue
        lines.append(f"## {name}")
        lines.extend(f"- {item}" for item in chosen[name]) if chosen[name] else lines.append("-")
    text = "\n".join(lines)
    while estimator.estimate(text) > target_tokens and len(text) > 16:
        text = text[: int(len(text) * 0.9)]
    return text
