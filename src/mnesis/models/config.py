"""The documented module path ``mnesis.models.config``: a re-export of :mod:`mnesis.config`
(the configuration sections) and of :class:`~mnesis.models.model_info.ModelInfo`."""

from mnesis import config as _config
from mnesis.config import *  # noqa: F403  (every name of mnesis.config)
from mnesis.models.model_info import ModelInfo

__all__ = ["ModelInfo"]
__all__ += _config.__all__
