"""Algorithm 1 of the paper end to end: evaluate, decide, refine and/or search, with a full trace.

The walk is written once, as a generator that yields what it needs (scores, a web search) and receives
the answers. `correct` answers those requests synchronously, `acorrect` asynchronously, running the
internal refinement and the web search of an Ambiguous query concurrently. So both paths share every
decision, and the sync path never touches an event loop (it works inside Jupyter).
"""

from __future__ import annotations

import asyncio
import math
import numbers
import time
from collections.abc import Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeVar

from .evaluators.base import Evaluation, EvaluatorConfigurationError, RetrievalEvaluator, clip
from .evaluators.lexical import LexicalEvaluator
from .policy import ActionPolicy
from .refine import StripRefiner
from .rewrite import QueryRewriter, Rewrite
from .text import titled
from .trace import (
    LOG,
    Abstained,
    BelowLower,
    Decided,
    Evaluated,
    EvaluatorNote,
    Finished,
    Input,
    PassagesFiltered,
    Refined,
    Rewritten,
    Searched,
    SkippedPassage,
    TruncatedPassage,
    Unjudged,
)
from .types import (
    Abstention,
    Action,
    CorrectionResult,
    FailedCorrection,
    Judgment,
    Origin,
    Passage,
    Refinement,
    Strip,
    Trace,
    WebOutcome,
    WebResult,
    WebSearchResponse,
)
from .web.base import WebSearch, response_passages


# -- what the walk asks its driver for ----------------------------------------------------------------
@dataclass(frozen=True)
class _Score:
    evaluator: RetrievalEvaluator
    query: str
    texts: list[str]


@dataclass(frozen=True)
class _Web:
    question: str
    top_k: int


@dataclass(frozen=True)
class _Both:
    first: Any
    second: Any


@dataclass(frozen=True)
class _Failed:
    error: BaseException


@dataclass(frozen=True)
class _Found:
    rewrite: Rewrite
    response: WebSearchResponse | _Failed


@dataclass
class _State:
    """Per-query state: the evaluator in use (it changes on fallback) and the score cache."""

    evaluator: RetrievalEvaluator
    policy: ActionPolicy
    cache: dict[str, float] = field(default_factory=dict)


Walk = Generator[Any, Any, CorrectionResult]
T = TypeVar("T")
_LEXICAL = LexicalEvaluator()  # the default fallback evaluator: stateless, so one instance serves all
NO_WEB_SEARCH = "no web search configured"


