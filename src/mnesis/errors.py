"""Exceptions raised by mnesis.

Every error mnesis raises derives from :class:`MnesisError`, so one ``except``
clause catches them all. Errors a caller would naturally catch with a builtin
also subclass that builtin::

    MnesisError
    ├── MnesisConfigError            (also ValueError)  invalid configuration value
    ├── InvalidArgumentError         (also ValueError)  bad argument to a public call
    │   └── ToolsNotSupportedError                      tools offered to a client without them
    ├── MissingDependencyError       (also ImportError) an optional extra is not installed
    ├── SessionClosedError                              the session was closed
    ├── OutOfScopeError          (also PermissionError) an ID of a session not granted
    ├── FileChangedError                               a referenced file's content changed on disk
    ├── FileAccessError          (also OSError)        a file on disk cannot be read
    │   └── FileMissingError     (also FileNotFoundError)
    ├── ContextOverflowError                            the newest turn alone exceeds the budget
    ├── LLMError                                        the model call failed
    │   ├── LLMTimeoutError          (also TimeoutError)
    │   └── LLMResponseError                            unusable response
    ├── CompactionError                                 compaction could not run
    │   └── CompactionLockedError                       another task/process holds the lock
    ├── RetriesExhaustedError                           every retry of a call failed
    └── MnesisStoreError                                the store could not do what was asked
        ├── DuplicateIDError                            an ID that is already stored
        ├── SessionClosedError                          (0.4.0's base; also MnesisError)
        ├── NotFoundError            (also KeyError)
        │   ├── SessionNotFoundError
        │   ├── MessageNotFoundError
        │   ├── PartNotFoundError
        │   ├── SummaryNotFoundError
        │   └── FileReferenceNotFoundError
        ├── AppendOnlyViolationError                    an attempt to rewrite history
        ├── StoreCorruptError                           not a mnesis/SQLite database
        ├── StoreReadOnlyError
        ├── StoreFullError
        └── StoreBusyError                              lock timeout from another process

Driver exceptions (``sqlite3``, ``asyncpg``) never leave the store raw: they are
translated at the backend boundary and chained with ``raise ... from exc``.
"""

from __future__ import annotations

__all__ = [
    "AppendOnlyViolationError",
    "CompactionError",
    "CompactionLockedError",
    "ContextOverflowError",
    "FileAccessError",
    "FileChangedError",
    "FileMissingError",
    "FileReferenceNotFoundError",
    "InvalidArgumentError",
    "LLMError",
    "LLMResponseError",
    "LLMTimeoutError",
    "MessageNotFoundError",
    "MissingDependencyError",
    "MnesisConfigError",
    "MnesisError",
    "MnesisStoreError",
    "NotFoundError",
    "OutOfScopeError",
    "PartNotFoundError",
    "SessionClosedError",
    "SessionNotFoundError",
    "StoreBusyError",
    "StoreCorruptError",
    "StoreFullError",
    "StoreReadOnlyError",
    "SummaryNotFoundError",
    "ToolsNotSupportedError",
]
__all__ += ["DuplicateIDError", "RetriesExhaustedError"]  # 0.4.0's (issue 31)


class MnesisError(Exception):
    """Base class of every exception raised by mnesis."""


class MnesisConfigError(MnesisError, ValueError):
    """A configuration value is invalid. The message names the key and the value."""

    def __init__(self, key: str, value: object, reason: str) -> None:
        self.key = key
        self.value = value
        self.reason = reason
        super().__init__(f"invalid config {key}={value!r}: {reason}")


class InvalidArgumentError(MnesisError, ValueError):
    """A public call received an argument it cannot accept."""


class ToolsNotSupportedError(InvalidArgumentError):
    """Tools were offered to a model client that cannot take them (a plain ``llm=``
    function without a ``tools`` parameter): they are refused, never dropped."""

    def __init__(self, client: str) -> None:
        self.client = client
        super().__init__(
            f"the llm client {client!r} cannot take tools: give the function a tools= "
            "keyword parameter (it receives the tool definitions) or call without tools="
        )


class MissingDependencyError(MnesisError, ImportError):
    """An optional extra is needed; the message says what to install."""

    def __init__(self, feature: str, extra: str) -> None:
        self.extra = extra
        super().__init__(
            f"{feature} needs the optional extra '{extra}': pip install 'mnesis-lcm[{extra}]'"
        )


class OutOfScopeError(MnesisError, PermissionError):
    """The ID belongs to a session this caller was not granted."""


