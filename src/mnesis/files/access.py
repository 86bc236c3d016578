"""Safe access to a caller's file: which paths may be read, how they are opened, how long
a read may take.

* A path is a ``str`` (or ``os.PathLike`` giving one) without NUL bytes that the file
  system can encode; anything else is an ``InvalidArgumentError``.
* With ``allowed_roots`` set, a path is resolved (symlinks included) and refused with
  ``OutOfScopeError`` unless it lies under one of the resolved roots; the resolved path
  is then opened with ``O_NOFOLLOW``, so a symlink swapped in after the check is refused.
* Files are opened with ``O_NONBLOCK`` and checked with ``fstat`` before any read: a
  FIFO, socket or device is refused at once instead of blocking the reader forever.
* Blocking work runs on a daemon thread and is awaited for at most ``read_timeout``
  seconds: a read that hangs (a stalled network file system) raises
  ``FileAccessError`` and cannot keep the process from exiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from mnesis.errors import FileAccessError, FileMissingError, InvalidArgumentError, OutOfScopeError

__all__ = ["check_path", "confine", "open_regular", "run_bounded"]

T = TypeVar("T")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def check_path(path: object) -> str:
    """``path`` as an absolute ``str`` (``~`` expanded), or ``InvalidArgumentError``."""
    if not isinstance(path, str | os.PathLike):
        raise InvalidArgumentError(f"path must be a str or PathLike, got {type(path).__name__}")
    value = os.fspath(path)
    if not isinstance(value, str):
        raise InvalidArgumentError("path must be text, not bytes")
    if not value or "\x00" in value:
        raise InvalidArgumentError(f"path must be non-empty and hold no NUL byte, got {value!r}")
    try:
        os.fsencode(value)
    except UnicodeError:
        raise InvalidArgumentError(
            f"path {value!r} cannot be encoded for the file system"
        ) from None
    return os.path.abspath(os.path.expanduser(value))


def confine(path: str, roots: Sequence[str] | None) -> str:
    """The path to open: ``path`` itself without roots, else its resolved form under a root.

    Raises ``OutOfScopeError`` if, symlinks resolved, ``path`` is outside every root.
    """
    if roots is None:
        return path
    resolved = os.path.realpath(path)
    for root in roots:
        real_root = os.path.realpath(os.path.expanduser(root))
        if resolved == real_root or resolved.startswith(real_root.rstrip(os.sep) + os.sep):
            return resolved
    raise OutOfScopeError(
        f"{path} resolves to {resolved}, outside the allowed roots "
        f"({', '.join(roots)}); see FileConfig.allowed_roots"
    )


def open_regular(path: str, *, nofollow: bool = False) -> int:
    """A read descriptor of the regular file ``path``, checked before anything is read.

    The open never blocks (``O_NONBLOCK``); a FIFO, socket, device or directory raises
    ``InvalidArgumentError``, a missing file ``FileMissingError``, any other failure
    ``FileAccessError``.
    """
    flags = os.O_RDONLY | _NONBLOCK | _CLOEXEC | (_NOFOLLOW if nofollow else 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise FileMissingError(path) from None
    except IsADirectoryError:
        raise InvalidArgumentError(f"{path} is a directory, not a file") from None
    except OSError as exc:
        raise FileAccessError(path, exc.strerror or str(exc)) from exc
    except ValueError as exc:  # an unencodable path that slipped through
        raise InvalidArgumentError(f"path {path!r} cannot be opened: {exc}") from None
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:
        os.close(fd)
        raise FileAccessError(path, exc.strerror or str(exc)) from exc
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise InvalidArgumentError(f"{path} is {kind}; only regular files can be handled")
    return fd


async def run_bounded(fn: Callable[[], T], timeout: float | None, path: str) -> T:
    """``fn()`` on a daemon thread; ``FileAccessError`` if it takes over ``timeout`` seconds.

    A timed-out call is abandoned, not interrupted: its thread ends when the blocked
    system call does, and being a daemon it never delays the interpreter's exit.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(value: T | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)  # type: ignore[arg-type]

    def work() -> None:
        try:
            value = fn()
        except BaseException as exc:  # handed to the awaiting task
            outcome: tuple[T | None, BaseException | None] = (None, exc)
        else:
            outcome = (value, None)
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is waiting
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=work, name="mnesis-file-read", daemon=True).start()
    try:
        # Not asyncio.wait_for: on Python 3.11 it returns a result that arrives with a
        # cancellation and loses the cancellation.
        async with asyncio.timeout(timeout):
            return await asyncio.shield(future)
    except TimeoutError:
        # Whatever the abandoned call ends with, nobody will read it: mark it retrieved.
        future.add_done_callback(lambda done: done.cancelled() or done.exception())
        raise FileAccessError(
            path,
            f"no answer within {timeout:g} s (FileConfig.read_timeout); "
            "is it on a stalled file system?",
        ) from None
