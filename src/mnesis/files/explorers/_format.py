"""Numbers, sizes and lists of names as the text of an exploration summary."""

from __future__ import annotations

__all__ = ["clip", "fmt_bytes", "fmt_int", "join_names", "plural"]


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis if it was longer."""
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def fmt_int(value: int) -> str:
    """``1234567`` -> ``"1,234,567"``."""
    return f"{value:,}"


def plural(count: int, word: str, words: str | None = None) -> str:
    """``plural(1, "line")`` -> ``"1 line"``; ``plural(1200, "line")`` -> ``"1,200 lines"``."""
    return f"{fmt_int(count)} {word if count == 1 else (words or word + 's')}"


def fmt_bytes(size: int) -> str:
    """A human-readable size: ``"512 B"``, ``"3.4 KB"``, ``"1.2 GB"`` (powers of 1024)."""
    if size < 1024:
        return f"{size} B"
    amount = size / 1024
    for unit in ("KB", "MB"):
        if amount < 1024:
            return f"{amount:.1f} {unit}"
        amount /= 1024
    return f"{amount:.1f} GB"


def join_names(names: list[str], limit: int) -> str:
    """The first ``limit`` names, comma-separated, then how many more there are."""
    shown = ", ".join(names[:limit])
    return shown + (f", … {fmt_int(len(names) - limit)} more" if len(names) > limit else "")