class Corrector:
    """Corrects one query's retrieval: the core every framework adapter calls.

    Every argument is optional. Defaults: `LexicalEvaluator` (offline, no download), its own thresholds,
    `StripRefiner("excerption")` for internal passages, `StripRefiner("selection")` for web paragraphs
    (pages are already split into paragraphs, as in the paper), the offline keyword `QueryRewriter`, and
    no web search: nothing leaves the machine unless you pass a `web_search` provider.

    Incorrect discards the internal passages, as in the paper. When there is no web knowledge (no web
    search configured, the search failed, found nothing, or its pages had no text) the result then holds
    no knowledge and says so: `result.abstained`, with `result.abstention` saying why, and the adapters
    answer "I don't know" without calling the LLM. `on_web_failure="keep"` opts into recall instead: the
    internal passages' best strips are kept, flagged in the trace. Ambiguous without web knowledge keeps
    the internal strips that pass the strip threshold and records the missing half (`result.web_missing`).
    An empty query is not judged (`Action.UNJUDGED`, abstained); a query that is not a string raises.
    No web search configured is the setup, not a fault: it is logged at INFO once per Corrector; a web
    search that fails is logged as a warning each time.
    When the evaluator raises while scoring, `fallback_evaluator` (lexical by default; None to re-raise)
    scores instead, with its own thresholds; an `EvaluatorConfigurationError` (a model that cannot
    load) is never hidden that way. Every fallback is recorded in `result.trace.fallbacks`.
    `score_titles=True` scores "title: text" when a passage has a title the text does not start with.
    """

    def __init__(
        self,
        evaluator: RetrievalEvaluator | None = None,
        policy: ActionPolicy | None = None,
        refiner: StripRefiner | None = None,
        rewriter: QueryRewriter | None = None,
        web_search: WebSearch | None = None,
        *,
        web_refiner: StripRefiner | None = None,
        web_top_k: int = 5,
        on_web_failure: Literal["keep", "drop"] = "drop",
        fallback_evaluator: RetrievalEvaluator | None = _LEXICAL,
        score_titles: bool = False,
    ) -> None:
        if on_web_failure not in ("keep", "drop"):
            raise ValueError(f"on_web_failure must be 'keep' or 'drop', got {on_web_failure!r}")
        if web_top_k < 1:
            raise ValueError(f"web_top_k must be at least 1, got {web_top_k}")
        if web_search is not None and not isinstance(web_search, WebSearch):
            raise TypeError("web_search must provide search(query, top_k) and asearch(query, top_k)")
        self.evaluator = evaluator or LexicalEvaluator()
        self.policy = policy or ActionPolicy.for_evaluator(self.evaluator)
        self.refiner = refiner or StripRefiner("excerption")
        self.web_refiner = web_refiner or StripRefiner("selection")
        self.rewriter = rewriter or QueryRewriter()
        self.web_search = web_search
        self.web_top_k = web_top_k
        self.on_web_failure = on_web_failure
        self.fallback_evaluator = fallback_evaluator
        self.score_titles = score_titles
        self._told_no_web = False

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
        walks = [self._walk(query, passages) for query, passages in items]
        with ThreadPoolExecutor(max_workers=max(1, web_concurrency), thread_name_prefix="crag-web") as pool:
            def serve(requests: dict[int, Any]) -> dict[int, Any]:
                scores = self._serve_scores(requests)
                webs = {i: pool.submit(self._serve, r) for i, r in _web_requests(requests).items()}
                return _answers(requests, scores, {i: _result(f) for i, f in webs.items()})

            return _drive_many(items, walks, serve)

    async def acorrect_many(self, items: Sequence[tuple[str, Sequence[str | Passage]]], *,
                            web_concurrency: int = 8) -> list[CorrectionResult | FailedCorrection]:
        """Async `correct_many`: scoring in a worker thread, web searches concurrent on the event loop."""
        walks = [self._walk(query, passages) for query, passages in items]
        gate = asyncio.Semaphore(max(1, web_concurrency))
        results: list[CorrectionResult | FailedCorrection | None] = [None] * len(items)
        answers: dict[int, Any] = dict.fromkeys(range(len(items)))

        async def web(request: Any) -> Any:
            async with gate:
                try:
                    return await self._aserve(request)
                except Exception as error:  # a provider's bug fails its own query only
                    return _QueryFailed(error)

        while answers:
            requests = _advance(items, walks, answers, results)
            if not requests:
                break
            scores = await asyncio.to_thread(self._serve_scores, requests)
            webs = _web_requests(requests)
            found = dict(zip(webs, await asyncio.gather(*(web(r) for r in webs.values()))))
            answers = _answers(requests, scores, found)
        return results  # type: ignore[return-value]

    def _serve_scores(self, requests: dict[int, Any]) -> dict[int, Any]:
        """All score requests of one step, one `evaluate_batch` per evaluator; a failing batch is a
        `_Failed` for each of its queries (each then takes its fallback, as alone)."""
        wanted = {i: (r.first if isinstance(r, _Both) else r) for i, r in requests.items()
                  if isinstance(r, (_Score, _Both))}
        answers: dict[int, Any] = {}
        by_evaluator: dict[int, list[int]] = {}
        for i, request in wanted.items():
            by_evaluator.setdefault(id(request.evaluator), []).append(i)
        for members in by_evaluator.values():
            evaluator = wanted[members[0]].evaluator
            try:
                evaluations = evaluator.evaluate_batch([(wanted[i].query, wanted[i].texts) for i in members])
            except EvaluatorConfigurationError:
                raise
            except Exception as error:
                evaluations = [_Failed(error)] * len(members)
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
        return await self._adrive(self._judge_slice(query, passages, policy))

    def search(self, question: str) -> WebOutcome | None:
        """The web half of step 3: rewrite the question into keywords, search, read the answer into
        passages. Never raises for a web fault: `failure` says why there is no web knowledge. None when
        no web search is configured."""
        return self._drive(self._search_walk(_check_query(question)))

    async def asearch(self, question: str) -> WebOutcome | None:
        return await self._adrive(self._search_walk(_check_query(question)))

    def finish(self, judgment: Judgment, web: WebOutcome | None = None) -> CorrectionResult:
        """Step 3 after the search: refine the kept passages and the web passages, applying the
        web-failure policy (`on_web_failure`), into the final result."""
        return self._drive(self._finish_slice(judgment, web))

    async def afinish(self, judgment: Judgment, web: WebOutcome | None = None) -> CorrectionResult:
        return await self._adrive(self._finish_slice(judgment, web))

    def refine(self, query: str, passages: Sequence[str | Passage], *, web: bool = False,
               top_k: int | None = None) -> Refinement:
        """Only refine: decompose, filter and recompose `passages` (web paragraphs if `web=True`); `top_k`
        overrides how many strips are kept, for this call."""
        return self._drive(self._refine_only(query, passages, web, top_k))

    async def arefine(self, query: str, passages: Sequence[str | Passage], *, web: bool = False,
                      top_k: int | None = None) -> Refinement:
        return await self._adrive(self._refine_only(query, passages, web, top_k))

    def _drive(self, walk: Generator[Any, Any, T]) -> T:
        answer: Any = None
        while True:
            try:
                request = walk.send(answer)
            except StopIteration as done:
                return done.value
            answer = self._serve(request)

    async def _adrive(self, walk: Generator[Any, Any, T]) -> T:
        answer: Any = None
        while True:
            try:
                request = walk.send(answer)
            except StopIteration as done:
                return done.value
            answer = await self._aserve(request)

    def _serve(self, request: Any) -> Any:
        if isinstance(request, _Both):
            return self._serve(request.first), self._serve(request.second)
        if isinstance(request, _Score):
            try:
                return request.evaluator.evaluate(request.query, request.texts)
            except EvaluatorConfigurationError:
                raise
            except Exception as error:
                return _Failed(error)
        rewrite = self.rewriter.rewrite(request.question)
        try:
            response = self.web_search.search(rewrite.query, request.top_k)
        except Exception as error:
            return _Found(rewrite, _Failed(error))
        return _Found(rewrite, _checked_response(self.web_search, response))

    async def _aserve(self, request: Any) -> Any:
        if isinstance(request, _Both):
            return tuple(await asyncio.gather(self._aserve(request.first), self._aserve(request.second)))
        if isinstance(request, _Score):
            try:
                return await request.evaluator.aevaluate(request.query, request.texts)
            except EvaluatorConfigurationError:
                raise
            except Exception as error:
                return _Failed(error)
        rewrite = await self.rewriter.arewrite(request.question)
        try:
            response = await self.web_search.asearch(rewrite.query, request.top_k)
        except Exception as error:
            return _Found(rewrite, _Failed(error))
        return _Found(rewrite, _checked_response(self.web_search, response))

    # -- the walk -------------------------------------------------------------------------------------
    def _walk(self, query: str, passages: Sequence[str | Passage]) -> Walk:
        started = time.perf_counter()
        judgment = yield from self._judge_slice(query, passages)
        internal: list[Strip] | None = None
        web: WebOutcome | None = None
        if judgment.action is Action.INCORRECT or (judgment.action is Action.AMBIGUOUS and self.web_search is None):
            web = yield from self._search_walk(judgment.query)
        elif judgment.action is Action.AMBIGUOUS:  # refine the internal passages while the web is searched
            refine = self._refine(judgment.state, judgment.trace, judgment.query, judgment.passages, judgment.kept,
                                  self.refiner, Origin.INTERNAL)
            try:
                first = next(refine)
            except StopIteration as done:  # nothing left to score: every strip was cached
                internal = done.value
                web = yield from self._search_walk(judgment.query)
            else:
                answer, found = yield _Both(first, _Web(judgment.query, self.web_top_k))
                internal = yield from _resume(refine, answer)
                web = self._read_web(judgment.query, found)
        return (yield from self._finish_walk(judgment, web, internal, started))

    def _judge_slice(self, query: str, passages: Sequence[str | Passage], policy: ActionPolicy | None = None
                     ) -> Generator[Any, Any, Judgment]:
        query, items = _query_text(query), _as_passages(passages)
        trace, state = Trace(), _State(self.evaluator, policy or self.policy)
        thresholds = (state.policy.upper, state.policy.lower)
        if not query:
            trace.add(Input(len(items), 0, _describe(state.evaluator)))
            trace.add(Unjudged("empty query"))
            return Judgment(query, items, [], Action.UNJUDGED, thresholds, [], [], _describe(state.evaluator),
                            trace, state)
        valid, scores, action = yield from self._judge(state, trace, query, items)
        kept = [] if action is Action.INCORRECT else [i for i in valid if scores[i] >= state.policy.lower]
        return Judgment(query, items, scores, action, (state.policy.upper, state.policy.lower), valid, kept,
                        _describe(state.evaluator), trace, state)

    def _finish_slice(self, judgment: Judgment, web: WebOutcome | None) -> Walk:
        if not isinstance(judgment, Judgment):
            raise TypeError(f"finish() takes the Judgment from judge(), got {type(judgment).__name__}")
        if web is not None and not isinstance(web, WebOutcome):
            raise TypeError(f"finish() takes the WebOutcome from search() or None, got {type(web).__name__}")
        trace = Trace()
        trace.extend(judgment.trace)
        state = judgment.state if isinstance(judgment.state, _State) else _State(self.evaluator, self.policy)
        own = replace(judgment, trace=trace, state=state)
        return (yield from self._finish_walk(own, web, None, time.perf_counter()))

    def _finish_walk(self, judgment: Judgment, web: WebOutcome | None, internal: list[Strip] | None,
                     started: float) -> Walk:
        state, trace, query, items, action = (judgment.state, judgment.trace, judgment.query, judgment.passages,
                                              judgment.action)
        if internal is None and action in (Action.CORRECT, Action.AMBIGUOUS):
            internal = yield from self._refine(state, trace, query, items, judgment.kept, self.refiner,
                                               Origin.INTERNAL)
        internal = internal or []
        external: list[Strip] = []
        web_missing: str | None = None
        if action is Action.UNJUDGED:
            web = None
        if web is not None:
            trace.extend(web.trace)
        if action in (Action.INCORRECT, Action.AMBIGUOUS):
            if web is not None and web.passages:
                external = yield from self._refine(state, trace, query, web.passages,
                                                   list(range(len(web.passages))), self.web_refiner, Origin.WEB)
            else:
                web_missing = web.failure if web is not None else (
                    NO_WEB_SEARCH if self.web_search is None else "web search was not run")
                expected = web_missing == NO_WEB_SEARCH
                if action is Action.INCORRECT and self.on_web_failure == "keep":
                    trace.fallback("web_search", web_missing, "kept the internal passages' best strips (flagged)",
                                   expected=expected)
                    internal = yield from self._refine(state, trace, query, items, judgment.scored, self.refiner,
                                                       Origin.INTERNAL, threshold=-1.0)
                elif action is Action.INCORRECT:
                    trace.fallback("web_search", web_missing, "abstained: the internal passages were judged "
                                   "irrelevant and dropped", expected=expected)
                else:
                    trace.fallback("web_search", web_missing, "kept the internal strips that pass the strip "
                                   "threshold; the web half is missing", expected=expected)
                if expected:
                    self._note_no_web()

        knowledge = internal + external
        abstention = None if knowledge else abstention_for(action, web_missing)
        if abstention is not None:
            trace.add(Abstained(abstention.code, abstention.reason))
        trace.add(Finished(action.value, len(knowledge), len(internal), len(external),
                           sum(len(s.text.split()) for s in knowledge), _ms_since(started)))
        return CorrectionResult(query=query, action=action, knowledge=knowledge, scores=judgment.scores,
                                passages=items, thresholds=judgment.thresholds,
                                rewritten_query=web.query if web is not None else None,
                                web_results=list(web.results) if web is not None else [], trace=trace, web=web,
                                abstention=abstention, web_missing=web_missing)

    def _note_no_web(self) -> None:
        """No web search configured is this Corrector's setup, not a fault: said once, at INFO."""
        if self._told_no_web:
            return
        self._told_no_web = True
        kept = ("keeps the internal passages' best strips" if self.on_web_failure == "keep"
                else "abstains (no knowledge, the LLM is not asked)")
        LOG.info("CRAG: no web search configured: a query judged Incorrect %s; Ambiguous keeps its internal "
                 "strips. Pass web_search=... to search the web.", kept)

    def _judge(self, state: _State, trace: Trace, query: str, items: list[Passage]
               ) -> Generator[Any, Any, tuple[list[int], list[float], Action]]:
        """Steps 1-2 of Algorithm 1: score every passage with text, then decide the action."""
        valid = [i for i, p in enumerate(items) if isinstance(p.text, str) and p.text.strip()]
        for i in sorted(set(range(len(items))) - set(valid)):
            trace.add(SkippedPassage(i, items[i].id, "empty or missing text"))
        trace.add(Input(len(items), len(valid), _describe(state.evaluator)))
        scores = [-1.0] * len(items)
        started = time.perf_counter()
        valid_scores = yield from self._score(state, trace, query, [self._scored_text(items[i]) for i in valid])
        for i, s in zip(valid, valid_scores):
            scores[i] = s
        trace.add(Evaluated(list(scores), _ms_since(started)))
        action = state.policy.decide(valid_scores)
        upper, lower = state.policy.upper, state.policy.lower
        trace.add(Decided(action.value, upper, lower, max(valid_scores, default=None)))
        if action is not Action.CORRECT:
            kept = [] if action is Action.INCORRECT else [i for i in valid if scores[i] >= lower]
            trace.add(PassagesFiltered(action.value, kept, [BelowLower(i, items[i].id, scores[i])
                                                            for i in valid if scores[i] < lower]))
        return valid, scores, action

    def _refine_only(self, query: str, passages: Sequence[str | Passage], web: bool, top_k: int | None
                     ) -> Generator[Any, Any, Refinement]:
        query, items = _check_query(query), _as_passages(passages)
        trace, state = Trace(), _State(self.evaluator, self.policy)
        valid = [i for i, p in enumerate(items) if isinstance(p.text, str) and p.text.strip()]
        refiner, origin = (self.web_refiner, Origin.WEB) if web else (self.refiner, Origin.INTERNAL)
        if top_k is not None:
            refiner = StripRefiner(**{**refiner.config(), "top_k": top_k})
        strips = yield from self._refine(state, trace, query, items, valid, refiner, origin)
        return Refinement(strips, trace)

    def _search_walk(self, question: str) -> Generator[Any, Any, WebOutcome | None]:
        if self.web_search is None:
            return None
        found = yield _Web(question, self.web_top_k)
        return self._read_web(question, found)

    def _scored_text(self, passage: Passage) -> str:
        text = passage.text or ""
        return titled(text, passage.title) if self.score_titles else text

    def _score(self, state: _State, trace: Trace, query: str, texts: list[str]) -> Generator[Any, Any, list[float]]:
        """Score texts, each distinct text once per query; on evaluator failure switch to the fallback.

        Texts that differ only in whitespace count as one (every evaluator here tokenizes on whitespace): a
        passage's single strip is its text without the leading space, and need not be scored again."""
        keys = [" ".join(t.split()) for t in texts]
        missing = list({k: t for k, t in zip(keys, texts) if k not in state.cache}.items())
        if missing:
            answer = yield _Score(state.evaluator, query, [text for _, text in missing])
            if not isinstance(answer, _Failed):
                answer = _checked_scores(state.evaluator, answer, len(missing), trace)
            if isinstance(answer, _Failed):
                fallback = self.fallback_evaluator
                if fallback is None or state.evaluator is fallback:
                    raise answer.error
                trace.fallback("evaluate", f"{_describe(state.evaluator)} failed: {type(answer.error).__name__}: "
                               f"{answer.error}", f"scored with {_describe(fallback)} and its thresholds")
                state.evaluator, state.policy = fallback, ActionPolicy.for_evaluator(fallback)
                state.cache.clear()
                return (yield from self._score(state, trace, query, texts))
            for note in answer.notes:
                trace.add(EvaluatorNote(note))
            state.cache.update(zip((key for key, _ in missing), answer.scores))
        return [state.cache[k] for k in keys]

    def _refine(self, state: _State, trace: Trace, query: str, passages: Sequence[Passage], indices: list[int],
                refiner: StripRefiner, origin: Origin, threshold: float | None = None
                ) -> Generator[Any, Any, list[Strip]]:
        started = time.perf_counter()
        for i in indices:
            if len(passages[i].text) > refiner.max_chars:
                trace.add(TruncatedPassage(i, len(passages[i].text), refiner.max_chars))
        pieces = refiner.decompose([(i, passages[i].text) for i in indices])
        titled = [self._scored_text(Passage(p.text, title=passages[p.source_index].title)) for p in pieces]
        piece_scores = yield from self._score(state, trace, query, titled)
        selecting = _with_threshold(refiner, threshold) if threshold is not None else refiner
        strips = selecting.select(pieces, piece_scores, passages, origin)
        trace.add(Refined(origin.value, refiner.mode, len(indices), len(pieces), len(strips),
                          [round(s, 4) for s in piece_scores], _ms_since(started)))
        return strips

    @staticmethod
    def _read_web(question: str, found: _Found) -> WebOutcome:
        failed = found.response if isinstance(found.response, _Failed) else None
        return read_search(question, found.rewrite, None if failed else found.response,
                           failed.error if failed else None)


