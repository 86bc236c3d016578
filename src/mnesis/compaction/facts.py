"""Fact extraction for the extractive summariser: the eight Level-1 sections, read off the text.

The goal comes from the first user turns, constraints from imperative sentences, and
files, commands, identifiers, errors and decisions from pattern matches over messages
and tool calls.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from mnesis.compaction.prompts import LEVEL1_SECTIONS
from mnesis.compaction.recognise import (
    is_ack,
    is_identifier,
    is_path,
    is_question,
    looks_like_code,
)
from mnesis.models.message import MessageWithParts
from mnesis.models.parts import FileRefPart, PatchPart, TextPart, ToolPart

__all__ = ["CURRENT_TASK", "IDENT_RE", "PATH_RE", "extract_facts", "item_key"]

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
PATH_RE = re.compile(
    r"(?<![\w/.:@-])(?:~?/|\.{1,2}/)?(?:[\w.@+-]+/)+(?:[\w.@+-]+)?"
    r"|(?<![\w/.:@-])[\w.-]*\w\.[A-Za-z0-9]{1,8}\b"
)
IDENT_RE = re.compile(
    r"`([^`\n]{2,80})`"
    r"|\b((?:https?|postgres(?:ql)?|redis|s3)://[^\s)\]>\"'`]+)"
    r"|\b([A-Z][A-Z0-9]*_[A-Z0-9_]{2,})\b"
    r"|\b(file_[0-9A-Za-z]{8,})\b"
    r"|(?<![\w.])(v?\d+\.\d+\.\d+(?:[-+][\w.]+)?)(?![\w.])"
    r"|\b((?:port|PORT)\s*[:=]?\s*\d{2,5})\b"
    r"|(?<![\w.])([A-Za-z][\w-]*(?:\.[A-Za-z][\w-]*)*:\d{2,5})\b"
    r"|\b((?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40})\b"
)
_NEXT_RE = re.compile(r"^(?:next|now|then)\b\s*:?", re.IGNORECASE)
_TAG_RE = re.compile(r"^\[[^\]\n]{1,40}\]\s*(?:noted:\s*)?", re.IGNORECASE)


# Sentences a user starts with one of these words state standing rules ("Keep the sync
# client importable until v2.4.0"), unless they are a short nod ("Keep going."). Task
# verbs ("Run the tests", "Use grep") are deliberately absent: they are work, not rules.
_IMPERATIVE_STARTS = frozenset("keep always never don't avoid remember prefer stop".split())
CURRENT_TASK = "Current task: "
"""The prefix of a goal item that names the task in progress (not a standing goal)."""
_GOAL_MIN_WORDS = 12
_VERBATIM_CHARS = 400


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


def item_key(item: str) -> str:
    """The de-duplication key of an item: case, spacing and a "Decision:" label ignored."""
    text = " ".join(item.split()).casefold()
    for prefix in ("decision:", CURRENT_TASK.casefold().strip()):
        if text.startswith(prefix):
            text = text[len(prefix) :].strip()
    return text.rstrip(".")


def _tool_command(part: ToolPart) -> str:
    for key in ("command", "cmd", "path", "file", "query", "pattern", "url"):
        value = part.input.get(key)
        if isinstance(value, str) and value:
            return f"{part.tool_name} {value}"
    if part.input:
        return f"{part.tool_name} {json.dumps(part.input, sort_keys=True)[:120]}"
    return part.tool_name


def _goal_of(text: str) -> str | None:
    """The standing request in a user message, if it states one.

    A goal is a request of some length whose opening is neither a question, a
    constraint nor a nod: "Let's migrate the payments service to async. ...".
    """
    sentences = [s for s in _sentences(text) if not looks_like_code(s)]
    if not sentences or len(text.split()) < _GOAL_MIN_WORDS:
        return None
    first = sentences[0]
    if is_question(first) or is_ack(first) or _CONSTRAINT_RE.search(first):
        return None
    return _clip(" ".join(sentences[:2]), 300)


def _task_of(text: str) -> str | None:
    """A short request that is work, not a rule, a question or a nod ("Next: fx.py.")."""
    text = " ".join(text.split())
    if not text or is_ack(text) or is_question(text) or looks_like_code(text):
        return None
    return _clip(text, 160)


class _Facts:
    """Section buckets being filled from one span of messages."""

    def __init__(self) -> None:
        self.goal: dict[str, None] = {}
        self.constraints: dict[str, None] = {}
        self.findings: dict[str, None] = {}
        self.completed: dict[str, None] = {}
        self.progress: dict[str, None] = {}
        self.remaining: dict[str, None] = {}
        self.files: dict[str, None] = {}
        self.other: dict[str, None] = {}
        self.said_by_user: set[str] = set()
        self.last_task: str | None = None

    def sections(self) -> dict[str, list[str]]:
        goal = list(self.goal)
        if not goal and self.last_task:
            goal = [CURRENT_TASK + _NEXT_RE.sub("", self.last_task).strip()]
        buckets = (
            goal,
            list(self.constraints),
            list(self.findings),
            list(self.completed),
            list(self.progress),
            list(self.remaining),
            list(self.files),
            list(self.other),
        )
        return dict(zip(LEVEL1_SECTIONS, buckets, strict=True))

    def user_text(self, text: str) -> None:
        goal = _goal_of(text)
        if goal is not None:
            _add(self.goal, goal)
        task = _task_of(text) if goal is None else None
        if task is not None and not _CONSTRAINT_RE.search(task) and not _is_instruction(task):
            self.last_task = task
            if _NEXT_RE.match(task):
                _add(self.remaining, task)
        self.said_by_user.update(item_key(s) for s in _sentences(text))

    def scan(self, text: str, role: str, *, sentences: bool = True) -> None:
        if len(text) > 200_000:
            text = text[:100_000] + "\n" + text[-100_000:]
        if role == "assistant":
            text = _TAG_RE.sub("", text)
        for match in PATH_RE.finditer(text):
            path = match.group(0).rstrip(".,:;")
            if path[:2] in ("a/", "b/") and path.count("/") >= 2:
                path = path[2:]  # a diff's a/ and b/ sides
            if is_path(path):
                _add(self.files, path)
        for match in IDENT_RE.finditer(text):
            value = next(g for g in match.groups() if g).strip()
            if match.group(1) is not None and not (is_identifier(value) or is_path(value)):
                continue  # a backticked command or snippet, not a name
            if match.group(7) is not None and is_path(value.rsplit(":", 1)[0]):
                continue  # file:line, a traceback's; the file is listed already
            if not is_path(value):
                _add(self.other, value)
        if sentences:
            for sentence in _sentences(text):
                self._sentence(sentence, role)

    def _sentence(self, sentence: str, role: str) -> None:
        if len(sentence) < 8 or looks_like_code(sentence):
            return
        if role == "user":
            if is_question(sentence) or is_ack(sentence):
                return
            if _CONSTRAINT_RE.search(sentence) or _is_instruction(sentence):
                _add(self.constraints, _clip(sentence, _VERBATIM_CHARS))
            return
        sentence = _TAG_RE.sub("", sentence)
        if item_key(sentence) in self.said_by_user or is_question(sentence):
            return  # an echo of the user, or a question back
        if _DECISION_RE.search(sentence):
            # Decisions bind later work like constraints do: keep them with the
            # constraints, which every summary and merge keeps first.
            decision = _clip(sentence, _VERBATIM_CHARS)
            if not decision.lower().startswith("decision"):
                decision = f"Decision: {decision}"
            _add(self.constraints, decision)
        elif _ERROR_RE.search(sentence) and len(sentence) < 400:
            _add(self.findings, _clip(sentence))
        if _TODO_RE.search(sentence):
            _add(self.remaining, _clip(sentence))


def extract_facts(messages: Iterable[MessageWithParts]) -> dict[str, list[str]]:
    """Candidate items per Level 1 section, most important first."""
    facts = _Facts()
    last_assistant = ""
    for message in messages:
        role = message.role
        for part in message.parts:
            texts: list[str] = []
            if isinstance(part, TextPart):
                texts.append(part.text)
                if role == "user":
                    facts.user_text(part.text)
                elif role == "assistant":
                    last_assistant = part.text
            elif isinstance(part, ToolPart):
                command = _clip(_tool_command(part), 160)
                state = part.status.state
                if state == "completed":
                    _add(facts.completed, command)
                elif state == "error":
                    _add(facts.findings, _clip(f"{command} failed: {part.error_message or ''}"))
                else:
                    _add(facts.progress, f"{command} ({state})")
                facts.scan(json.dumps(part.input, ensure_ascii=False), role, sentences=False)
                if part.output and part.status.compacted_at is None:
                    texts.append(part.output)
                if part.error_message:
                    texts.append(part.error_message)
            elif isinstance(part, FileRefPart):
                _add(facts.files, part.path)
                if part.file_id:
                    _add(facts.other, part.file_id)
            elif isinstance(part, PatchPart):
                for f in part.files:
                    _add(facts.files, f)
            for text in texts:
                facts.scan(text, role)
    if last_assistant:
        first = [
            s
            for s in (_TAG_RE.sub("", s) for s in _sentences(last_assistant))
            if len(s) >= 8 and not looks_like_code(s) and item_key(s) not in facts.said_by_user
        ]
        if first:
            _add(facts.progress, _clip(first[0]))
    return facts.sections()
