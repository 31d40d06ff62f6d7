"""Algorithm 1 of the paper end to end: evaluate, decide, refine and/or search, with a full trace.

The walk is written once, as a generator that yields what it needs (scores, a web search) and receives
the answers. `correct` answers those requests synchronously, `acorrect` asynchronously, running the
internal refinement and the web search of an Ambiguous query concurrently. So both paths share every
decision, and the sync path never touches an event loop (it works inside Jupyter).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from .evaluators.base import Evaluation, RetrievalEvaluator
from .evaluators.lexical import LexicalEvaluator
from .policy import ActionPolicy
from .refine import StripRefiner
from .rewrite import QueryRewriter, Rewrite
from .text import titled
from .types import (
    Action,
    CorrectionResult,
    Origin,
    Passage,
    Refinement,
    Strip,
    Trace,
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


class Corrector:
    """Corrects one query's retrieval: the core every framework adapter calls.

    Every argument is optional. Defaults: `LexicalEvaluator` (offline, no download), its own thresholds,
    `StripRefiner("excerption")` for internal passages, `StripRefiner("selection")` for web paragraphs
    (pages are already split into paragraphs, as in the paper), the offline keyword `QueryRewriter`, and
    no web search: nothing leaves the machine unless you pass a `web_search` provider.

    When web search is missing or fails, Incorrect keeps the internal passages (their best strips,
    flagged in the trace) unless `on_web_failure="drop"`; Ambiguous keeps its internal knowledge.
    When the evaluator raises, `fallback_evaluator` (lexical by default; None to re-raise) scores
    instead, with its own thresholds. Every fallback is recorded in `result.trace.fallbacks`.
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
        on_web_failure: Literal["keep", "drop"] = "keep",
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

    # -- drivers --------------------------------------------------------------------------------------
    def correct(self, query: str, passages: Sequence[str | Passage]) -> CorrectionResult:
        """Run CRAG on one query and its retrieved passages (strings or `Passage`s)."""
        return self._drive(self._walk(query, passages))

    async def acorrect(self, query: str, passages: Sequence[str | Passage]) -> CorrectionResult:
        """Async `correct`: model inference runs off the loop; Ambiguous refines while it searches."""
        return await self._adrive(self._walk(query, passages))

    def judge(self, query: str, passages: Sequence[str | Passage]) -> CorrectionResult:
        """Only score the passages and decide the action (no refinement, no web): `knowledge` is empty."""
        return self._drive(self._judge_only(query, passages))

    async def ajudge(self, query: str, passages: Sequence[str | Passage]) -> CorrectionResult:
        return await self._adrive(self._judge_only(query, passages))

    def refine(self, query: str, passages: Sequence[str | Passage], *, web: bool = False) -> Refinement:
        """Only refine: decompose, filter and recompose `passages` (web paragraphs if `web=True`)."""
        return self._drive(self._refine_only(query, passages, web))

    async def arefine(self, query: str, passages: Sequence[str | Passage], *, web: bool = False) -> Refinement:
        return await self._adrive(self._refine_only(query, passages, web))

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
            except Exception as error:
                return _Failed(error)
        rewrite = self.rewriter.rewrite(request.question)
        try:
            return _Found(rewrite, self.web_search.search(rewrite.query, request.top_k))
        except Exception as error:
            return _Found(rewrite, _Failed(error))

    async def _aserve(self, request: Any) -> Any:
        if isinstance(request, _Both):
            return tuple(await asyncio.gather(self._aserve(request.first), self._aserve(request.second)))
        if isinstance(request, _Score):
            try:
                return await request.evaluator.aevaluate(request.query, request.texts)
            except Exception as error:
                return _Failed(error)
        rewrite = await self.rewriter.arewrite(request.question)
        try:
            return _Found(rewrite, await self.web_search.asearch(rewrite.query, request.top_k))
        except Exception as error:
            return _Found(rewrite, _Failed(error))

    # -- the walk -------------------------------------------------------------------------------------
    def _walk(self, query: str, passages: Sequence[str | Passage]) -> Walk:
        started = time.perf_counter()
        query, items = _check_query(query), _as_passages(passages)
        trace, state = Trace(), _State(self.evaluator, self.policy)
        valid, scores, action = yield from self._judge(state, trace, query, items)
        upper, lower = state.policy.upper, state.policy.lower
        kept = [i for i in valid if scores[i] >= lower]

        internal: list[Strip] = []
        external: list[Strip] = []
        found: _Found | None = None
        if action is Action.CORRECT:
            internal = yield from self._refine(state, trace, query, items, kept, self.refiner, Origin.INTERNAL)
        elif action is Action.INCORRECT:
            found = yield from self._search(query)
        elif self.web_search is None:
            internal = yield from self._refine(state, trace, query, items, kept, self.refiner, Origin.INTERNAL)
        else:  # refine the internal passages while the web is searched
            refine = self._refine(state, trace, query, items, kept, self.refiner, Origin.INTERNAL)
            try:
                first = next(refine)
            except StopIteration as done:  # nothing left to score: every strip was cached
                internal = done.value
                found = yield from self._search(query)
            else:
                answer, found = yield _Both(first, _Web(query, self.web_top_k))
                internal = yield from _resume(refine, answer)

        web_results: list[WebResult] = []
        rewritten = None
        if action is not Action.CORRECT:
            rewritten, web_results, web_passages, failure = self._read_web(trace, found, action)
            if web_passages:
                external = yield from self._refine(state, trace, query, web_passages,
                                                   list(range(len(web_passages))), self.web_refiner, Origin.WEB)
            elif action is Action.INCORRECT and self.on_web_failure == "keep":
                trace.fallback("web_search", failure, "kept the internal passages' best strips (flagged)")
                internal = yield from self._refine(state, trace, query, items, valid, self.refiner,
                                                   Origin.INTERNAL, threshold=-1.0)
            elif action is Action.INCORRECT:
                trace.fallback("web_search", failure, "dropped the internal passages (on_web_failure='drop')")
            else:
                trace.fallback("web_search", failure, "kept the internal knowledge only")

        knowledge = internal + external
        trace.add("result", action=action.value, strips=len(knowledge), internal=len(internal),
                  external=len(external), words=sum(len(s.text.split()) for s in knowledge),
                  total_ms=round((time.perf_counter() - started) * 1000, 3))
        return CorrectionResult(query=query, action=action, knowledge=knowledge, scores=scores, passages=items,
                                thresholds=(upper, lower), rewritten_query=rewritten, web_results=web_results,
                                trace=trace)

    def _judge(self, state: _State, trace: Trace, query: str, items: list[Passage]
               ) -> Generator[Any, Any, tuple[list[int], list[float], Action]]:
        """Steps 1-2 of Algorithm 1: score every passage with text, then decide the action."""
        valid = [i for i, p in enumerate(items) if isinstance(p.text, str) and p.text.strip()]
        for i in sorted(set(range(len(items))) - set(valid)):
            trace.add("skip_passage", index=i, id=items[i].id, reason="empty or missing text")
        trace.add("input", passages=len(items), scored=len(valid), evaluator=_describe(state.evaluator))
        scores = [-1.0] * len(items)
        with trace.timed("evaluate") as entry:
            valid_scores = yield from self._score(state, trace, query, [self._scored_text(items[i]) for i in valid])
            for i, s in zip(valid, valid_scores):
                scores[i] = s
            entry["scores"] = list(scores)
        action = state.policy.decide(valid_scores)
        upper, lower = state.policy.upper, state.policy.lower
        trace.add("decide", action=action.value, upper=upper, lower=lower, max_score=max(valid_scores, default=None))
        if action is not Action.CORRECT:
            kept = [] if action is Action.INCORRECT else [i for i in valid if scores[i] >= lower]
            trace.add("drop_passages" if action is Action.INCORRECT else "keep_passages", kept=kept,
                      below_lower=[{"index": i, "id": items[i].id, "score": scores[i]}
                                   for i in valid if scores[i] < lower])
        return valid, scores, action

    def _judge_only(self, query: str, passages: Sequence[str | Passage]) -> Walk:
        query, items = _check_query(query), _as_passages(passages)
        trace, state = Trace(), _State(self.evaluator, self.policy)
        _, scores, action = yield from self._judge(state, trace, query, items)
        return CorrectionResult(query=query, action=action, knowledge=[], scores=scores, passages=items,
                                thresholds=(state.policy.upper, state.policy.lower), trace=trace)

    def _refine_only(self, query: str, passages: Sequence[str | Passage], web: bool
                     ) -> Generator[Any, Any, Refinement]:
        query, items = _check_query(query), _as_passages(passages)
        trace, state = Trace(), _State(self.evaluator, self.policy)
        valid = [i for i, p in enumerate(items) if isinstance(p.text, str) and p.text.strip()]
        refiner, origin = (self.web_refiner, Origin.WEB) if web else (self.refiner, Origin.INTERNAL)
        strips = yield from self._refine(state, trace, query, items, valid, refiner, origin)
        return Refinement(strips, trace)

    def _search(self, query: str) -> Generator[Any, Any, _Found | None]:
        if self.web_search is None:
            return None
        return (yield _Web(query, self.web_top_k))

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
            if isinstance(answer, _Failed):
                fallback = self.fallback_evaluator
                if fallback is None or state.evaluator is fallback:
                    raise answer.error
                trace.fallback("evaluate", f"{_describe(state.evaluator)} failed: {type(answer.error).__name__}: "
                               f"{answer.error}", f"scored with {_describe(fallback)} and its thresholds")
                state.evaluator, state.policy = fallback, ActionPolicy.for_evaluator(fallback)
                state.cache.clear()
                return (yield from self._score(state, trace, query, texts))
            evaluation: Evaluation = answer
            for note in evaluation.notes:
                trace.add("evaluator_note", note=note)
            state.cache.update(zip((key for key, _ in missing), evaluation.scores))
        return [state.cache[k] for k in keys]

    def _refine(self, state: _State, trace: Trace, query: str, passages: Sequence[Passage], indices: list[int],
                refiner: StripRefiner, origin: Origin, threshold: float | None = None
                ) -> Generator[Any, Any, list[Strip]]:
        with trace.timed(f"refine_{origin.value}", mode=refiner.mode, passages=len(indices)) as entry:
            for i in indices:
                if len(passages[i].text) > refiner.max_chars:
                    trace.add("truncate_passage", index=i, chars=len(passages[i].text), kept=refiner.max_chars)
            pieces = refiner.decompose([(i, passages[i].text) for i in indices])
            titled = [self._scored_text(Passage(p.text, title=passages[p.source_index].title)) for p in pieces]
            piece_scores = yield from self._score(state, trace, query, titled)
            if threshold is not None:
                refiner = _with_threshold(refiner, threshold)
            strips = refiner.select(pieces, piece_scores, passages, origin)
            entry.update(pieces=len(pieces), kept=len(strips), strip_scores=[round(s, 4) for s in piece_scores])
        return strips

    @staticmethod
    def _read_web(trace: Trace, found: _Found | None, action: Action
                  ) -> tuple[str | None, list[WebResult], list[Passage], str]:
        """Turn the search answer into passages (page paragraphs, else snippets) or a failure reason."""
        if found is None:
            return None, [], [], "no web search configured"
        trace.add("rewrite", query=found.rewrite.query, method=found.rewrite.method)
        if found.rewrite.note:
            trace.fallback("rewrite", found.rewrite.note, "used offline keyword extraction")
        if isinstance(found.response, _Failed):
            error = found.response.error
            trace.add("web_search", query=found.rewrite.query, error=f"{type(error).__name__}: {error}")
            return found.rewrite.query, [], [], f"web search failed: {type(error).__name__}: {error}"
        response = found.response
        trace.add("web_search", query=found.rewrite.query, results=[r.to_dict() for r in response.results],
                  issues=[{"stage": i.stage, "reason": i.reason, "url": i.url} for i in response.issues])
        passages, used_snippets = response_passages(response)
        if used_snippets:
            trace.fallback("web_pages", "no page yielded text", "used the search snippets")
        if not passages:
            reason = "web search returned no results" if not response.results else "web results had no text"
            return found.rewrite.query, list(response.results), [], reason
        return found.rewrite.query, list(response.results), passages, ""


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


def _describe(evaluator: RetrievalEvaluator) -> str:
    try:
        return evaluator.spec
    except NotImplementedError:
        return type(evaluator).__name__


def _check_query(query: Any) -> str:
    if not isinstance(query, str):
        raise TypeError(f"query must be a string, got {type(query).__name__}")
    if not query.strip():
        raise ValueError("query must be a non-empty string (got an empty or whitespace-only query)")
    return query.strip()


def _as_passages(passages: Any) -> list[Passage]:
    if passages is None or isinstance(passages, (str, bytes)):
        raise TypeError("passages must be a list of strings or Passage objects")
    items = []
    for i, p in enumerate(passages):
        if isinstance(p, Passage):
            items.append(p if p.id is not None else Passage(p.text, str(i), p.title, p.url, p.score, p.metadata))
        elif isinstance(p, str) or p is None:
            items.append(Passage(p, id=str(i)))
        else:
            raise TypeError(f"passages[{i}] is {type(p).__name__}; expected str or Passage")
    return items