def read_search(question: str, rewrite: Rewrite, response: WebSearchResponse | None,
                error: BaseException | None = None) -> WebOutcome:
    """A search's answer (or its error) as the Corrector reads it: page paragraphs, else the snippets
    (flagged), else `failure` saying why there is no web knowledge. Web-search components of the
    adapters read answers with this too, so they cannot drift from the core."""
    trace = Trace()
    trace.add(Rewritten(rewrite.query, rewrite.method))
    if rewrite.note:
        trace.fallback("rewrite", rewrite.note, "used offline keyword extraction")
    outcome = WebOutcome(question, rewrite.query, rewrite.method, trace=trace)
    if response is None:
        message = f"{type(error).__name__}: {error}"
        trace.add(Searched(rewrite.query, error=message))
        return replace(outcome, error=message, failure=f"web search failed: {message}")
    trace.add(Searched(rewrite.query, [r.to_dict() for r in response.results],
                       [{"stage": i.stage, "reason": i.reason, "url": i.url} for i in response.issues]))
    passages, used_snippets = response_passages(response)
    if used_snippets:
        trace.fallback("web_pages", "no page yielded text", "used the search snippets")
    failure = "" if passages else (
        "web search returned no results" if not response.results else "web results had no text")
    return replace(outcome, results=list(response.results), issues=list(response.issues), passages=passages,
                   failure=failure, used_snippets=used_snippets)


