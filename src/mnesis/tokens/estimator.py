"""Token estimation: exact with a local BPE encoding, calibrated heuristic otherwise.

Exact counts come from ``tiktoken`` when its encoding file is already cached on
disk, or from ``bpe_openai`` (which embeds the encodings) when installed. mnesis
never downloads an encoding unless ``MNESIS_TIKTOKEN_DOWNLOAD=1``; the outcome of
the attempt is cached per process, so a missing encoding costs one check, not a
network hang on every call.

The heuristic is a linear model over character classes fitted against
``cl100k_base`` on prose, code, JSON and CJK text (``benchmarks/token_calibration.py``;
the measured error is in ``docs/tokens.md``).
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable
from functools import lru_cache

from mnesis.models.message import MessageWithParts
from mnesis.models.model_info import ModelInfo
from mnesis.models.parts import MessagePart
from mnesis.models.render import render_part

__all__ = [
    "ESTIMATE_CACHE_SIZE",
    "MESSAGE_OVERHEAD_TOKENS",
    "TokenEstimator",
    "heuristic_token_count",
]

logger = logging.getLogger("mnesis.tokens")

MESSAGE_OVERHEAD_TOKENS = 4
"""Per-message framing tokens (role markers) that providers add."""
ESTIMATE_CACHE_SIZE = 4096
"""Entries :meth:`TokenEstimator.estimate_cached` keeps per estimator."""

_PUNCT = "{}()[]<>:;,.\"'=_-/\\*#|+@$%&!?`~^"
_DIGITS = "0123456789"
# Fitted coefficients: plain ASCII letters, whitespace-separated words, punctuation,
# digits, non-ASCII characters, newlines.
_C_LETTERS, _C_WORDS, _C_PUNCT, _C_DIGITS, _C_NONASCII, _C_NEWLINES = (
    0.0971,
    0.5723,
    0.5164,
    1.1989,
    0.9355,
    0.5397,
)
_ENCODING_URLS = {
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
}


_PUNCT_BYTES = _PUNCT.encode()
_DIGIT_BYTES = _DIGITS.encode()
_HIGH_BYTES = bytes(range(128, 256))
_SPACE_MARKS = bytes(32 if chr(b).isspace() else 120 for b in range(128)) + b"x" * 128
"""ASCII whitespace as ``str.split`` sees it (``\x1c``-``\x1f`` included) → space,
every other byte → ``x``."""


def _words(text: str, data: bytes, ascii_only: bool) -> int:
    """``len(text.split())``; for a longer ASCII ``text`` (``data`` its bytes) counted
    as the starts of words, without building the list of them."""
    if not ascii_only or len(data) < 64:
        return len(text.split())
    marks = data.translate(_SPACE_MARKS)
    return marks.count(b" x") + (marks[:1] == b"x")


def heuristic_token_count(text: str) -> int:
    """Estimate the ``cl100k_base`` token count of ``text`` without a tokenizer."""
    if not text:
        return 0
    n = len(text)
    # Counting on UTF-8 bytes is exact for the ASCII classes (multi-byte sequences
    # never contain ASCII bytes) and far faster than one str.count per character.
    data = text.encode("utf-8", "surrogatepass")
    size = len(data)
    punct = size - len(data.translate(None, _PUNCT_BYTES))
    digits = size - len(data.translate(None, _DIGIT_BYTES))
    non_ascii = 0 if size == n else n - len(data.translate(None, _HIGH_BYTES))
    letters = max(0, n - non_ascii - punct - digits)
    estimate = (
        _C_LETTERS * letters
        + _C_WORDS * _words(text, data, size == n)
        + _C_PUNCT * punct
        + _C_DIGITS * digits
        + _C_NONASCII * non_ascii
        + _C_NEWLINES * text.count("\n")
    )
    return max(1, round(estimate))


_load_lock = threading.Lock()


@lru_cache(maxsize=8)
def _load_exact_counter(encoding: str) -> Callable[[str], int] | None:
    """Return an exact counter for ``encoding`` if one is available offline (cached)."""
    with _load_lock:
        counter = _try_tiktoken(encoding)
        if counter is None:
            counter = _try_bpe_openai(encoding)
        if counter is None:
            logger.debug("no offline encoding %s; using the heuristic", encoding)
        return counter


def _tiktoken_cache_file(encoding: str) -> str | None:
    url = _ENCODING_URLS.get(encoding)
    if url is None:
        return None
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    if not cache_dir:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return os.path.join(cache_dir, hashlib.sha1(url.encode()).hexdigest())


def _try_tiktoken(encoding: str) -> Callable[[str], int] | None:
    cache_file = _tiktoken_cache_file(encoding)
    allow_download = os.environ.get("MNESIS_TIKTOKEN_DOWNLOAD") == "1"
    if cache_file is None or (not os.path.exists(cache_file) and not allow_download):
        return None
    try:
        import tiktoken
    except ImportError:
        return None
    result: list[Callable[[str], int]] = []

    def _load() -> None:
        try:
            enc = tiktoken.get_encoding(encoding)
            result.append(lambda text: len(enc.encode(text, disallowed_special=())))
        except Exception:
            logger.debug("tiktoken could not load %s", encoding, exc_info=True)

    worker = threading.Thread(target=_load, daemon=True, name="mnesis-tiktoken-load")
    worker.start()
    worker.join(timeout=10.0)
    return result[0] if result else None


def _try_bpe_openai(encoding: str) -> Callable[[str], int] | None:
    try:
        import bpe_openai
    except ImportError:
        return None
    try:
        enc = bpe_openai.get_encoding(encoding)
    except Exception:
        return None

    def count(text: str) -> int:
        return len(enc.encode(text, disallowed_special=()))

    return count


class TokenEstimator:
    """Counts tokens of text, parts and messages.

    ``exact=None`` (default) uses an offline exact encoding when one is available;
    ``exact=False`` forces the heuristic (fast and deterministic everywhere), and so does
    ``heuristic_only=True`` (0.4.0's name).
    """

    def __init__(
        self,
        encoding: str = "cl100k_base",
        *,
        exact: bool | None = None,
        heuristic_only: bool = False,
    ) -> None:
        self.encoding = encoding
        self._counter: Callable[[str], int] | None = None
        self._cache: OrderedDict[tuple[str, str], int] = OrderedDict()
        if heuristic_only:
            if exact is True:
                from mnesis.errors import InvalidArgumentError

                raise InvalidArgumentError("give exact=True or heuristic_only=True, not both")
            exact = False
        self._exact = exact
        if exact is not False and os.environ.get("MNESIS_EXACT_TOKENS", "1") != "0":
            self._counter = _load_exact_counter(encoding)
            if exact is True and self._counter is None:
                from mnesis.errors import MissingDependencyError

                raise MissingDependencyError(f"exact token counts for {encoding}", "tokens")

    @property
    def is_exact(self) -> bool:
        """True when counts come from a real BPE encoding."""
        return self._counter is not None

    def estimate(self, text: str, model: ModelInfo | None = None) -> int:
        """Return the token count of ``text`` (in ``model``'s encoding when given)."""
        if model is not None and model.encoding != self.encoding:
            return self.for_model(model).estimate(text)
        if not text:
            return 0
        if self._counter is not None:
            try:
                return self._counter(text)
            except Exception:
                logger.debug("exact counter failed; falling back", exc_info=True)
        return heuristic_token_count(text)

    def estimate_part(self, part: MessagePart) -> int:
        """Tokens a part contributes to a context (0 for metadata parts)."""
        rendered = render_part(part)
        return self.estimate(rendered) if rendered else 0

    def estimate_message(self, msg: MessageWithParts, model: ModelInfo | None = None) -> int:
        """Tokens a message costs in a context, including framing overhead (in ``model``'s
        encoding when given)."""
        if model is not None and model.encoding != self.encoding:
            return self.for_model(model).estimate_message(msg)
        return MESSAGE_OVERHEAD_TOKENS + sum(self.estimate_part(p) for p in msg.parts)

    @staticmethod
    def content_hash(text: str) -> str:
        """A stable key for ``text`` (SHA-256, hex), e.g. for :meth:`estimate_cached`."""
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def estimate_cached(self, text: str, cache_key: str, model: ModelInfo | None = None) -> int:
        """:meth:`estimate`, remembered under ``cache_key`` (the newest
        :data:`ESTIMATE_CACHE_SIZE` keys per estimator are kept)."""
        if model is not None and model.encoding != self.encoding:
            return self.for_model(model).estimate_cached(text, cache_key)
        key = (cache_key, self.encoding)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        count = self.estimate(text)
        self._cache[key] = count
        if len(self._cache) > ESTIMATE_CACHE_SIZE:
            self._cache.popitem(last=False)
        return count

    def for_model(self, model: ModelInfo | None) -> TokenEstimator:
        """An estimator in ``model``'s encoding (this one for ``None`` or the same
        encoding), exact or heuristic as this one is."""
        if model is None or model.encoding == self.encoding:
            return self
        return TokenEstimator(model.encoding, exact=self._exact)
