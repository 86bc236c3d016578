"""Large files: inline small ones, reference and explore big ones, read them back verified.

``LargeFileHandler.handle_file(path)`` returns either the text of a small file or a
content-addressed :class:`~mnesis.models.parts.FileRefPart` carrying a structural
summary (Python outline, JSON shape, CSV columns, ...). ``read(file_id)`` gets the
content back from disk after checking its sha256.

The explorers (``EXPLORERS``, ``explore``) are imported on first use.
"""

import typing as _typing

from mnesis.files.detect import DetectedType, FileType, detect_file_type
from mnesis.files.handler import (
    FileAccessError,
    FileChangedError,
    FileHandleResult,
    FileMissingError,
    LargeFileHandler,
    file_id_for,
)

__all__ = [
    "EXPLORERS",
    "DetectedType",
    "FileAccessError",
    "FileChangedError",
    "FileHandleResult",
    "FileMissingError",
    "FileType",
    "LargeFileHandler",
    "detect_file_type",
    "explore",
    "file_id_for",
]

if _typing.TYPE_CHECKING:
    from mnesis.files.explorers import EXPLORERS, explore
else:

    def __getattr__(name: str) -> _typing.Any:
        """``EXPLORERS`` and ``explore`` from :mod:`mnesis.files.explorers`, on first use."""
        if name not in ("EXPLORERS", "explore"):
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from mnesis.files import explorers

        value = getattr(explorers, name)
        globals()[name] = value
        return value
