"""Fixtures: provider-compatible HTTP servers and litellm imported offline."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.providers.servers import ProviderServer, serve

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture
def openai_server() -> Iterator[ProviderServer]:
    yield from serve("openai")


@pytest.fixture
def anthropic_server() -> Iterator[ProviderServer]:
    yield from serve("anthropic")


@pytest.fixture
def looping_openai_server() -> Iterator[ProviderServer]:
    yield from serve("openai", always_call=True)
