"""Compaction settings derived from a model's window: what the documented defaults become
at 8k, 32k or 1M tokens.

The documented defaults of :class:`~mnesis.config.CompactionConfig` (a 20,000-token
buffer, a 40,000-token prune protect window, ...) are sized for a 200k window. A setting
the user left unset scales with the window (never above its documented value); a
setting the user gave (in code, through ``LCM_*`` variables or a stored session config)
is used as given. :meth:`WindowSettings.derive` is the one place that decides.
"""

from __future__ import annotations

from dataclasses import dataclass

from mnesis.config import CompactionConfig

__all__ = [
    "DEFAULT_UNKNOWN_WINDOW",
    "REFERENCE_WINDOW",
    "WindowSettings",
]

REFERENCE_WINDOW = 200_000
"""The window the documented defaults are sized for."""
DEFAULT_UNKNOWN_WINDOW = 128_000
"""The window assumed for a model string the model table does not know."""
SMALL_WINDOW = 64_000
"""Below this window the fresh tail, the leaf chunk and the thresholds change with it."""
SUMMARY_WINDOW = 32_000
"""Below this window the summary targets shrink with it (at 32k a context still holds
the documented 600/900-token summaries, and what they keep)."""
DRAIN_FRACTION = 0.5
"""A run drains the context to this share of the soft threshold (documented behaviour)."""
SMALL_DRAIN_FRACTION = 0.35
"""The drain share of the smallest windows: a deeper drain keeps the next compaction
several turns away when a turn is a large share of the window."""
LEAF_CHUNK_TOKENS = 12_000
"""The documented smallest leaf span (``compaction.planner.LEAF_CHUNK_TOKENS``)."""
SMALL_SOFT_FRACTION = 0.75
"""The soft threshold of the smallest windows (0.6 at 64k and above)."""


def _scaled(documented: int, scale: float, floor: int) -> int:
    return max(floor, min(documented, round(documented * scale)))


@dataclass(frozen=True, slots=True)
class WindowSettings:
    """The compaction settings in force for one context window.

    Every field is the user's explicit setting when there is one, else the documented
    default scaled to ``context_limit``.
    """

    context_limit: int
    compaction_output_budget: int
    """Tokens kept free for compaction (the buffer between usable and the window)."""
    soft_threshold_fraction: float
    drain_fraction: float
    """A run drains the context to this share of the soft threshold."""
    prune_protect_tokens: int
    prune_minimum_tokens: int
    fresh_tail_count: int
    fresh_tail_tokens: int
    """The fresh tail grows past the last exchange only while it stays under this size."""
    leaf_target_tokens: int
    condensed_target_tokens: int
    leaf_chunk_tokens: int = 12_000
    """The smallest span a leaf pass asks for: 12,000 tokens from a 64k window up, less
    below (a run then drains to about its target instead of far below it)."""

    @classmethod
    def derive(cls, context_limit: int, config: CompactionConfig) -> WindowSettings:
        """The settings of a ``context_limit``-token window under ``config``."""
        limit = max(1, int(context_limit))
        explicit = config.model_fields_set
        big = min(1.0, limit / REFERENCE_WINDOW)
        small = min(1.0, limit / SMALL_WINDOW)
        tiny = min(1.0, limit / SUMMARY_WINDOW)

        def pick(name: str, derived: int | float) -> int | float:
            value: int | float = getattr(config, name)
            return value if name in explicit else derived

        soft = pick(
            "soft_threshold_fraction",
            config.soft_threshold_fraction
            + (SMALL_SOFT_FRACTION - config.soft_threshold_fraction) * (1.0 - small),
        )
        leaf = int(pick("leaf_target_tokens", _scaled(config.leaf_target_tokens, tiny, 200)))
        return cls(
            context_limit=limit,
            compaction_output_budget=int(
                pick("compaction_output_budget", _scaled(config.compaction_output_budget, big, 256))
            ),
            soft_threshold_fraction=float(soft),
            drain_fraction=DRAIN_FRACTION - (DRAIN_FRACTION - SMALL_DRAIN_FRACTION) * (1 - small),
            prune_protect_tokens=int(
                pick("prune_protect_tokens", _scaled(config.prune_protect_tokens, big, 1_000))
            ),
            prune_minimum_tokens=int(
                pick("prune_minimum_tokens", _scaled(config.prune_minimum_tokens, big, 500))
            ),
            fresh_tail_count=int(
                pick("fresh_tail_count", _scaled(config.fresh_tail_count, small, 2))
            ),
            fresh_tail_tokens=max(1_000, limit // 8),
            leaf_target_tokens=leaf,
            leaf_chunk_tokens=_scaled(LEAF_CHUNK_TOKENS, small, 1_000),
            condensed_target_tokens=int(
                pick(
                    "condensed_target_tokens",
                    _scaled(config.condensed_target_tokens, tiny, max(leaf, 300)),
                )
            ),
        )

    def drain_target(self, usable: int) -> int:
        """The context size (tokens) a run compacts down to, for a ``usable`` budget."""
        return int(usable * self.soft_threshold_fraction * self.drain_fraction)

    def soft_limit(self, usable: int) -> float:
        """The soft threshold (tokens) for a ``usable`` budget."""
        return usable * self.soft_threshold_fraction
