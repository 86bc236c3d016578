"""``LargeFileHandler``: small files go inline, large ones become content-addressed references.

Invariants this module keeps:

* mnesis never stores a file's content. The ``file_references`` row holds its
  path, its sha256 (``content_id``), its size, a token estimate and the
  exploration summary; the caller owns the file on disk.
* Files are read in 1 MB chunks (:mod:`mnesis.files.scan`). Only a file small enough
  to be inlined (at most :data:`INLINE_MAX_BYTES`) is ever held in memory whole; the
  token count of a larger one is estimated from evenly spaced samples.
* The same content is explored once. ``file_id`` is derived from the sha256, so
  it is stable across processes and databases, and the exploration is cached in
  ``file_references`` under ``content_id``.
* :meth:`LargeFileHandler.read` returns content only after checking that its
  sha256 still matches the reference.
* Only regular files are read, checked without blocking; ``FileConfig.allowed_roots``
  confines reads to directories and ``FileConfig.read_timeout`` bounds each blocking
  step (see :mod:`mnesis.files.access`).

Errors (all :class:`~mnesis.errors.MnesisError`)::

    FileChangedError                                the file's sha256 no longer matches
    FileAccessError          (also OSError)         the file cannot be read (or timed out)
    └── FileMissingError     (also FileNotFoundError) the file is gone
    OutOfScopeError          (also PermissionError) the path is outside ``allowed_roots``
    InvalidArgumentError     (also ValueError)      a bad path, or not a regular file
"""

from __future__ import annotations

import asyncio
import logging
import os
import weakref
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

from mnesis.config import FileConfig, MnesisConfig
from mnesis.errors import (
    FileAccessError,
    FileChangedError,
    FileMissingError,
    FileReferenceNotFoundError,
    InvalidArgumentError,
)
from mnesis.files.access import check_path, confine, run_bounded
from mnesis.files.detect import detect_file_type, is_binary_data
from mnesis.files.scan import INLINE_MAX_BYTES, Scan, Unsteady, read_any, sample_tokens, scan_file
from mnesis.models.parts import FileRefPart, TextPart
from mnesis.models.summary import file_id_for
from mnesis.store.base import FileReference
from mnesis.store.immutable import ImmutableStore
from mnesis.tokens.estimator import TokenEstimator

__all__ = [
    "INLINE_MAX_BYTES",
    "MAX_SUMMARY_TOKENS",
    "FileAccessError",
    "FileChangedError",
    "FileHandleResult",
    "FileMissingError",
    "LargeFileHandler",
    "file_id_for",
]

logger = logging.getLogger("mnesis.files")

MAX_SUMMARY_TOKENS = 2_000
"""An exploration summary is cut to this many tokens."""
_EXACT_TOKEN_BYTES = 1024 * 1024
"""Files up to this size have their tokens counted on the whole text."""
_HEX = frozenset("0123456789abcdef")
T = TypeVar("T")


class FileHandleResult(BaseModel):
    """What :meth:`LargeFileHandler.handle_file` decided: exactly one of
    ``inline_content`` and ``file_ref`` is set."""

    model_config = ConfigDict(frozen=True)

    path: str = ""
    """The absolute path of the file handled."""
    inline_content: str | None = None
    """The text of a file under the inline threshold."""
    file_ref: FileRefPart | None = None
    """The reference to a file at or above the threshold."""
    token_count: int = 0
    """Tokens of the content (exact when inlined, estimated for large files)."""
    cache_hit: bool = False
    """True if the reference came from ``file_references`` without a new exploration."""

    @property
    def is_inline(self) -> bool:
        """True if the file goes into the message as text."""
        return self.file_ref is None

    def to_part(self) -> TextPart | FileRefPart:
        """The message part to append: a ``TextPart`` or the ``FileRefPart``."""
        if self.file_ref is not None:
            return self.file_ref
        return TextPart(text=self.inline_content or "")


_ATTEMPTS = 3