class ContextOverflowError(MnesisError):
    """The newest turn alone does not fit the model's usable context budget."""

    def __init__(self, needed: int, available: int) -> None:
        self.needed = needed
        self.available = available
        super().__init__(
            f"the newest turn needs ~{needed} tokens but only {available} fit the context "
            "budget; split the message or store large content as a file reference"
        )


class LLMError(MnesisError):
    """The language model call failed."""


class LLMTimeoutError(LLMError, TimeoutError):
    """The language model did not answer within the timeout."""


class LLMResponseError(LLMError):
    """The language model returned something that cannot be used."""


class CompactionError(MnesisError):
    """Compaction could not run."""


class CompactionLockedError(CompactionError):
    """Another task or process is compacting this session; retry later."""


class MnesisStoreError(MnesisError):
    """The store could not complete an operation."""


class SessionClosedError(MnesisStoreError):
    """The session was closed; open or load it again to continue. (A store error since
    0.4.0, whose code catches it as ``MnesisStoreError``.)"""


class NotFoundError(MnesisStoreError, KeyError):
    """An object looked up by ID does not exist (also a ``KeyError``)."""

    kind = "object"

    def __init__(self, object_id: str) -> None:
        self.object_id = object_id
        super().__init__(object_id)

    def __str__(self) -> str:
        return f"{self.kind} not found: {self.object_id!r}"


class SessionNotFoundError(NotFoundError):
    """No session with this ID exists in the store."""

    kind = "session"

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(session_id)


class MessageNotFoundError(NotFoundError):
    """No message with this ID exists in the session."""

    kind = "message"

    def __init__(self, message_id: str) -> None:
        self.message_id = message_id
        super().__init__(message_id)


class PartNotFoundError(NotFoundError):
    """No message part with this ID exists."""

    kind = "part"

    def __init__(self, part_id: str) -> None:
        self.part_id = part_id
        super().__init__(part_id)


class SummaryNotFoundError(NotFoundError):
    """No summary with this ID exists in the session."""

    kind = "summary"


class AppendOnlyViolationError(MnesisStoreError):
    """Something tried to update or delete history, which the store forbids."""


class StoreCorruptError(MnesisStoreError):
    """The database file is not a database, or its schema is not one mnesis knows."""


class StoreReadOnlyError(MnesisStoreError):
    """The database cannot be written (read-only file, directory or filesystem)."""


class StoreFullError(MnesisStoreError):
    """The disk holding the database is full."""


class StoreBusyError(MnesisStoreError):
    """Another process held the database lock for longer than ``connection_timeout``."""


class FileReferenceNotFoundError(NotFoundError):
    """No file reference with this file ID or content ID exists."""

    kind = "file reference"


class FileChangedError(MnesisError):
    """The file behind a reference no longer has the content that was referenced."""

    def __init__(self, path: str, expected: str, actual: str) -> None:
        self.path = path
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"{path} changed on disk since it was referenced: expected sha256 {expected}, "
            f"found {actual}; call handle_file() again to reference the new content"
        )


class FileAccessError(MnesisError, OSError):
    """A file could not be read (permissions, I/O error)."""

    def __init__(self, path: str, reason: str) -> None:
        self.message = f"cannot read {path}: {reason}"
        super().__init__(self.message)
        self.path = path
        self.filename = path

    def __str__(self) -> str:
        # OSError.__str__ would print "[Errno None] None: '<path>'" once filename is set.
        return self.message


class FileMissingError(FileAccessError, FileNotFoundError):
    """The file is not on disk (it never was, or it was moved or deleted)."""

    def __init__(self, path: str, file_id: str | None = None) -> None:
        self.file_id = file_id
        what = f" (referenced as {file_id})" if file_id else ""
        super().__init__(
            path, f"no such file{what}; it was moved or deleted, handle its new path again"
        )


class DuplicateIDError(MnesisStoreError):
    """A record with this ID is already stored (IDs are never reused)."""

    def __init__(self, record_id: str) -> None:
        self.record_id = record_id
        super().__init__(f"a record with id {record_id!r} already exists")


class RetriesExhaustedError(MnesisError):
    """Every attempt of a retried call failed (see :mod:`mnesis.retry`); the last error is
    ``last_error`` (and ``__cause__``)."""

    def __init__(self, attempts: int, last_error: BaseException) -> None:
        self.attempts = attempts
        self.last_error = last_error
        super().__init__(
            f"gave up after {attempts} attempts: {type(last_error).__name__}: {last_error}"
        )
