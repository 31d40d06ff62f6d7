"""`Corrector`: the core every framework adapter calls. It drives the walks of Algorithm 1 (`walk.py`):
`correct` answers their requests synchronously, `acorrect` asynchronously (running the internal
refinement and the web search of an Ambiguous query concurrently), `correct_many` many queries together.
So every path shares every decision, and the sync path never touches an event loop (it works inside
Jupyter).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Literal, TypeVar

from ..aio import in_thread
from ..config import CRAGConfig
from ..evaluators.base import EvaluatorConfigurationError, RetrievalEvaluator
from ..evaluators.spec import describe, evaluator_from_spec
from ..llm import LLM
from ..policy import ActionPolicy
from ..refine import StripRefiner
from ..rewrite import QueryRewriter
from ..text.analysis import check_language
from ..types import CorrectionResult, FailedCorrection, Judgment, Passage, Refinement, WebOutcome
from ..web.base import WebSearch
from .checks import check_query, checked_response
from .configured import corrector_parts
from .many import answers_for, many_walks, result_of, score_requests, web_requests
from .protocol import (
    Answer,
    BothRequest,
    Failed,
    QueryFailed,
    Request,
    ScoreAnswer,
    ScoreRequest,
    Step,
    WebAnswer,
    WebRequest,
)
from .walk import Walks

T = TypeVar("T")
#: The default fallback evaluator, built by its spec: stateless, so one instance serves all.
_LEXICAL = evaluator_from_spec("lexical")


def _evaluator(value: RetrievalEvaluator | str | None, name: str, llm: LLM | None = None
               ) -> RetrievalEvaluator | None:
    """An evaluator given as an instance or as its spec ("lexical", "cross-encoder:PATH", "llm"...; the LLM
    judge's specs take `llm`), or None; any other value is the caller's bug, named."""
    if value is None or isinstance(value, RetrievalEvaluator):
        return value
    if isinstance(value, str):
        return evaluator_from_spec(value, llm=llm)
    raise TypeError(f"{name} must be a RetrievalEvaluator or an evaluator spec string, got {type(value).__name__}")


def _language_of(evaluator: RetrievalEvaluator) -> str:
    """The language an evaluator analyzes text in (its `language`), else English."""
    code = getattr(evaluator, "language", None)
    return code if isinstance(code, str) else "en"


class Corrector(Walks):
    """Corrects one query's retrieval: the core every framework adapter calls.

    Every argument is optional. Defaults: the judge "default" stands for (`default_evaluator`: crag's trained
    reader blended with the lexical judge, `combined:reader-lexical`, when `crag-shared[reader]` is installed
    and the language is English, else `LexicalEvaluator`; offline either way, nothing to download), its own thresholds,
    `StripRefiner("excerption")` for internal passages, `StripRefiner("selection")` for web paragraphs
    (pages are already split into paragraphs, as in the paper), the offline keyword `QueryRewriter`, and
    no web search: nothing leaves the machine unless you pass a `web_search` provider.

    Incorrect discards the internal passages, as in the paper. When there is no web knowledge (no web
    search configured, the search failed, found nothing, or its pages had no text) the result then holds
    no knowledge and says so: `result.abstained`, with `result.abstention` saying why, and the adapters
    answer "I don't know" without calling the LLM. `on_web_failure="keep"` opts into recall instead: the
    internal passages' best strips are kept, flagged in the trace. Ambiguous without web knowledge keeps
    only the internal strips scoring at least the upper threshold (as Correct would; all that pass the
    strip threshold with `on_web_failure="keep"`) and records the missing half (`result.web_missing`).
    `ambiguous="guard"` hands on an Ambiguous question's strips below the upper threshold instead, each
    marked unverified (`Strip.unverified`) with the instruction to answer only from a passage that states
    the answer (see `AmbiguousRule`).
    An empty query is not judged (`Action.UNJUDGED`, abstained); a query that is not a string raises.
    No web search configured is the setup, not a fault: it is logged at INFO once per Corrector; a web
    search that fails is logged as a warning each time.
    When the evaluator raises while scoring, `fallback_evaluator` (lexical by default; None to re-raise)
    scores instead, with its own thresholds; an `EvaluatorConfigurationError` (a model that cannot
    load) is never hidden that way. Every fallback is recorded in `result.trace.fallbacks`.
    `score_titles=True` scores "title: text" when a passage has a title the text does not start with.
    `language` (ISO 639-1, or "auto" to detect each question's) is the questions' language for the follow-up
    rule (`crag_shared.text.follow_up`: a question that names no one but a pronoun is judged Ambiguous at
    most, in the languages with a follow-up table); by default the evaluator's own `language` when it
    analyzes text, else English.
    """

    def __init__(
        self,
        evaluator: RetrievalEvaluator | str | None = None,
        policy: ActionPolicy | None = None,
        refiner: StripRefiner | None = None,
        rewriter: QueryRewriter | None = None,
        web_search: WebSearch | None = None,
        *,
        web_refiner: StripRefiner | None = None,
        web_top_k: int = 5,
        on_web_failure: Literal["keep", "drop"] = "drop",
        ambiguous: Literal["drop", "guard"] = "drop",
        fallback_evaluator: RetrievalEvaluator | str | None = _LEXICAL,
        score_titles: bool = False,
        language: str | None = None,
        llm: LLM | None = None,
    ) -> None:
        if on_web_failure not in ("keep", "drop"):
            raise ValueError(f"on_web_failure must be 'keep' or 'drop', got {on_web_failure!r}")
        if ambiguous not in ("drop", "guard"):
            raise ValueError(f"ambiguous must be 'drop' or 'guard', got {ambiguous!r}")
        if web_top_k < 1:
            raise ValueError(f"web_top_k must be at least 1, got {web_top_k}")
        if web_search is not None and not isinstance(web_search, WebSearch):
            raise TypeError("web_search must provide search(query, top_k) and asearch(query, top_k)")
        evaluator, fallback_evaluator = (_evaluator(evaluator, "evaluator", llm),
                                         _evaluator(fallback_evaluator, "fallback_evaluator"))
        self.evaluator = evaluator or evaluator_from_spec(
            "auto", llm=llm, **({"language": language} if language is not None else {}))
        self.policy = policy or ActionPolicy.for_evaluator(self.evaluator)
        self.refiner = refiner or StripRefiner("excerption")
        self.web_refiner = web_refiner or StripRefiner("selection")
        self.rewriter = rewriter or QueryRewriter(llm)
        self.web_search = web_search
        self.web_top_k = web_top_k
        self.on_web_failure = on_web_failure
        self.ambiguous = ambiguous
        self.fallback_evaluator = fallback_evaluator
        self.score_titles = score_titles
        self.language = check_language(language) if language is not None else _language_of(self.evaluator)
        self._told_no_web = False

    @classmethod
    def from_config(cls, config: CRAGConfig, *, llm: LLM | None = None, web_search: WebSearch | None = None,
                    evaluator: RetrievalEvaluator | None = None, judge_llm: LLM | Literal["llm"] | None = "llm"
                    ) -> Corrector:
        """A Corrector with `config`'s settings; `llm` serves the rewriter and, unless `judge_llm` names another
        (or None: no LLM judges), the LLM judge: `evaluator="auto"`, the default, judges with it where there is
        one. `evaluator` replaces the one the config names (an instance its spec cannot rebuild)."""
        if not isinstance(config, CRAGConfig):
            raise TypeError(f"from_config takes a CRAGConfig, got {type(config).__name__}")
        judge = llm if judge_llm == "llm" else judge_llm
        return cls(web_search=web_search, **corrector_parts(config, llm, evaluator, judge))

    # -- drivers --------------------------------------------------------------------------------------
    def correct(self, query: str, passages: Sequence[str | Passage]) -> CorrectionResult:
        """Run CRAG on one query and its retrieved passages (strings or `Passage`s)."""
        return self._drive(self._walk(query, passages))

    async def acorrect(self, query: str, passages: Sequence[str | Passage]) -> CorrectionResult:
        """Async `correct`: model inference runs off the loop; Ambiguous refines while it searches."""
        return await self._adrive(self._walk(query, passages))

    # -- many queries at once ----------------------------------------------------------------------------
    def correct_many(self, items: Sequence[tuple[str, Sequence[str | Passage]]], *, web_concurrency: int = 8
                     ) -> list[CorrectionResult | FailedCorrection]:
        """`correct` for many (query, passages) items, in input order, each exactly as `correct` would decide.

        The walks advance together: every step's scoring requests go to the evaluator as one
        `evaluate_batch` across queries (passages and strips alike), and web searches run concurrently,
        at most `web_concurrency` at a time. A query that fails becomes a `FailedCorrection` in its place;
        the others are never lost. Only an `EvaluatorConfigurationError` (no query can be scored) raises."""
        loop = many_walks(items, [self._walk(query, passages) for query, passages in items])
        with ThreadPoolExecutor(max_workers=max(1, web_concurrency), thread_name_prefix="crag-web") as pool:
            answers: dict[int, Answer] | None = None
            while True:
                try:
                    requests = loop.send(answers)  # type: ignore[arg-type]
                except StopIteration as done:
                    return done.value
                scores = self._serve_scores(requests)
                webs = {i: pool.submit(self._serve, r) for i, r in web_requests(requests).items()}
                answers = answers_for(requests, scores, {i: result_of(f) for i, f in webs.items()})

    async def acorrect_many(self, items: Sequence[tuple[str, Sequence[str | Passage]]], *,
                            web_concurrency: int = 8) -> list[CorrectionResult | FailedCorrection]:
        """Async `correct_many`: scoring in a worker thread, web searches concurrent on the event loop."""
        loop = many_walks(items, [self._walk(query, passages) for query, passages in items])
        gate = asyncio.Semaphore(max(1, web_concurrency))

        async def web(request: WebRequest) -> Answer:
            async with gate:
                try:
                    return await self._aserve(request)
                except Exception as error:  # a provider's bug fails its own query only
                    return QueryFailed(error)

        answers: dict[int, Answer] | None = None
        while True:
            try:
                requests = loop.send(answers)  # type: ignore[arg-type]
            except StopIteration as done:
                return done.value
            scores = await in_thread(self._serve_scores, requests)
            webs = web_requests(requests)
            found = dict(zip(webs, await asyncio.gather(*(web(r) for r in webs.values()))))
            answers = answers_for(requests, scores, found)

    def _serve_scores(self, requests: dict[int, Request]) -> dict[int, ScoreAnswer]:
        """All score requests of one step, one `evaluate_batch` per evaluator; a failing batch is a
        `Failed` for each of its queries (each then takes its fallback, as alone)."""
        wanted = score_requests(requests)
        answers: dict[int, ScoreAnswer] = {}
        by_evaluator: dict[int, list[int]] = {}
        for i, request in wanted.items():
            by_evaluator.setdefault(id(request.evaluator), []).append(i)
        for members in by_evaluator.values():
            evaluator = wanted[members[0]].evaluator
            try:
                evaluations: list[ScoreAnswer] = list(
                    evaluator.evaluate_batch([(wanted[i].query, wanted[i].texts) for i in members]))
                if len(evaluations) != len(members):  # a plug-in's bug: no query may pair with another's scores
                    raise TypeError(f"{describe(evaluator)}.evaluate_batch returned {len(evaluations)} results "
                                    f"for {len(members)} requests")
            except EvaluatorConfigurationError:
                raise
            except Exception as error:
                evaluations = [Failed(error)] * len(members)
            answers.update(zip(members, evaluations))
        return answers

    # -- the slices: `correct` is exactly judge -> search (unless Correct) -> finish -----------------------
    def judge(self, query: str, passages: Sequence[str | Passage], *, policy: ActionPolicy | None = None
              ) -> Judgment:
        """Steps 1-2 only: score the passages and decide the action (no refinement, no web). `policy`
        overrides the thresholds for this call."""
        return self._drive(self._judge_slice(query, passages, policy))

    async def ajudge(self, query: str, passages: Sequence[str | Passage], *, policy: ActionPolicy | None = None
                     ) -> Judgment:
        """Async `judge`."""
        return await self._adrive(self._judge_slice(query, passages, policy))

    def search(self, question: str) -> WebOutcome | None:
        """The web half of step 3: rewrite the question into keywords, search, read the answer into
        passages. Never raises for a web fault: `failure` says why there is no web knowledge. None when
        no web search is configured."""
        return self._drive(self._search_walk(check_query(question)))

    async def asearch(self, question: str) -> WebOutcome | None:
        """Async `search`."""
        return await self._adrive(self._search_walk(check_query(question)))

    def finish(self, judgment: Judgment, web: WebOutcome | None = None) -> CorrectionResult:
        """Step 3 after the search: refine the kept passages and the web passages, applying the
        web-failure policy (`on_web_failure`), into the final result."""
        return self._drive(self._finish_slice(judgment, web))

    async def afinish(self, judgment: Judgment, web: WebOutcome | None = None) -> CorrectionResult:
        """Async `finish`."""
        return await self._adrive(self._finish_slice(judgment, web))

    def refine(self, query: str, passages: Sequence[str | Passage], *, web: bool = False,
               top_k: int | None = None, judged: Sequence[tuple[float, str] | None] | None = None) -> Refinement:
        """Only refine: decompose, filter and recompose `passages` (web paragraphs if `web=True`); `top_k`
        overrides how many strips are kept, for this call. `judged`: each passage's (score, judge) from an
        earlier `judge()` (None where unknown; the Haystack router stamps them): the strips of a passage the LLM
        judge accepted keep that acceptance, as in `correct()`."""
        return self._drive(self._refine_only(query, passages, web, top_k, judged))

    async def arefine(self, query: str, passages: Sequence[str | Passage], *, web: bool = False,
                      top_k: int | None = None, judged: Sequence[tuple[float, str] | None] | None = None
                      ) -> Refinement:
        """Async `refine`."""
        return await self._adrive(self._refine_only(query, passages, web, top_k, judged))

    def _drive(self, walk: Step[T]) -> T:
        answer: Answer = None
        while True:
            try:
                request = walk.send(answer)
            except StopIteration as done:
                return done.value
            answer = self._serve(request)

    async def _adrive(self, walk: Step[T]) -> T:
        answer: Answer = None
        while True:
            try:
                request = walk.send(answer)
            except StopIteration as done:
                return done.value
            answer = await self._aserve(request)

    def _serve(self, request: Request) -> Answer:
        if isinstance(request, BothRequest):
            return self._scored(request.first), self._searched(request.second)
        return self._scored(request) if isinstance(request, ScoreRequest) else self._searched(request)

    async def _aserve(self, request: Request) -> Answer:
        if isinstance(request, BothRequest):
            scored, found = await asyncio.gather(self._ascored(request.first), self._asearched(request.second))
            return scored, found
        return await (self._ascored(request) if isinstance(request, ScoreRequest) else self._asearched(request))

    @staticmethod
    def _scored(request: ScoreRequest) -> ScoreAnswer:
        try:
            return request.evaluator.evaluate(request.query, request.texts)
        except EvaluatorConfigurationError:
            raise
        except Exception as error:
            return Failed(error)

    @staticmethod
    async def _ascored(request: ScoreRequest) -> ScoreAnswer:
        try:
            return await request.evaluator.aevaluate(request.query, request.texts)
        except EvaluatorConfigurationError:
            raise
        except Exception as error:
            return Failed(error)

    def _searched(self, request: WebRequest) -> WebAnswer:
        search = self._searcher()
        rewrite = self.rewriter.rewrite(request.question)
        try:
            response = search.search(rewrite.query, request.top_k)
        except Exception as error:
            return WebAnswer(rewrite, Failed(error))
        return WebAnswer(rewrite, checked_response(search, response))

    async def _asearched(self, request: WebRequest) -> WebAnswer:
        search = self._searcher()
        rewrite = await self.rewriter.arewrite(request.question)
        try:
            response = await search.asearch(rewrite.query, request.top_k)
        except Exception as error:
            return WebAnswer(rewrite, Failed(error))
        return WebAnswer(rewrite, checked_response(search, response))

    def _searcher(self) -> WebSearch:
        """The web search a WebRequest goes to (the walk asks only when one is configured)."""
        if self.web_search is None:
            raise RuntimeError("a web search was requested but none is configured")
        return self.web_search