def _with_threshold(refiner: StripRefiner, threshold: float) -> StripRefiner:
    return StripRefiner(**{**refiner.config(), "threshold": threshold})


def _resume(walk: Generator[Any, Any, Any], answer: Any) -> Generator[Any, Any, Any]:
    """Continue a sub-walk whose first request was already answered."""
    while True:
        try:
            request = walk.send(answer)
        except StopIteration as done:
            return done.value
        answer = yield request


def _checked_scores(evaluator: RetrievalEvaluator, answer: Any, expected: int, trace: Trace
                    ) -> Evaluation | _Failed:
    """An evaluator's output where it enters the walk.

    Wrong shapes and types are the plug-in's bug: a clear error naming it. NaN is a runtime fault (a
    model that overflowed): the evaluator counts as failed, so the fallback evaluator scores, recorded.
    Scores outside [-1, 1] are clipped, and the clipping is recorded as a fallback."""
    name = _describe(evaluator)
    if not isinstance(answer, Evaluation):
        raise TypeError(f"evaluator {name} returned {type(answer).__name__} from evaluate(); expected an Evaluation")
    scores = answer.scores
    if not isinstance(scores, (list, tuple)) or len(scores) != expected:
        got = f"{len(scores)} scores" if isinstance(scores, (list, tuple)) else type(scores).__name__
        raise ValueError(f"evaluator {name} returned {got} for {expected} texts; expected one score per text")
    for i, score in enumerate(scores):
        if isinstance(score, bool) or not isinstance(score, numbers.Real):
            raise TypeError(f"evaluator {name} returned a {type(score).__name__} score at {i}; expected a number")
    nans = sum(1 for score in scores if math.isnan(score))
    if nans:
        return _Failed(ValueError(f"{nans} of {expected} scores were NaN"))
    outside = [float(score) for score in scores if not -1.0 <= score <= 1.0]
    if outside:
        trace.fallback("evaluate", f"{name} returned {len(outside)} score(s) outside [-1, 1] "
                       f"(e.g. {outside[0]:g})", "clipped them to [-1, 1]")
    return Evaluation([clip(score) for score in scores], list(answer.notes))


