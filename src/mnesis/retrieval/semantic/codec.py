"""How a vector is stored: ``DIM`` int8 values and their float32 scale (388 bytes).

A unit vector ``v`` is kept as ``q = round(v / s)`` with ``s = max|v| / 127``, so
``v ≈ s * q`` (a cosine moves by about 0.001). Rows written
before as ``DIM`` little-endian float32 values (1,536 bytes) are read too, and are
quantised as they are read: both kinds sit side by side in one table, nothing is
migrated. Scoring multiplies the int8 rows by the float32 query and each result by
its row's scale (:func:`scores`), without a float copy of the matrix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mnesis.errors import StoreCorruptError
from mnesis.retrieval.semantic.model import DIM

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["FLOAT32_BYTES", "INT8_BYTES", "decode", "encode", "quantise", "scores"]

INT8_BYTES = DIM + 4
"""A stored vector: ``DIM`` int8 values, then the scale as a little-endian float32."""
FLOAT32_BYTES = DIM * 4
"""A vector stored as float32 (rows written before the int8 encoding)."""


def encode(matrix: npt.NDArray[np.float32]) -> list[bytes]:
    """The stored form of each row of ``matrix``."""
    values, scales = quantise(matrix)
    tails = scales.astype("<f4")
    return [row.tobytes() + tail.tobytes() for row, tail in zip(values, tails, strict=True)]


def quantise(
    matrix: npt.NDArray[np.float32],
) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """Each row as int8 values and a scale (an all-zero row gets scale 1)."""
    import numpy as np

    peak = np.abs(matrix).max(axis=1) if len(matrix) else np.zeros(0, dtype=np.float32)
    scales = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    values = np.clip(np.rint(matrix / scales[:, None]), -127, 127).astype(np.int8)
    return values, scales


def decode(blobs: Sequence[bytes]) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """The int8 rows and scales of stored vectors of either encoding.

    Raises ``StoreCorruptError`` for a blob of any other length."""
    import numpy as np

    values = np.empty((len(blobs), DIM), dtype=np.int8)
    scales = np.empty(len(blobs), dtype=np.float32)
    short = [i for i, b in enumerate(blobs) if len(b) == INT8_BYTES]
    wide = [i for i, b in enumerate(blobs) if len(b) == FLOAT32_BYTES]
    if len(short) + len(wide) != len(blobs):
        bad = next(len(b) for b in blobs if len(b) not in (INT8_BYTES, FLOAT32_BYTES))
        raise StoreCorruptError(
            f"a stored vector has {bad} bytes: expected {INT8_BYTES} (int8) or "
            f"{FLOAT32_BYTES} (float32) for {DIM} dimensions"
        )
    if short:
        raw = np.frombuffer(b"".join(blobs[i] for i in short), dtype=np.uint8)
        raw = raw.reshape(len(short), INT8_BYTES)
        values[short] = raw[:, :DIM].view(np.int8)
        scales[short] = raw[:, DIM:].copy().view("<f4").ravel()
    if wide:
        flat = np.frombuffer(b"".join(blobs[i] for i in wide), dtype="<f4")
        values[wide], scales[wide] = quantise(flat.reshape(len(wide), DIM).astype(np.float32))
    return values, scales


def scores(
    values: npt.NDArray[np.int8], scales: npt.NDArray[np.float32], query: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """The dot product of each stored row with ``query`` (cosine, for unit vectors)."""
    import numpy as np

    dots = np.einsum("ij,j->i", values, query, dtype=np.float32, casting="unsafe")
    out: npt.NDArray[np.float32] = dots * scales
    return out
