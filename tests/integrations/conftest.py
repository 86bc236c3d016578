"""Fixtures: the rejecting OpenAI-compatible server of ``tests/providers``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.providers.servers import ProviderServer, serve


@pytest.fixture
def openai_server() -> Iterator[ProviderServer]:
    yield from serve("openai")