def _checked_response(provider: WebSearch, response: Any) -> WebSearchResponse:
    """A web provider's answer where it enters the walk: anything but a WebSearchResponse of WebResults
    is the provider's bug, said clearly (a failing search raises instead, and takes the fallback)."""
    name = type(provider).__name__
    if not isinstance(response, WebSearchResponse):
        raise TypeError(f"web search provider {name} returned {type(response).__name__}; "
                        "expected a WebSearchResponse (raise WebSearchError when a search fails)")
    if not isinstance(response.results, list) or not all(isinstance(r, WebResult) for r in response.results):
        raise TypeError(f"web search provider {name} returned results that are not a list of WebResult")
    return response


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def _describe(evaluator: RetrievalEvaluator) -> str:
    try:
        return evaluator.spec
    except NotImplementedError:
        return type(evaluator).__name__


def abstention_for(action: Action, web_missing: str | None) -> Abstention:
    """Why a correction of this action ended with no knowledge (see `Abstention`); `web_missing` says why
    there is no web knowledge, None when the web gave pages but none of their strips passed. The Haystack
    pipeline's `KnowledgeGate` words its abstentions with this too."""
    if action is Action.UNJUDGED:
        return Abstention("empty_query", "the query is empty: nothing was judged")
    web = f"there is no web knowledge ({web_missing})" if web_missing else "no web strip passed the strip threshold"
    if action is Action.INCORRECT:
        return Abstention("incorrect", f"the retrieved passages were judged irrelevant and {web}")
    internal = "no retrieved strip passed the strip threshold"
    return Abstention("no_knowledge", internal if action is Action.CORRECT else f"{internal} and {web}")


