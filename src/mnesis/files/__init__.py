"""Large files: inline small ones, reference and explore big ones, read them back verified.

``LargeFileHandler.handle_file(path)`` returns either the text of a small file or a
content-addressed :class:`~mnesis.models.parts.FileRefPart` carrying a structural
summary (Python outline, JSON shape, CSV columns, ...). ``read(file_id)`` gets the
content back from disk after checking its sha256.
"""

from mnesis.files.detect import DetectedType, FileType, detect_file_type
from mnesis.files.explorers import EXPLORERS, explore
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
