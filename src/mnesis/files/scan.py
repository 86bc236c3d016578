"""Reading files in chunks, never whole unless small: one pass that hashes a file (and
keeps its bytes when it may go inline), token sampling of large files, and verified
reads of a whole file or a line range (the content must still hash to its reference)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from mnesis.errors import (
    FileAccessError,
    FileChangedError,
    FileMissingError,
    InvalidArgumentError,
    MnesisError,
    OutOfScopeError,
)
from mnesis.files.access import confine, open_regular
from mnesis.files.detect import HEAD_BYTES
from mnesis.store.base import FileReference
from mnesis.tokens.estimator import TokenEstimator

__all__ = ["INLINE_MAX_BYTES", "Scan", "Unsteady", "read_any", "sample_tokens", "scan_file"]

INLINE_MAX_BYTES = 8 * 1024 * 1024
"""A file larger than this is never inlined, whatever ``inline_threshold`` says."""
_CHUNK = 1024 * 1024
_SAMPLE_WINDOWS = 16
_SAMPLE_WINDOW_BYTES = 64 * 1024


@dataclass(slots=True)
class Scan:
    """One pass over a file: its hash, size, first bytes, and content if it is small."""

    path: str
    """The absolute path as given (stored in the reference)."""
    opened: str
    """The path actually read: ``path`` resolved when ``allowed_roots`` is set."""
    size: int
    content_id: str
    head: bytes
    data: bytes | None
    stamp: tuple[int, int]
    """``(size, mtime_ns)`` when the scan started, to notice a file changing under us."""


class Unsteady(Exception):
    """The file changed while it was being handled; start again."""


def scan_file(path: str, opened: str, confined: bool) -> Scan:
    """Hash the file ``opened`` in chunks; keep its bytes only if small enough to inline.

    ``path`` (absolute, as stored in the reference) names it in errors; ``confined``
    (``allowed_roots`` set) refuses a symlink swapped in at ``opened``.
    """
    with os.fdopen(open_regular(opened, nofollow=confined), "rb") as handle:
        before = os.fstat(handle.fileno())
        stamp = (before.st_size, before.st_mtime_ns)
        keep = before.st_size <= INLINE_MAX_BYTES
        hasher = hashlib.sha256()
        kept: list[bytes] = []
        head = b""
        size = 0
        try:
            while chunk := handle.read(_CHUNK):
                hasher.update(chunk)
                if size == 0:
                    head = chunk[:HEAD_BYTES]
                size += len(chunk)
                if keep:
                    kept.append(chunk)
                    keep = size <= INLINE_MAX_BYTES
            after = os.fstat(handle.fileno())
        except OSError as exc:
            raise FileAccessError(path, exc.strerror or str(exc)) from exc
    if size != stamp[0] or (after.st_size, after.st_mtime_ns) != stamp:
        raise Unsteady  # written to while it was hashed
    data = b"".join(kept) if keep else None
    return Scan(path, opened, size, hasher.hexdigest(), head, data, stamp)


def sample_tokens(scan: Scan, estimator: TokenEstimator) -> int:
    """Estimate a file's tokens from up to 16 evenly spaced 64 KB windows."""
    if scan.size == 0:
        return 0
    windows = min(_SAMPLE_WINDOWS, -(-scan.size // _SAMPLE_WINDOW_BYTES))
    step = (scan.size - _SAMPLE_WINDOW_BYTES) / max(1, windows - 1)
    tokens = sampled = 0
    with os.fdopen(open_regular(scan.opened), "rb") as handle:
        for index in range(windows):
            offset = max(0, int(index * step))
            if scan.data is not None:
                raw = scan.data[offset : offset + _SAMPLE_WINDOW_BYTES]
            else:
                handle.seek(offset)
                raw = handle.read(_SAMPLE_WINDOW_BYTES)
            # A character cut at a window edge becomes one U+FFFD: noise, not bias.
            tokens += estimator.estimate(raw.decode("utf-8", errors="replace"))
            sampled += len(raw)
    return max(1, round(tokens * scan.size / sampled)) if sampled else 0


def read_any(
    ref: FileReference,
    paths: list[str],
    roots: list[str] | None,
    start: int | None,
    end: int | None,
) -> str:
    """Read from the first of ``paths`` whose content still matches; else raise for the first."""
    first_error: MnesisError | None = None
    for path in paths:
        try:
            return _read_verified(path, confine(path, roots), roots is not None, ref, start, end)
        except (FileAccessError, FileChangedError, InvalidArgumentError, OutOfScopeError) as exc:
            first_error = first_error or exc
    assert first_error is not None
    raise first_error


def _read_verified(
    path: str,
    opened: str,
    confined: bool,
    ref: FileReference,
    start: int | None,
    end: int | None,
) -> str:
    first = start or 1
    whole = first == 1 and end is None
    out = bytearray()
    hasher = hashlib.sha256()
    line = 1  # the line the current position is on
    try:
        fd = open_regular(opened, nofollow=confined)
    except FileMissingError:
        raise FileMissingError(path, ref.file_id) from None
    with os.fdopen(fd, "rb") as handle:
        try:
            while chunk := handle.read(_CHUNK):
                hasher.update(chunk)
                if whole:
                    out += chunk
                elif end is None or line <= end:
                    line = _take_lines(chunk, line, first, end, out)
        except OSError as exc:
            raise FileAccessError(path, exc.strerror or str(exc)) from exc
    actual = hasher.hexdigest()
    if actual != ref.content_id:
        raise FileChangedError(path, ref.content_id, actual)
    return out.decode("utf-8", errors="replace")


def _take_lines(chunk: bytes, line: int, first: int, end: int | None, out: bytearray) -> int:
    """Append the part of ``chunk`` on lines ``first..end`` to ``out``.

    ``line`` is the line the chunk starts on; returns the line it ends on. Every
    search moves forward, so a chunk costs O(its length) whatever the range.
    """
    last = line + chunk.count(b"\n")
    if last < first:
        return last
    pos = 0
    for _ in range(first - line):  # skip to the start of line ``first``
        pos = chunk.index(b"\n", pos) + 1
    line = max(line, first)
    if end is None or last <= end:
        out += chunk[pos:]
        return last
    stop = pos
    for _ in range(end - line + 1):  # through the newline that ends line ``end``
        stop = chunk.index(b"\n", stop) + 1
    out += chunk[pos:stop]
    return last
