"""Optional semantic recall (the ``semantic`` extra): dense vectors fused with lexical ranks.

Off unless ``RetrievalConfig.semantic`` is set; then ``grep``'s full-text mode fuses the
lexical ranking with a brute-force cosine search over stored embeddings (reciprocal
rank fusion), and each match says which path found it (``found_by``). The model
(all-MiniLM-L6-v2, int8 ONNX) ships inside pip packages and is loaded lazily: importing
this package imports neither numpy nor onnxruntime. See docs/retrieval.md.
"""

from mnesis.retrieval.semantic.model import MODEL_ID, available

__all__ = ["MODEL_ID", "available"]
