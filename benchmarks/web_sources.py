"""`crag-bench web-sources`: the same PopQA web knowledge through every web source, compared with replay.

The web knowledge the CRAG authors recorded for each question is written as a replay file (the reference)
and served on a loopback server that speaks each provider's API and serves one HTML page per recorded
page. Each source runs the real provider (its client, the guarded fetcher and trafilatura, or the page
text the provider returns) under the same corrector; counted per source: the questions whose knowledge
strips are exactly the replay's, and answer recall. Every question searches: its retrieval is judged
Incorrect, so the knowledge is the web's alone.

The figures depend on the pages' content alone, never on timing: every time bound of the search and the
fetch is `PATIENT`, far beyond what a loopback answer takes on a loaded machine, and the pages that failed
or came late are counted per source (`failed_pages`), so a fault names itself. The fetching sources differ
from the replay on the same questions, where page extraction reads the HTML otherwise than the recorded text
(a zero-width space dropped, a heading kept): 18 of the first 20 questions are the same.
"""

from __future__ import annotations

import importlib.util
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from crag_shared.corrector import Corrector
from crag_shared.rewrite import keyword_query
from crag_shared.rows import Record
from crag_shared.testing import FakeWeb
from crag_shared.types import Passage
from crag_shared.web.base import WebSearch
from crag_shared.web.fetch import PageFetcher
from crag_shared.web.replay import ReplaySearch

from .recall import has_answer_word, load, pages_of, serve_recorded

LOOPBACK = ["127.0.0.1/32"]
#: Seconds for every search call and page fetch: no bound a loopback answer can reach, however loaded the
#: machine, so no figure depends on timing.
PATIENT = 300.0


def replay_file(rows: list[Record], web: FakeWeb, path: Path) -> Path:
    """The recorded pages as a replay file: each question's keyword query and its pages, at the URLs the
    loopback web serves them at."""
    with path.open("w", encoding="utf-8") as out:
        for row in rows:
            results = [{"title": title, "url": web.page_url(f"q{row.id}-{j}"), "text": "\n\n".join(paragraphs)}
                       for j, (title, paragraphs) in enumerate(pages_of(row).items())]
            out.write(json.dumps({"query": keyword_query(row.question), "results": results}) + "\n")
    return path


def sources(web: FakeWeb) -> dict[str, Callable[[], WebSearch]]:
    """Each web source, pointed at the loopback web (those whose client is installed)."""
    from crag_shared.web.brave import BraveSearch
    from crag_shared.web.searxng import SearXNGSearch
    from crag_shared.web.serpapi import SerpAPISearch
    from crag_shared.web.serper import SerperSearch

    def fetcher() -> PageFetcher:
        return PageFetcher(allow_private_addresses=LOOPBACK, timeout=PATIENT, deadline=PATIENT)

    made: dict[str, Callable[[], WebSearch]] = {
        "SearXNG": lambda: SearXNGSearch(f"{web.url}/searxng", fetcher=fetcher(), timeout=PATIENT),
        "SerpAPI": lambda: SerpAPISearch(api_key=web.api_key, base_url=web.url, fetcher=fetcher(), timeout=PATIENT),
        "Serper": lambda: SerperSearch(api_key=web.api_key, base_url=f"{web.url}/serper", fetcher=fetcher(),
                                       timeout=PATIENT),
        "Brave": lambda: BraveSearch(api_key=web.api_key, base_url=f"{web.url}/brave", fetcher=fetcher(),
                                     timeout=PATIENT),
    }
    if importlib.util.find_spec("tavily"):
        from crag_shared.web.tavily import TavilySearch

        made["Tavily (page text it returns)"] = lambda: TavilySearch(
            api_key=web.api_key, base_url=f"{web.url}/tavily", fetcher=fetcher(), min_content_chars=1, timeout=PATIENT)
    if importlib.util.find_spec("exa_py"):
        from crag_shared.web.exa import ExaSearch

        made["Exa (page text it returns)"] = lambda: ExaSearch(
            api_key=web.api_key, base_url=f"{web.url}/exa", fetcher=fetcher(), min_content_chars=1, timeout=PATIENT)
    if importlib.util.find_spec("crag_haystack"):
        from crag_haystack import ComponentWebSearch
        from crag_haystack.testing import SearXNGDocumentsWebSearch

        def haystack() -> WebSearch:
            wrapped = ComponentWebSearch(SearXNGDocumentsWebSearch(f"{web.url}/searxng"), mode="wiki",
                                         allow_private_addresses=LOOPBACK, fetch_timeout=PATIENT,
                                         fetch_deadline=PATIENT, timeout=PATIENT)
            return wrapped.provider

        made["Haystack web component (ComponentWebSearch)"] = haystack
    return made


def knowledge(search: WebSearch, rows: list[Record]) -> tuple[list[list[str]], int]:
    """Each question's web knowledge strips with `search` as the web source (lexical evaluator), and how many
    pages failed or came late: its retrieval is one off-topic passage, so every question is Incorrect and
    searches."""
    corrector = Corrector(web_search=search)
    off_topic = [Passage("The Great Barrier Reef is the largest coral reef system, off Queensland.", id="0")]
    results = [corrector.correct(row.question, off_topic) for row in rows]
    failed = sum(1 for r in results for issue in (r.web.issues if r.web else ()) if issue.stage == "fetch")
    return [[s.text for s in r.knowledge] for r in results], failed


def run(out: TextIO, bench: Path, *, queries: int = 100) -> dict[str, dict[str, float]]:
    """Per source: questions with the replay's knowledge exactly, answer recall and the pages that failed or
    came late; printed and returned."""
    rows = load(bench, queries)
    figures: dict[str, dict[str, float]] = {}
    with FakeWeb() as web, tempfile.TemporaryDirectory() as folder:
        serve_recorded(web, rows)
        reference, _ = knowledge(ReplaySearch(replay_file(rows, web, Path(folder) / "replay.jsonl")), rows)
        out.write(f"crag-bench web-sources: {len(rows)} PopQA questions, the recorded web knowledge served on "
                  f"loopback; lexical evaluator\n")
        for name, make in {"replay (reference)": lambda: ReplaySearch(Path(folder) / "replay.jsonl"),
                           **sources(web)}.items():
            got, failed = knowledge(make(), rows)
            same = sum(a == b for a, b in zip(got, reference))
            recall = sum(has_answer_word("\n".join(k), r.answers) for k, r in zip(got, rows)) / len(rows)
            figures[name] = {"same_knowledge": same / len(rows), "recall": recall, "failed_pages": failed}
            out.write(f"  {name:<46} same knowledge as replay {same}/{len(rows)}   answer recall {recall:.2f}   "
                      f"pages failed or late {failed}\n")
    return figures
