"""NUL bytes in PostgreSQL ``text``: an escaping applied at the driver boundary.

PostgreSQL ``text`` cannot hold U+0000. Every Python ``str`` sent to the server is
escaped and every ``text`` value read back is unescaped, by a psycopg dumper and loader
registered on each connection, so no store code handles it and every column round-trips
exactly. The scheme uses U+001A (SUBSTITUTE) as the escape character:

* U+001A is written ``U+001A '1'``;
* U+0000 is written ``U+001A '0'``.

Every U+001A in stored text is therefore followed by ``0`` or ``1``, so decoding is
unambiguous, and text with neither character (almost all text) is stored unchanged.
JSON columns hold JSON text, where both characters are already ``\\u`` escapes.
"""

from __future__ import annotations

import re
from typing import Any

from psycopg.adapt import AdaptersMap, Buffer, Loader
from psycopg.types.string import StrDumperUnknown

__all__ = ["escape_nul", "register_nul_escaping", "unescape_nul"]

_ESC = "\x1a"
_ENCODED = re.compile("\x1a([01])")


def escape_nul(text: str) -> str:
    """Text PostgreSQL can store (see the module docstring)."""
    if "\x00" not in text and _ESC not in text:
        return text
    return text.replace(_ESC, _ESC + "1").replace("\x00", _ESC + "0")


def unescape_nul(text: str) -> str:
    """Undo :func:`escape_nul`."""
    if _ESC not in text:
        return text
    return _ENCODED.sub(lambda m: "\x00" if m.group(1) == "0" else _ESC, text)


class _EscapingStrDumper(StrDumperUnknown):
    """``str`` parameters, escaped (type left for the server to infer, as by default)."""

    def dump(self, obj: str) -> Buffer | None:
        return super().dump(escape_nul(obj))


class _UnescapingTextLoader(Loader):
    """``text`` values, unescaped."""

    def load(self, data: Buffer) -> Any:
        return unescape_nul(bytes(data).decode("utf-8"))


def register_nul_escaping(adapters: AdaptersMap) -> None:
    """Install the escaping on a connection's (or a pool's) adapters."""
    adapters.register_dumper(str, _EscapingStrDumper)
    for type_name in ("text", "varchar", "bpchar"):
        adapters.register_loader(type_name, _UnescapingTextLoader)
