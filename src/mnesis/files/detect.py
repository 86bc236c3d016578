"""File type detection: extension, then content sniffing, then ``python-magic``.

The order is fixed so the answer is cheap and predictable:

1. a file signature that is unambiguous (today only SQLite's 16-byte header);
2. the extension map (``.py`` -> ``python``, ``.csv`` -> ``csv``, ...);
3. a binary check on the first 8 KB: NUL bytes, or bytes that are neither UTF-8
   nor plausible legacy-encoded text;
4. a shebang line (``#!/usr/bin/env python``) for extension-less scripts;
5. ``python-magic`` when it is importable (an optional dependency, never required);
6. ``"binary"`` for binary content, ``"unknown"`` for anything else.

Only the first :data:`HEAD_BYTES` bytes of a file are looked at.
"""

from __future__ import annotations

import codecs
import mimetypes
import os
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "EXTENSION_TYPES",
    "HEAD_BYTES",
    "DetectedType",
    "FileType",
    "detect_file_type",
    "is_binary_data",
    "read_head",
]

HEAD_BYTES = 8192
"""How many leading bytes detection looks at."""

SQLITE_HEADER = b"SQLite format 3\x00"

EXTENSION_TYPES: dict[str, str] = {
    # languages with a structural explorer
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".sql": "sql",
    # data
    ".json": "json",
    ".geojson": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".sqlite": "sqlite",
    ".sqlite3": "sqlite",
    ".db": "sqlite",
    # documents
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".txt": "text",
    ".log": "log",
    ".rst": "rst",
    ".html": "html",
    ".htm": "html",
    ".xml": "xml",
    # other languages (explored with the fallback)
    ".rs": "rust",
    ".go": "go",
    ".java": "java",
    ".kt": "kotlin",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".sh": "shell",
    ".bash": "shell",
    ".css": "css",
    ".ini": "ini",
    ".cfg": "ini",
}
"""Lower-case extension -> file type. Types with an explorer: see ``mnesis.files.explorers``."""

_SIGNATURE_CHECKED = {"sqlite"}
"""Types named by an extension that also need their signature (``.db`` is not always SQLite)."""

_MIME_TYPES = {
    "text/x-python": "python",
    "text/x-script.python": "python",
    "application/json": "json",
    "text/csv": "csv",
    "text/tab-separated-values": "tsv",
    "application/x-sqlite3": "sqlite",
    "application/vnd.sqlite3": "sqlite",
    "text/markdown": "markdown",
    "text/x-markdown": "markdown",
    "application/yaml": "yaml",
    "application/x-yaml": "yaml",
    "text/x-yaml": "yaml",
    "text/yaml": "yaml",
    "application/toml": "toml",
    "application/javascript": "javascript",
    "text/javascript": "javascript",
    "application/sql": "sql",
    "text/x-sql": "sql",
    "text/plain": "text",
    "text/html": "html",
    "text/xml": "xml",
    "application/xml": "xml",
}

_SHEBANGS = {
    "python": "python",
    "node": "javascript",
    "deno": "typescript",
    "bash": "shell",
    "sh": "shell",
    "zsh": "shell",
}

DetectedBy = Literal["signature", "extension", "shebang", "magic", "content"]
FileType = Literal[
    "binary", "c", "cpp", "csharp", "css", "csv", "go", "html", "ini", "java", "javascript",
    "json", "jsonl", "kotlin", "log", "markdown", "php", "python", "rst", "ruby", "rust",
    "shell", "sql", "sqlite", "text", "toml", "tsv", "typescript", "unknown", "xml", "yaml",
]  # fmt: skip
"""Every ``file_type`` detection gives (0.4.0's name; a test keeps it in step)."""


@dataclass(frozen=True, slots=True)
class DetectedType:
    """What :func:`detect_file_type` found out about a file."""

    file_type: str
    """``python``, ``json``, ``csv``, ..., ``binary`` or ``unknown``."""
    is_binary: bool
    """True when the first 8 KB hold NUL bytes or are not text."""
    detected_by: DetectedBy
    mime: str | None = None


def read_head(path: str | os.PathLike[str], size: int = HEAD_BYTES) -> bytes:
    """The first ``size`` bytes of ``path`` (fewer for a shorter file)."""
    with open(path, "rb") as handle:
        return handle.read(size)


def is_binary_data(head: bytes) -> bool:
    """True if ``head`` (the start of a file) looks binary rather than text.

    NUL bytes mean binary. Bytes that do not decode as UTF-8 mean binary only when
    control characters or high bytes are frequent, so Latin-1 or cp1252 text still
    counts as text (it is read with replacement characters).
    """
    if not head:
        return False
    if b"\x00" in head:
        return True
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        # final=False: a multi-byte character cut by the 8 KB boundary is not an error.
        decoder.decode(head, final=False)
        return False
    except UnicodeDecodeError:
        pass
    controls = sum(1 for b in head if (b < 32 and b not in b"\t\n\r\f\b\x1b") or b == 127)
    high = sum(1 for b in head if b >= 128)
    return controls / len(head) > 0.05 or high / len(head) > 0.30


def _shebang_type(head: bytes) -> str | None:
    if not head.startswith(b"#!"):
        return None
    first = head.split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    words = first[2:].split()
    if not words:
        return None
    program = os.path.basename(words[0])
    if program == "env" and len(words) > 1:
        program = words[1] if not words[1].startswith("-") else words[-1]
    program = program.rstrip("0123456789.")
    return _SHEBANGS.get(program)


def _magic_mime(path: str | os.PathLike[str]) -> str | None:
    try:
        import magic
    except ImportError:
        return None
    try:
        mime = magic.from_file(os.fspath(path), mime=True)
    except Exception:  # python-magic raises its own error types, or OSError
        return None
    return mime if isinstance(mime, str) else None


def detect_file_type(
    path: str | os.PathLike[str], head: bytes | None = None, *, use_magic: bool = True
) -> DetectedType:
    """Detect the type of the file at ``path`` from its name and its first bytes.

    ``head`` is the start of the file if the caller already read it (it is read
    here otherwise). Never raises for content; raises ``OSError`` only if ``head``
    is None and the file cannot be read.
    """
    if head is None:
        head = read_head(path)
    binary = is_binary_data(head)
    guessed_mime = mimetypes.guess_type(os.fspath(path), strict=False)[0]
    if head.startswith(SQLITE_HEADER):
        return DetectedType("sqlite", True, "signature", "application/vnd.sqlite3")
    extension = os.path.splitext(os.fspath(path))[1].lower()
    by_extension = EXTENSION_TYPES.get(extension)
    if by_extension is not None and by_extension not in _SIGNATURE_CHECKED:
        return DetectedType(by_extension, binary, "extension", guessed_mime)
    if not binary:
        shebang = _shebang_type(head)
        if shebang is not None:
            return DetectedType(shebang, False, "shebang", guessed_mime)
    mime = _magic_mime(path) if use_magic else None
    if mime is not None:
        from_mime = _MIME_TYPES.get(mime)
        if from_mime is None and not binary and mime.startswith("text/"):
            from_mime = "text"
        if from_mime is not None:
            return DetectedType(from_mime, binary, "magic", mime)
    return DetectedType("binary" if binary else "unknown", binary, "content", mime or guessed_mime)
