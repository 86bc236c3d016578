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
from mnesis.compaction.recognise import (
    is_ack,
    is_identifier,
    is_path,
    is_question,
    looks_like_code,
)
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
    r"(?<![\w/.:@-])(?:~?/|\.{1,2}/)?(?:[\w.@+-]+/)+(?:[\w.@+-]+)?"
    r"|(?<![\w/.:@-])[\w.-]*\w\.[A-Za-z0-9]{1,8}\b"
)
_IDENT_RE = re.compile(
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
_CURRENT_TASK = "Current task: "
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


def _key(item: str) -> str:
    """The de-duplication key of an item: case, spacing and a "Decision:" label ignored."""
    text = " ".join(item.split()).casefold()
    for prefix in ("decision:", _CURRENT_TASK.casefold().strip()):
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
            goal = [_CURRENT_TASK + _NEXT_RE.sub("", self.last_task).strip()]
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
        self.said_by_user.update(_key(s) for s in _sentences(text))

    def scan(self, text: str, role: str, *, sentences: bool = True) -> None:
        if len(text) > 200_000:
            text = text[:100_000] + "\n" + text[-100_000:]
        if role == "assistant":
            text = _TAG_RE.sub("", text)
        for match in _PATH_RE.finditer(text):
            path = match.group(0).rstrip(".,:;")
            if path[:2] in ("a/", "b/") and path.count("/") >= 2:
                path = path[2:]  # a diff's a/ and b/ sides
            if is_path(path):
                _add(self.files, path)
        for match in _IDENT_RE.finditer(text):
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
        if _key(sentence) in self.said_by_user or is_question(sentence):
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
            if len(s) >= 8 and not looks_like_code(s) and _key(s) not in facts.said_by_user
        ]
        if first:
            _add(facts.progress, _clip(first[0]))
    return facts.sections()


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
                seen.setdefault(_key(item), item)
        merged[name] = list(seen.values())
    goals = merged[LEVEL1_SECTIONS[0]]
    standing = [g for g in goals if not g.startswith(_CURRENT_TASK)]
    tasks = [g for g in goals if g.startswith(_CURRENT_TASK)]
    merged[LEVEL1_SECTIONS[0]] = standing[:1] + tasks[-1:] + standing[1:]
    return fit_sections(merged, target_tokens=target_tokens, estimator=estimator)
