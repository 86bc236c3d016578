"""The documented module path ``mnesis.models.config``: a re-export of :mod:`mnesis.config`
(the configuration sections) and of :class:`~mnesis.models.model_info.ModelInfo`."""

from mnesis import config as _config
from mnesis.config import *  # noqa: F403  (every name of mnesis.config)
from mnesis.config import CompactionConfig
from mnesis.errors import MnesisConfigError
from mnesis.models.model_info import ModelInfo

__all__ = ["ModelInfo", "check_compaction_budget"]
__all__ += _config.__all__


def check_compaction_budget(compaction: CompactionConfig, model: ModelInfo) -> None:
    """Raise :class:`~mnesis.errors.MnesisConfigError` when ``compaction_output_budget``
    and the model's ``max_output_tokens`` together take the model's whole window (0.4.0's
    check). Sessions do not need it: their budget shrinks the buffer of a small model
    instead (``ContextBudget.compute``)."""
    taken = compaction.compaction_output_budget + model.max_output_tokens
    if taken >= model.context_limit:
        raise MnesisConfigError(
            "compaction.compaction_output_budget",
            compaction.compaction_output_budget,
            f"with max_output_tokens={model.max_output_tokens} it leaves nothing of "
            f"{model.model_id}'s {model.context_limit}-token window for the conversation",
        )
