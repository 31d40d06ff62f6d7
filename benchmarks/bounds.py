"""`crag-bench bounds`: the memory and time bounds that hold for hostile input, measured on loopback.

- peak RSS rise for one hostile page or search answer, each case in a fresh process (goal <= 300 MB);
- how far past its timeout a search ends when the endpoint trickles or stalls, sync and async (goal <= +1 s);
- 500 concurrent `acorrect` against a search engine answering in 0.5 s: how many got web results, per
  provider (goal >= 490);
- every text path with hostile text, and the default lexical judge against its cost without the reading
  (`text_paths.py`; one 4 MB internal passage through `correct()`: goal <= 5 s on 2 cores).
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import multiprocessing
import resource
import time
import zlib
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, TextIO

from crag_shared.corrector import Corrector
from crag_shared.testing import FakeWeb
from crag_shared.web.base import WebSearch, WebSearchError
from crag_shared.web.fetch import PageFetcher
from crag_shared.web.serpapi import SerpAPISearch
from crag_shared.web.serper import SerperSearch

from . import text_paths

LOOPBACK = ["127.0.0.1/32"]
QUERY = "Where was Henry Feilden born?"
OFF_TOPIC = ["The Great Barrier Reef is the world's largest coral reef system, off the coast of Queensland."]
TEXT = "Henry Feilden was born in 1818 at Blackburn, Lancashire, and served as a Member of Parliament."


def provider(web: FakeWeb, name: str, **kwargs: Any) -> SerpAPISearch | SerperSearch:
    """SerpAPI or Serper pointed at the loopback web, fetching its pages."""
    fetcher = kwargs.pop("fetcher", None) or PageFetcher(allow_private_addresses=LOOPBACK, retries=0)
    if name == "serpapi":
        return SerpAPISearch(api_key=web.api_key, base_url=web.url, fetcher=fetcher, **kwargs)
    return SerperSearch(api_key=web.api_key, base_url=f"{web.url}/serper", fetcher=fetcher, **kwargs)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- memory: one hostile page or answer per process ---------------------------------------------------
def _page_case(case: str) -> tuple[float, float]:
    """(peak RSS rise in MB, seconds) of one search whose only page is the hostile `case`."""
    with FakeWeb() as web:
        web.add("warm", "Warm up", [TEXT])
        search = provider(web, "serpapi", mode="all", fetcher=PageFetcher(
            allow_private_addresses=LOOPBACK, retries=0, timeout=20, deadline=30))
        search.search("warm")  # imports and first-use costs stay out of the figure
        web.pages.clear()
        if case == "20 KB <title> on a 3 MB page":
            body = ("<html><head><title>" + "T" * 20_000 + "</title></head><body>"
                    + f"<p>{TEXT}</p>" * 31_000 + "</body></html>").encode()
            web.add("page", "short", body=body)
        elif case == "30 KB search-result title":
            web.add("page", "R" * 30_000, [TEXT] * 2_000)
        elif case == "3 MB of <p>x</p>":
            web.add("page", "x", body=b"<html><body>" + b"<p>x</p>" * 375_000 + b"</body></html>")
        else:
            raise ValueError(case)
        before, started = _rss_mb(), time.perf_counter()
        response = search.search("hostile")
        seconds = time.perf_counter() - started
        assert response.results, response.issues
    return _rss_mb() - before, seconds


def _serper_bomb_case(case: str) -> tuple[float, float]:
    """(peak RSS rise in MB, seconds) of a Serper answer that inflates to gigabytes (`gzip, gzip`)."""
    import httpx

    bomb = gzip.compress(_gzip_stream([b'{"organic": [', *[b" " * 1_000_000] * 2_000, b"]}"]), compresslevel=9)

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-encoding": "gzip, gzip"}, stream=httpx.ByteStream(bomb))

    search = SerperSearch(api_key="k-0123456789", transport=httpx.MockTransport(answer), fetch_pages=False,
                          timeout=30)
    before, started = _rss_mb(), time.perf_counter()
    with contextlib.suppress(WebSearchError):
        search.search("bomb")
    return _rss_mb() - before, time.perf_counter() - started


def _gzip_stream(pieces: list[bytes]) -> bytes:
    """The gzip of the pieces joined, without holding them joined."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    return b"".join([*(packer.compress(piece) for piece in pieces), packer.flush()])


MEMORY_CASES: dict[str, Callable[[str], tuple[float, float]]] = {
    "20 KB <title> on a 3 MB page": _page_case, "30 KB search-result title": _page_case,
    "3 MB of <p>x</p>": _page_case, "Serper answer gzip, gzip (2 GB inflated)": _serper_bomb_case,
}


