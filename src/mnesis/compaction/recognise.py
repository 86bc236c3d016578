"""What a span of text is: a file path, an identifier, code, a passing nod, a question.

The extractive summariser files what it finds by these tests. They are deliberately
conservative: a string goes into "Relevant Files & Directories" only if it is a path
(``payments/db/session.py``, ``migrations/``, ``/srv/acme``), never a unit or a
protocol name (``req/s``, ``I/O``, ``HTTP/1.1``); a sentence that reads like code or
markup is not prose; and a user's "Looks good, carry on." is not a goal.
"""

from __future__ import annotations

import re

__all__ = [
    "FILE_EXTENSIONS",
    "is_ack",
    "is_identifier",
    "is_path",
    "is_question",
    "looks_like_code",
]

FILE_EXTENSIONS = frozenset(
    "py pyi ts tsx js jsx mjs json yaml yml toml md rst sql sh go rs java kt c h cc cpp hpp "
    "txt csv tsv cfg ini lock html css proto env ipynb xml conf tf rb php swift".split()
)
"""Extensions that make a single word (``pyproject.toml``) a file name."""

_SEGMENT_RE = re.compile(r"\.?[a-z0-9_][a-z0-9_.@+-]*")
_FILE_NAME_RE = re.compile(r"[\w.@+-]*\w\.([A-Za-z0-9]{1,8})")
_WORD_PAIRS = frozenset(
    "and/or read/write async/await input/output client/server true/false yes/no on/off "
    "sync/async request/response start/stop either/or his/her and/also".split()
)
_UNITS = frozenset(
    "s sec secs second seconds ms us ns min mins minute h hr hour day week op ops req reqs "
    "request requests call calls token tokens tok byte bytes b kb mb gb kib mib gib pkt".split()
)
_IDENTIFIER_RE = re.compile(
    r"[A-Za-z_][\w]*(?:[.:][A-Za-z_][\w]*)*(?:\(\))?"  # names, dotted names, module:attr
    r"|[A-Z][A-Z0-9]*_[A-Z0-9_]+"  # CONSTANTS
)
_ACK_WORDS = frozenset(
    "ok okay sure yes yep fine great good thanks thank you looks carry on continue go ahead "
    "proceed next step keep going lgtm nice perfect cool alright right please do it that".split()
)
_QUESTION_STARTS = frozenset(
    "what why how when where which who is are was were do does did can could would should "
    "will remind summarise summarize tell explain".split()
)
_CODE_RE = re.compile(
    r"^\s*(?:[-+>|#@]|\d+\s*[|:]|```|<|\$ |>>>|def |class |import |from \S+ import |return |"
    r"await |async def |raise |(?:if|for|while|with) .*:$)"
    r"|[{};]\s*$|\w\s+=\s+\S|\w\([^)]*\)\s*[.:]?\s*$|</?[a-zA-Z][\w-]*(?:\s[^>]*)?>|==|!=|->|=>"
)
_BULLET_RE = re.compile(r"^\s*(?:[*\u2022]|-(?=\s+[A-Z])|\d{1,2}[.)])\s+(?=[A-Za-z`])")


def is_path(text: str) -> bool:
    """True if ``text`` names a file or a directory.

    A path has a file extension (``webhooks.py``), or starts at a root
    (``/srv/acme``, ``./x``, ``~/x``), or ends with ``/`` (``migrations/``), or is
    made of lowercase segments at least one of which is a word (``acme/payments``).
    Units and protocols (``req/s``, ``I/O``, ``HTTP/1.1``) are not paths.
    """
    text = text.strip()
    if not text or len(text) > 300 or any(c.isspace() for c in text) or "//" in text:
        return False
    if text.lower() in _WORD_PAIRS:
        return False
    body = text
    for prefix in ("~/", "./", "../", "/"):
        if body.startswith(prefix):
            body = body[len(prefix) :]
            rooted = True
            break
    else:
        rooted = False
    directory = body.endswith("/")
    segments = [s for s in body.split("/") if s]
    if not segments:
        return False
    last = _FILE_NAME_RE.fullmatch(segments[-1])
    if last is not None and last.group(1).lower() in FILE_EXTENSIONS:
        return all(_SEGMENT_RE.fullmatch(s.lower()) for s in segments)
    if not all(_SEGMENT_RE.fullmatch(s) for s in segments):
        return False  # capitals or odd characters in a bare path: "I/O", "HTTP/1.1", "Req/Sec"
    if rooted or directory:
        return any(c.isalpha() for c in body)
    return len(segments) >= 2 and segments[-1] not in _UNITS and any(c.isalpha() for c in body)


def is_identifier(text: str) -> bool:
    """True if ``text`` is a code identifier: ``LegacyLedgerClient``, ``httpx.AsyncClient``."""
    return bool(_IDENTIFIER_RE.fullmatch(text.strip())) and len(text) <= 120


def is_ack(text: str) -> bool:
    """True if ``text`` is a passing nod ("Looks good, carry on.", "OK, next step.")."""
    words = re.findall(r"[a-z']+", text.lower())
    return not words or (len(words) <= 6 and all(w in _ACK_WORDS for w in words))


def is_question(text: str) -> bool:
    """True if ``text`` asks rather than asks for: it ends with ``?`` or opens like a question."""
    stripped = text.strip()
    if stripped.endswith("?"):
        return True
    first = stripped.split(maxsplit=1)[0].lower().strip(",.:;") if stripped else ""
    return first in _QUESTION_STARTS


def looks_like_code(text: str) -> bool:
    """True if ``text`` reads like source code, a diff line, a log line or markup, not prose."""
    text = _BULLET_RE.sub("", text, count=1)
    if _CODE_RE.search(text):
        return True
    symbols = sum(1 for c in text if c in "{}[]()<>=;$|\\`")
    return symbols > max(3, len(text) // 25)
