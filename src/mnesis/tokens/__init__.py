"""Token estimation."""

from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS, TokenEstimator, heuristic_token_count

__all__ = ["MESSAGE_OVERHEAD_TOKENS", "TokenEstimator", "heuristic_token_count"]