def memory_rows() -> dict[str, tuple[float, float]]:
    """Each memory case in a fresh process: {case: (RSS rise MB, seconds)}."""
    rows = {}
    for case, measure in MEMORY_CASES.items():
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            rows[case] = pool.submit(measure, case).result()
    return rows


# -- deadlines ------------------------------------------------------------------------------------------
def _overrun(search: WebSearch, timeout: float, run_async: bool) -> float:
    started = time.perf_counter()
    try:
        if run_async:
            asyncio.run(search.asearch("slow"))
        else:
            search.search("slow")
    except WebSearchError:
        pass
    return time.perf_counter() - started - timeout


def deadline_rows(timeout: float = 3.0) -> dict[str, tuple[float, float]]:
    """{case: (seconds past the timeout sync, async)} for endpoints that trickle or stall."""
    rows = {}
    with FakeWeb() as web:
        web.add("page", "Henry Feilden", [TEXT])
        for fault in ("trickle_headers", "trickle", "timeout"):
            for name in ("serpapi", "serper"):
                web.search_fault = fault
                search = provider(web, name, timeout=timeout, fetch_pages=False)
                rows[f"{name}: search answer {fault}"] = (_overrun(search, timeout, False),
                                                          _overrun(search, timeout, True))
        web.search_fault = None
        web.add("page", "Henry Feilden", [TEXT], delay=30)
        search = provider(web, "serpapi", fetcher=PageFetcher(allow_private_addresses=LOOPBACK, retries=0,
                                                              timeout=20, deadline=timeout))
        rows["page that answers after 30 s (fetch deadline)"] = (_overrun(search, timeout, False),
                                                                 _overrun(search, timeout, True))
    return rows


# -- concurrency ------------------------------------------------------------------------------------------
def concurrency_row(name: str, queries: int = 500, delay: float = 0.5) -> tuple[int, float]:
    """(queries that got web results, seconds) for `queries` concurrent `acorrect` on one event loop."""
    with FakeWeb(search_delay=delay) as web:
        web.add("page", "Henry Feilden", [TEXT, TEXT.replace("1818", "the year 1818")])
        corrector = Corrector(web_search=provider(web, name), web_top_k=1)

        async def many() -> list[Any]:
            return await asyncio.gather(*(corrector.acorrect(f"{QUERY} ({i})", OFF_TOPIC) for i in range(queries)))

        started = time.perf_counter()
        results = asyncio.run(many())
        seconds = time.perf_counter() - started
    return sum(1 for r in results if r.external), seconds


def run(out: TextIO, bench: Path, *, queries: int = 500, timeout: float = 3.0, text_scale: float = 1.0,
        rounds: int = 12) -> dict[str, Any]:
    """Every bound, printed as a table; the figures. `text_scale` shrinks the hostile texts (a quick run)."""
    out.write("crag-bench bounds: hostile input on loopback\n\npeak RSS rise per case (fresh process each; "
              "goal <= 300 MB), and its time\n")
    memory = memory_rows()
    for case, (rss, seconds) in memory.items():
        out.write(f"  {case:<44} {rss:7.0f} MB {seconds:7.2f} s\n")
    out.write(f"\nseconds past a {timeout:g} s timeout (goal <= +1 s)".ljust(53) + "sync    async\n")
    deadlines = deadline_rows(timeout)
    for case, (sync, async_) in deadlines.items():
        out.write(f"  {case:<48} {sync:+6.2f}   {async_:+6.2f}\n")
    out.write(f"\n{queries} concurrent acorrect, search engine answering in 0.5 s (goal >= {queries * 49 // 50})\n")
    concurrency = {}
    for name in ("serpapi", "serper"):
        concurrency[name] = got, seconds = concurrency_row(name, queries)
        out.write(f"  {name:<8} web results for {got}/{queries} in {seconds:.1f} s\n")
    out.write(f"\ntext paths, hostile text (fresh process each; inputs x{text_scale:g}){'seconds':>13}   peak RSS"
              "   held after\n")
    texts = text_paths.case_rows(text_scale)
    for case, (seconds, peak, held) in texts.items():
        goal = f"  (goal <= {text_paths.PASSAGE_GOAL_S:g} s)" if case.startswith("4 MB internal") else ""
        out.write(f"  {case:<52} {seconds:7.2f} s {peak:7.0f} MB {held:7.0f} MB{goal}\n")
    judge = text_paths.judge_row(bench, rounds)
    out.write(f"\ndefault lexical judge against itself without the reading (PopQA, {rounds} paired rounds; goal <= "
              f"{text_paths.JUDGE_GOAL:g}x)\n  {judge['default_ms']:.2f} ms/query against "
              f"{judge['without_ms']:.2f} ms/query: {judge['ratio']:.2f}x\n")
    return {"memory": memory, "deadlines": deadlines, "concurrency": concurrency, "text_paths": texts,
            "judge": judge}
