"""Sortable, prefixed identifiers (``sess_``, ``msg_``, ``part_``, ``sum_``, ``file_``).

An ID is the prefix followed by 26 Crockford base32 characters: 48 bits of
millisecond timestamp then 80 bits that are random for the first ID of a
millisecond and incremented for the next ones, so IDs made by one process sort
in creation order (the ULID "monotonic" scheme).
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import threading
import time
from collections.abc import Iterator

__all__ = ["ID_PREFIXES", "id_milliseconds", "is_valid_id", "new_id", "seeded_ids"]

ID_PREFIXES = ("sess", "msg", "part", "sum", "file", "run")
_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_ID_RE = re.compile(r"^(sess|msg|part|sum|file|run)_[0-9A-HJKMNP-TV-Z]{26}$")

_lock = threading.Lock()
_last_ms = -1
_last_rand = 0
_seeded: random.Random | None = None
_SEEDED_EPOCH_MS = 1_700_000_000_000
_ERA_SHIFT = 40
"""Bits of a 48-bit ID clock below its two leading characters (3 + 5 bits)."""


def _era_tops() -> tuple[int, ...]:
    """The 256 values of a clock's top 8 bits: those spelt with two digits first,
    starting with the top of ``_SEEDED_EPOCH_MS`` (so era 0 keeps the plain epoch)."""
    digits = [high * 32 + low for high in range(8) for low in range(10)]
    first = digits.index(_SEEDED_EPOCH_MS >> _ERA_SHIFT)
    ordered = digits[first:] + digits[:first]
    return (*ordered, *(top for top in range(256) if top not in digits))


_ERA_TOPS = _era_tops()


_PAIRS = tuple(a + b for a in _ALPHABET for b in _ALPHABET)
"""Every two-character Crockford string, indexed by its 10-bit value."""


def _encode(value: int, length: int) -> str:
    """The low ``5 * length`` bits of ``value`` as ``length`` Crockford base32 characters
    (most significant first), ten bits per step."""
    chunks = []
    for _ in range(length // 2):
        chunks.append(_PAIRS[value & 1023])
        value >>= 10
    if length % 2:
        chunks.append(_ALPHABET[value & 31])
    return "".join(reversed(chunks))


_RAND_MASK = (1 << 80) - 1
_heads: dict[int, str] = {}
"""The encoded 10-character clock and the 12 characters above the low 20 bits of the
random half, of the last value made (keyed ``ms << 60 | rand >> 20``): consecutive IDs
of one millisecond differ in their last four characters only."""


def new_id(prefix: str) -> str:
    """Return a new ID with ``prefix`` (one of :data:`ID_PREFIXES`)."""
    global _last_ms, _last_rand
    if prefix not in ID_PREFIXES:
        from mnesis.errors import InvalidArgumentError

        raise InvalidArgumentError(f"unknown ID prefix {prefix!r}; known: {ID_PREFIXES}")
    with _lock:
        if _seeded is not None:
            _last_ms += 1
            value = (_last_ms << 80) | _seeded.getrandbits(79)
            return f"{prefix}_{_encode(value, 26)}"
        now = time.time_ns() // 1_000_000
        if now <= _last_ms:
            now = _last_ms
            _last_rand = rand = (_last_rand + 1) & _RAND_MASK
        else:
            _last_ms = now
            _last_rand = rand = int.from_bytes(os.urandom(10), "big") >> 1
    key = (now << 60) | (rand >> 20)
    head = _heads.get(key)
    if head is None:
        head = _encode(key, 22)
        if len(_heads) > 64:
            _heads.clear()
        _heads[key] = head
    return f"{prefix}_{head}{_PAIRS[(rand >> 10) & 1023]}{_PAIRS[rand & 1023]}"


@contextlib.contextmanager
def seeded_ids(seed: int, *, era: int = 0) -> Iterator[None]:
    """Within the block, :func:`new_id` is a pure function of ``seed``, ``era`` and the
    call count.

    For reproducible runs (``mnesis demo``): the IDs are well-formed and sortable
    but their clock starts at a fixed instant and ticks once per ID. Not for
    production stores shared with other writers.

    ``era`` (e.g. how many sessions a database already holds) keeps the IDs of one
    seed apart: it moves the clock by whole multiples of 2**40 ms, which changes only
    the IDs' two leading characters, and for the first 80 eras only to other digits.
    A tokenizer counts a run of digits by its length (``cl100k_base`` cuts runs of up
    to three), so those eras give every ID the same token count: quoted in a context,
    they move no compaction.
    """
    global _seeded, _last_ms
    if isinstance(era, bool) or not isinstance(era, int) or era < 0:
        from mnesis.errors import InvalidArgumentError

        raise InvalidArgumentError(f"era must be an int >= 0, got {era!r}")
    cycle, slot = divmod(era, len(_ERA_TOPS))
    start = (_ERA_TOPS[slot] << _ERA_SHIFT) | (_SEEDED_EPOCH_MS & ((1 << _ERA_SHIFT) - 1))
    # Past the 256 clock tops, the random half changes too (an ID must never repeat).
    rng = random.Random(seed if cycle == 0 else f"{seed}:{cycle}")
    with _lock:
        saved = (_seeded, _last_ms)
        _seeded, _last_ms = rng, start
    try:
        yield
    finally:
        with _lock:
            _seeded = saved[0]
            _last_ms = max(saved[1], time.time_ns() // 1_000_000)


def id_milliseconds(value: str) -> int:
    """The clock reading (milliseconds since the epoch) a valid ID was made at."""
    digits = value.partition("_")[2][:22]
    key = 0
    for char in digits:
        key = (key << 5) | _ALPHABET.index(char)
    return key >> 60


def is_valid_id(value: object, prefix: str | None = None) -> bool:
    """Return True if ``value`` is a well-formed mnesis ID (with ``prefix`` if given)."""
    if not isinstance(value, str) or _ID_RE.fullmatch(value) is None:
        return False
    return prefix is None or value.startswith(prefix + "_")
