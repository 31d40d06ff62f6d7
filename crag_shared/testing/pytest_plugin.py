"""pytest fixtures for testing CRAG apps offline (auto-loaded when crag-shared is installed).

`crag_fake_web` is a running `FakeWeb`: a loopback server that answers SerpAPI-style `/search` (and
serper's POST `/serper/search`) and serves the pages you add, with switchable faults:

    def test_my_app(crag_fake_web):
        crag_fake_web.add("p", "Ada Lovelace", ["Ada Lovelace was an English mathematician ..."])
        search = SerpAPISearch(api_key=crag_fake_web.api_key, base_url=crag_fake_web.url,
                               fetcher=PageFetcher(allow_private_addresses=["127.0.0.1/32"]))
        crag_fake_web.search_fault = "429"  # or "401", "500", "timeout", "malformed", "error200", "empty"
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .fakes import FakeWeb


@pytest.fixture
def crag_fake_web() -> Iterator[FakeWeb]:
    """A running `FakeWeb` on loopback, closed after the test."""
    with FakeWeb() as web:
        yield web
