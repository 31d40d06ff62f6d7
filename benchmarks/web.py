"""`crag-bench web`: concurrent page fetching against sequential fetching, on loopback pages with latency."""

from __future__ import annotations

import statistics
import time
from typing import TextIO

from crag_shared.testing import FakeWeb
from crag_shared.web.fetch import PageFetcher
from crag_shared.web.serpapi import SerpAPISearch


def sequential_fetch(urls: list[str], timeout: float) -> int:
    """The official code's way: one `requests.get` after another. Returns the pages that answered."""
    import requests

    ok = 0
    for url in urls:
        ok += requests.get(url, timeout=timeout).ok
    return ok


def run(out: TextIO, *, pages: int = 5, delay: float = 0.3, repeats: int = 3) -> dict[str, float]:
    """Concurrent against sequential page fetching on loopback pages with latency; the ratios."""
    with FakeWeb() as web:
        for i in range(pages):
            web.add(f"p{i}", f"Page {i}", [f"Paragraph {j} of page {i}, long enough to be kept." for j in range(5)],
                    delay=delay)
        search = SerpAPISearch(api_key=web.api_key, base_url=web.url, fetcher=PageFetcher(
            allow_private_addresses=["127.0.0.1/32"], concurrency=pages, deadline=30, timeout=10))
        urls = [web.page_url(f"p{i}") for i in range(pages)]
        ours, sequential = [], []
        for _ in range(repeats):
            started = time.perf_counter()
            response = search.search("benchmark", top_k=pages)
            ours.append(time.perf_counter() - started)
            assert sum(1 for r in response.results if r.paragraphs) == pages, response.issues
            started = time.perf_counter()
            assert sequential_fetch(urls, timeout=10) == pages
            sequential.append(time.perf_counter() - started)
    ours_s, seq_s = statistics.median(ours), statistics.median(sequential)
    figures = {"pages": pages, "delay_s": delay, "ours_s": ours_s, "sequential_s": seq_s,
               "ours_over_t": ours_s / delay, "sequential_over_ours": seq_s / ours_s}
    out.write(f"crag-bench web: {pages} result pages on loopback, each delayed t = {delay * 1000:.0f} ms\n"
              f"  ours (search + concurrent fetch + extraction), median of {repeats}: "
              f"{ours_s * 1000:.0f} ms = {ours_s / delay:.2f} t   (goal <= 1.3 t)\n"
              f"  sequential fetch only (the official code's way): {seq_s * 1000:.0f} ms = {seq_s / delay:.2f} t\n"
              f"  speed-up over sequential: {seq_s / ours_s:.1f}x\n")
    return figures
