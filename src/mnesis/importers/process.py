"""The parsing half of a large import in a process of its own.

:class:`~mnesis.importers.pipeline.ParseThread` parses on a thread, so parsing and the
writer's Python share one GIL; for a large file the lines are read, parsed and cut into
batches by a child interpreter instead (:mod:`mnesis.importers.parse_child`, in a fresh
interpreter that never runs the caller's ``__main__``; see :data:`_CHILD`), and each batch crosses a
pipe as bytes (:mod:`mnesis.importers.wire`). The writing process keeps only the store's
work. The child blocks while the pipe is full: at most one batch is being written, one
read and one built, so memory stays bounded in both processes.

The child never writes to the store: the progress record is kept by the writer, batch
by batch, so stopping the import anywhere (Ctrl-C, a failed write, the child killed)
leaves what :func:`~mnesis.importers.api.import_file` resumes from.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import sys

import mnesis
from mnesis.importers.batches import Batch
from mnesis.importers.parse_child import BATCH, END, HEADER_BYTES, ParseJob
from mnesis.importers.wire import load_batch

__all__ = ["ParseProcess"]


_PACKAGES = ("mnesis", "mnesis.importers", "mnesis.store")
_CHILD = """import sys, types
for name, path in {packages!r}:
    package = types.ModuleType(name)
    package.__path__ = [path]
    sys.modules[name] = package
from mnesis.importers.parse_child import main
main()
"""
"""The child's program. Its packages are set up bare, without running their
``__init__``: they import most of the library (the stores and their backends,
operators, file handling; ~0.4-0.5 s of CPU, a few microseconds per message of a
100,000-message import), none of which the parser needs. Every module
the child imports is imported by its full name, so it is the same code either way."""


_READ_BUFFER = 4 * 1024 * 1024
"""The pipe reader's buffer limit: reading pauses past twice this much, so a batch of
megabytes arrives in reads of 256 KB without a pause and a resume every 128 KB
(asyncio's default limit is 64 KB); memory stays bounded by it."""


def _child_program() -> str:
    root = os.path.dirname(os.path.abspath(mnesis.__file__))
    paths = (os.path.join(root, *name.split(".")[1:]) for name in _PACKAGES)
    return _CHILD.format(packages=tuple(zip(_PACKAGES, paths, strict=True)))


def _environment() -> dict[str, str]:
    """The child's environment: this process's, with the directory ``mnesis`` was
    imported from first on its path."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(mnesis.__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


class ParseProcess:
    """Runs a :class:`ParseJob` in a child process; :meth:`next` gives each batch, as
    :class:`~mnesis.importers.pipeline.ParseThread` does. Use as ``async with``: leaving
    stops the child (it holds nothing to save) and waits for it."""

    def __init__(self, job: ParseJob) -> None:
        self._job = job
        self._process: asyncio.subprocess.Process | None = None
        self._finished = False

    async def __aenter__(self) -> ParseProcess:
        self._process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _child_program(),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=_environment(),
            limit=_READ_BUFFER,
        )
        assert self._process.stdin is not None
        self._process.stdin.write(pickle.dumps(self._job))
        self._process.stdin.close()
        return self

    async def __aexit__(self, *exc: object) -> None:
        process = self._process
        if process is None:
            return
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        await process.communicate()

    async def next(self) -> Batch | None:
        """The next batch, or None once the last one was given; re-raises the child's
        error (an ``OSError`` reading the file, say)."""
        if self._finished:
            return None
        process = self._process
        assert process is not None and process.stdout is not None
        try:
            header = await process.stdout.readexactly(HEADER_BYTES)
            payload = await process.stdout.readexactly(int.from_bytes(header[1:], "big"))
        except asyncio.IncompleteReadError:
            self._finished = True
            raise await self._crashed() from None
        kind = header[:1]
        if kind == BATCH:
            return load_batch(payload)
        self._finished = True
        if kind == END:
            return None
        error: BaseException = pickle.loads(payload)
        raise error

    async def _crashed(self) -> RuntimeError:
        process = self._process
        assert process is not None and process.stderr is not None
        detail = (await process.stderr.read()).decode("utf-8", "replace").strip()
        code = await process.wait()
        last = detail.splitlines()[-1] if detail else f"exit code {code}"
        return RuntimeError(f"the import's parser process ended unexpectedly: {last}")