class LargeFileHandler:
    """Turns files into inline text or content-addressed :class:`FileRefPart` references.

    ``exploration_count`` counts the explorations this handler ran; a cache hit
    does not add to it.
    """

    def __init__(
        self,
        store: ImmutableStore,
        estimator: TokenEstimator | None = None,
        config: FileConfig | None = None,
    ) -> None:
        self.store = store
        self.estimator = estimator or TokenEstimator()
        self.config = config or FileConfig()
        self.exploration_count = 0
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._seen_paths: dict[str, list[str]] = {}

    # -- handling ------------------------------------------------------------
    @classmethod
    def from_session(cls, session: object) -> LargeFileHandler:
        """A handler over a session's store, with its file configuration and its model's
        encoding (``session`` is a :class:`~mnesis.MnesisSession`; its own
        ``handle_file`` also records the session on the references)."""
        store = getattr(session, "store", None)
        config = getattr(session, "config", None)
        info = getattr(session, "model_info", None)
        if not isinstance(store, ImmutableStore) or not isinstance(config, MnesisConfig):
            raise InvalidArgumentError(
                f"from_session needs a MnesisSession, got {type(session).__name__}"
            )
        encoding = getattr(info, "encoding", "cl100k_base")
        return cls(store, TokenEstimator(encoding), config.file)

    async def handle_file(
        self,
        path: str | os.PathLike[str],
        *,
        content: str | bytes | None = None,
        session_id: str | None = None,
    ) -> FileHandleResult:
        """Inline the file at ``path`` or reference it, exploring new content once.

        Under ``config.inline_threshold`` tokens (and :data:`INLINE_MAX_BYTES`), a
        text file is returned as ``inline_content`` and nothing is stored. Otherwise
        (and always for binary files) the result holds a ``FileRefPart``; a new
        ``content_id`` is explored and written to ``file_references`` (with
        ``session_id``), a known one is served from there. A file that is written to
        while it is handled is read again (at most three times), so the summary
        always describes the content that was hashed.

        Raises ``FileMissingError`` if there is no file at ``path``,
        ``FileAccessError`` if it cannot be read (or never holds still, or a step
        takes over ``config.read_timeout`` seconds), ``OutOfScopeError`` if it
        resolves outside ``config.allowed_roots`` and ``InvalidArgumentError`` for
        a malformed path or anything but a regular file (FIFOs are refused without
        blocking).
        """
        absolute = check_path(path)
        if content is not None:
            raise InvalidArgumentError(
                "handle_file(content=...) is not supported: a reference is read back from "
                "the file on disk and checked against its sha256; write the content to a "
                "file and pass its path"
            )
        if session_id is not None and not isinstance(session_id, str):
            raise InvalidArgumentError(
                f"session_id must be a string, got {type(session_id).__name__}"
            )
        for _ in range(_ATTEMPTS):
            try:
                return await self._handle_once(absolute, session_id)
            except Unsteady:
                logger.debug("%s changed while it was handled; starting again", absolute)
        raise FileAccessError(
            absolute,
            f"it changed during each of {_ATTEMPTS} attempts to read it; retry once it is stable",
        )

    async def _bounded(self, fn: Callable[[], T], path: str) -> T:
        return await run_bounded(fn, self.config.read_timeout, path)

    async def _handle_once(self, path: str, session_id: str | None) -> FileHandleResult:
        opened = confine(path, self.config.allowed_roots)
        confined = self.config.allowed_roots is not None
        scan = await self._bounded(lambda: scan_file(path, opened, confined), path)
        absolute = scan.path
        binary = is_binary_data(scan.head)
        tokens: int | None = None
        if not binary and scan.data is not None:
            text, counted = await self._bounded(lambda: self._inline_text(scan), path)
            if text is not None:
                return FileHandleResult(path=absolute, inline_content=text, token_count=counted)
            tokens = counted
        self._remember(scan.content_id, absolute)
        async with self._lock_for(scan.content_id):
            cached = await self.store.get_file_reference(scan.content_id)
            if cached is not None:
                logger.debug("file reference cache hit for %s (%s)", absolute, cached.file_id)
                return FileHandleResult(
                    path=absolute,
                    file_ref=_part(cached, absolute),
                    token_count=cached.token_count,
                    cache_hit=True,
                )
            if tokens is None:
                tokens = await self._bounded(lambda: sample_tokens(scan, self.estimator), path)
            file_type, summary = await self._bounded(lambda: self._explore(scan), path)
            self.exploration_count += 1
            stored = await self.store.store_file_reference(
                FileReference(
                    content_id=scan.content_id,
                    file_id=file_id_for(scan.content_id),
                    path=absolute,
                    file_type=file_type,
                    token_count=tokens,
                    exploration_summary=summary,
                    byte_size=scan.size,
                    session_id=session_id,
                )
            )
        logger.debug(
            "referenced %s as %s (%s, ~%d tokens)", absolute, stored.file_id, file_type, tokens
        )
        return FileHandleResult(
            path=absolute, file_ref=_part(stored, absolute), token_count=stored.token_count
        )

    def _inline_text(self, scan: Scan) -> tuple[str | None, int]:
        """``(text, tokens)`` if the file goes inline, else ``(None, estimated tokens)``."""
        assert scan.data is not None
        threshold = self.config.inline_threshold
        if scan.size > _EXACT_TOKEN_BYTES:
            estimate = sample_tokens(scan, self.estimator)
            if estimate >= threshold:
                return None, estimate
        text = scan.data.decode("utf-8", errors="replace")
        tokens = self.estimator.estimate(text)
        return (text if tokens < threshold else None), tokens

    def _explore(self, scan: Scan) -> tuple[str, str]:
        """``(file_type, bounded summary)``; runs in a worker thread."""
        from mnesis.files.explorers import explore  # here: the explorers load on first use

        try:
            detected = detect_file_type(scan.path, scan.head)
            summary = explore(
                scan.opened, detected.file_type, byte_size=scan.size, is_binary=detected.is_binary
            )
            # The summary must describe the content that was hashed: if the file was
            # rewritten while it was explored, the caller starts again.
            after = os.stat(scan.opened)
        except FileNotFoundError:
            raise FileMissingError(scan.path) from None
        except OSError as exc:
            raise FileAccessError(scan.path, exc.strerror or str(exc)) from exc
        if (after.st_size, after.st_mtime_ns) != scan.stamp:
            raise Unsteady
        if detected.mime and detected.file_type in ("binary", "unknown"):
            summary = f"MIME type: {detected.mime}\n{summary}"
        return detected.file_type, self._bound(summary)

    def _bound(self, summary: str) -> str:
        """``summary`` cut, at a line boundary, to :data:`MAX_SUMMARY_TOKENS`."""
        if self.estimator.estimate(summary) <= MAX_SUMMARY_TOKENS:
            return summary
        kept: list[str] = []
        used = 0
        for line in summary.splitlines():
            cost = self.estimator.estimate(line) + 1
            if used + cost > MAX_SUMMARY_TOKENS - 20:
                break
            kept.append(line)
            used += cost
        kept.append(f"… (summary cut to {MAX_SUMMARY_TOKENS:,} tokens)")
        return "\n".join(kept)

    def _lock_for(self, content_id: str) -> asyncio.Lock:
        # Two tasks handling the same new content at once explore it once: the second
        # waits here, then finds the first one's row in the store.
        lock = self._locks.get(content_id)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[content_id] = lock
        return lock

    def _remember(self, content_id: str, path: str) -> None:
        paths = self._seen_paths.setdefault(content_id, [])
        if path not in paths:
            paths.append(path)

    # -- reading -------------------------------------------------------------
    async def read(
        self,
        file_id: str,
        start_line: int | None = None,
        end_line: int | None = None,
    ) -> str:
        """The content of a referenced file, or lines ``start_line..end_line`` (1-based, inclusive).

        ``file_id`` is a ``file_`` ID or a content ID. The file is read from disk in
        chunks and its sha256 is checked against the reference before anything is
        returned. If the stored path fails the check, other paths this handler saw
        with the same content are tried. Without a line range the whole file is
        returned: pass a range for large files.

        Raises ``InvalidArgumentError`` for a malformed ID or line range,
        ``FileReferenceNotFoundError`` for an unknown ID, ``FileMissingError`` if
        the file is gone, ``FileChangedError`` if its content changed,
        ``OutOfScopeError`` if its path is outside ``config.allowed_roots`` and
        ``FileAccessError`` if it cannot be read within ``config.read_timeout``.
        """
        if not isinstance(file_id, str):
            raise InvalidArgumentError(f"a file ID must be a string, got {type(file_id).__name__}")
        key = file_id.strip()
        if not key.startswith("file_") and not (len(key) == 64 and set(key) <= _HEX):
            raise InvalidArgumentError(
                f"{key[:80]!r} is not a file ID (file_…) or a content ID (sha256 hex)"
            )
        _check_line(start_line, "start_line")
        _check_line(end_line, "end_line")
        if start_line is not None and end_line is not None and end_line < start_line:
            raise InvalidArgumentError(
                f"end_line ({end_line}) must not be before start_line ({start_line})"
            )
        ref = await self.store.get_file_reference(key)
        if ref is None:
            raise FileReferenceNotFoundError(key)
        others = [p for p in self._seen_paths.get(ref.content_id, []) if p != ref.path]
        roots = self.config.allowed_roots
        return await self._bounded(
            lambda: read_any(ref, [ref.path, *others], roots, start_line, end_line), ref.path
        )


def _check_line(value: int | None, name: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(f"{name} must be a line number >= 1, got {value!r}")


def _part(ref: FileReference, path: str) -> FileRefPart:
    """The part naming ``ref`` as read from ``path``."""
    part = FileRefPart.model_validate(ref, from_attributes=True)
    return part.model_copy(update={"path": path})