def _query_text(query: Any) -> str:
    """The query as judged: stripped; "" (an empty or whitespace query) is judged as UNJUDGED. Anything but
    a string is the caller's bug."""
    if not isinstance(query, str):
        raise TypeError(f"query must be a string, got {type(query).__name__}")
    return query.strip()


def _check_query(query: Any) -> str:
    query = _query_text(query)
    if not query:
        raise ValueError("query must be a non-empty string (got an empty or whitespace-only query)")
    return query


def _as_passages(passages: Any) -> list[Passage]:
    if passages is None or isinstance(passages, (str, bytes)):
        raise TypeError("passages must be a list of strings or Passage objects")
    items = []
    for i, p in enumerate(passages):
        if isinstance(p, Passage):
            for name in ("text", "title", "url"):
                value = getattr(p, name)
                if value is not None and not isinstance(value, str):
                    raise TypeError(f"passages[{i}].{name} is {type(value).__name__}; expected str or None")
            items.append(p if p.id is not None else Passage(p.text, str(i), p.title, p.url, p.score, p.metadata))
        elif isinstance(p, str) or p is None:
            items.append(Passage(p, id=str(i)))
        else:
            raise TypeError(f"passages[{i}] is {type(p).__name__}; expected str or Passage")
    return items


@dataclass(frozen=True)
class _QueryFailed:
    error: BaseException


def _result(future: Any) -> Any:
    try:
        return future.result()
    except Exception as error:  # a provider's bug fails its own query only
        return _QueryFailed(error)


def _web_requests(requests: dict[int, Any]) -> dict[int, _Web]:
    return {i: r.second if isinstance(r, _Both) else r for i, r in requests.items() if not isinstance(r, _Score)}


def _answers(requests: dict[int, Any], scores: dict[int, Any], webs: dict[int, Any]) -> dict[int, Any]:
    """Each walk's answer to its request: a score answer, a web answer, or both."""
    answers = {}
    for i, request in requests.items():
        if isinstance(request, _Score):
            answers[i] = scores[i]
        elif isinstance(request, _Both):
            answers[i] = webs[i] if isinstance(webs[i], _QueryFailed) else (scores[i], webs[i])
        else:
            answers[i] = webs[i]
    return answers


def _advance(items: Sequence[tuple[str, Any]], walks: list[Walk], answers: dict[int, Any],
             results: list[Any]) -> dict[int, Any]:
    """Send each live walk its answer; collect the next requests, the finished results and the failures."""
    requests: dict[int, Any] = {}
    for i, answer in answers.items():
        try:
            if isinstance(answer, _QueryFailed):
                raise answer.error
            requests[i] = walks[i].send(answer)
        except StopIteration as done:
            results[i] = done.value
        except EvaluatorConfigurationError:
            raise
        except Exception as error:
            results[i] = FailedCorrection(str(items[i][0]), f"{type(error).__name__}: {error}", error)
    return requests


def _drive_many(items: Sequence[tuple[str, Any]], walks: list[Walk],
                serve: Any) -> list[CorrectionResult | FailedCorrection]:
    results: list[Any] = [None] * len(items)
    answers: dict[int, Any] = dict.fromkeys(range(len(items)))
    while answers:
        requests = _advance(items, walks, answers, results)
        if not requests:
            break
        answers = serve(requests)
    return results
