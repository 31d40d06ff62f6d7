"""Algorithm 1 of the paper, written once as generators: evaluate, decide, refine and/or search, with a trace.

Each walk yields what it needs (see `protocol.py`) and is sent the answers; `Corrector` drives it sync,
async or many at a time. `Walks` holds the walks over a Corrector's settings (evaluator, policy,
refiners, rewriter, web search, fallbacks), so every driver shares every decision.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import cast

from ..evaluators.base import RetrievalEvaluator
from ..evaluators.spec import describe
from ..policy import ABOVE_EVERY_SCORE, ActionPolicy, AmbiguousRule, ambiguous_rule, below_floor
from ..refine import StripRefiner
from ..rewrite import QueryRewriter
from ..text.detection import resolve
from ..text.follow_up import follow_up_pronoun, has_follow_up_table
from ..text.words import titled
from ..trace import (
    Abstained,
    BelowLower,
    Decided,
    Evaluated,
    EvaluatorNote,
    Finished,
    Input,
    PassagesFiltered,
    Refined,
    SkippedPassage,
    TruncatedPassage,
    Unjudged,
    log,
)
from ..types import (
    Action,
    CorrectionResult,
    Judgment,
    Origin,
    Passage,
    Refinement,
    Strip,
    Trace,
    WebOutcome,
)
from ..web.base import WebSearch
from .checks import as_passages, check_query, checked_scores, query_text
from .outcome import read_search
from .protocol import (
    Answer,
    BothRequest,
    Failed,
    ScoreAnswer,
    ScoreRequest,
    ScoringState,
    Step,
    T,
    Walk,
    WebAnswer,
    WebRequest,
)
from .verdicts import (
    abstention_for,
    accepted_by_llm,
    closest_passage,
    decided_by,
    seed_verdicts,
    within_verdicts,
)

__all__ = ["NO_WEB_SEARCH", "Walks", "resume"]

NO_WEB_SEARCH = "no web search configured"


def language_of(evaluator: object, query: str) -> str | None:
    """The language an evaluator analyzes `query` in, if it analyzes text ("auto" resolved)."""
    code = getattr(evaluator, "language", None)
    return resolve(code, query) if isinstance(code, str) else None


class Walks:
    """The walks of Algorithm 1 over a Corrector's settings; `Corrector` adds the drivers and the API."""

    evaluator: RetrievalEvaluator
    policy: ActionPolicy
    refiner: StripRefiner
    web_refiner: StripRefiner
    rewriter: QueryRewriter
    web_search: WebSearch | None
    web_top_k: int
    on_web_failure: str
    ambiguous: str
    fallback_evaluator: RetrievalEvaluator | None
    score_titles: bool
    language: str
    _told_no_web: bool

    def question_language(self, query: str) -> str:
        """The language the follow-up rule reads `query` in: the Corrector's `language`, "auto" detected and
        the default "en" switched by a Chinese or Japanese script, as the lexical evaluator does."""
        return resolve(self.language, query, tell=False)

    def _walk(self, query: str, passages: Sequence[str | Passage]) -> Walk:
        started = time.perf_counter()
        judgment = yield from self._judge_slice(query, passages)
        internal: list[Strip] | None = None
        web: WebOutcome | None = None
        if judgment.action is Action.INCORRECT or (judgment.action is Action.AMBIGUOUS and self.web_search is None):
            web = yield from self._search_walk(judgment.query)
        elif judgment.action is Action.AMBIGUOUS:  # refine the internal passages while the web is searched
            refine = self._refine(_state(judgment), judgment.trace, judgment.query, judgment.passages,
                                  judgment.kept, self.refiner, Origin.INTERNAL)
            try:
                first = next(refine)
            except StopIteration as done:  # nothing left to score: every strip was cached
                internal = done.value
                web = yield from self._search_walk(judgment.query)
            else:
                # a refinement asks only for scores; a request's answer has the request's kind
                both = yield BothRequest(cast(ScoreRequest, first), WebRequest(judgment.query, self.web_top_k))
                answer, found = cast("tuple[ScoreAnswer, WebAnswer]", both)
                internal = yield from resume(refine, answer)
                web = self._read_web(judgment.query, found)
        return (yield from self._finish_walk(judgment, web, internal, started))

    def _judge_slice(self, query: str, passages: Sequence[str | Passage], policy: ActionPolicy | None = None
                     ) -> Step[Judgment]:
        query, items = query_text(query), as_passages(passages)
        trace, state = Trace(), ScoringState(self.evaluator, policy or self.policy)
        thresholds = (state.policy.upper, state.policy.lower)
        if not query:
            trace.add(Input(len(items), 0, describe(state.evaluator)))
            trace.add(Unjudged("empty query"))
            return Judgment(query, items, [], Action.UNJUDGED, thresholds, [], [], describe(state.evaluator),
                            trace, state)
        valid, scores, action = yield from self._judge(state, trace, query, items)
        kept = [] if action is Action.INCORRECT else [i for i in valid if scores[i] >= state.policy.lower]
        return Judgment(query, items, scores, action, (state.policy.upper, state.policy.lower), valid, kept,
                        describe(state.evaluator), trace, state)

    def _finish_slice(self, judgment: Judgment, web: WebOutcome | None) -> Walk:
        if not isinstance(judgment, Judgment):
            raise TypeError(f"finish() takes the Judgment from judge(), got {type(judgment).__name__}")
        if web is not None and not isinstance(web, WebOutcome):
            raise TypeError(f"finish() takes the WebOutcome from search() or None, got {type(web).__name__}")
        trace = Trace()
        trace.extend(judgment.trace)
        state = (judgment.state if isinstance(judgment.state, ScoringState)
                 else ScoringState(self.evaluator, self.policy))
        own = replace(judgment, trace=trace, state=state)
        return (yield from self._finish_walk(own, web, None, time.perf_counter()))

    def _finish_walk(self, judgment: Judgment, web: WebOutcome | None, internal: list[Strip] | None,
                     started: float) -> Walk:
        state, trace, query, items, action = (_state(judgment), judgment.trace, judgment.query, judgment.passages,
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
        rule = (ambiguous_rule(query, state.policy.upper, self.on_web_failure, self.ambiguous,
                               self.question_language(query)) if action is Action.AMBIGUOUS else None)
        if action in (Action.INCORRECT, Action.AMBIGUOUS):
            if web is not None and web.passages:
                external = yield from self._refine(state, trace, query, web.passages,
                                                   list(range(len(web.passages))), self.web_refiner, Origin.WEB)
            else:
                web_missing = web.failure if web is not None else (
                    NO_WEB_SEARCH if self.web_search is None else "web search was not run")
                keep = action is Action.INCORRECT and self.on_web_failure == "keep"
                applied = ("kept the internal passages' best strips (flagged)" if keep
                           else rule.without_web() if rule is not None
                           else "abstained: the internal passages were judged irrelevant and dropped")
                trace.fallback("web_search", web_missing, applied, expected=web_missing == NO_WEB_SEARCH)
                if web_missing == NO_WEB_SEARCH:
                    self._note_no_web()
                if keep:
                    internal = yield from self._refine(state, trace, query, items, judgment.scored, self.refiner,
                                                       Origin.INTERNAL, threshold=-1.0)
        if rule is not None:
            internal = rule.apply(internal, bool(external), trace)

        knowledge = internal + external
        floor = rule.floor if rule is not None and rule.below == "drop" else None
        abstention = None if knowledge else abstention_for(action, web_missing, floor,
                                                           closest_passage(items, judgment.scores, judgment.reasons))
        if abstention is not None:
            trace.add(Abstained(abstention.code, abstention.reason))
        trace.add(Finished(action.value, len(knowledge), len(internal), len(external),
                           sum(len(s.text.split()) for s in knowledge), ms_since(started)))
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
        ambiguous = AmbiguousRule(ABOVE_EVERY_SCORE, below_floor(self.on_web_failure, self.ambiguous)).without_web()
        log(logging.INFO, "CRAG: no web search configured: a query judged Incorrect {kept}; Ambiguous: {ambiguous}. "
                          "Pass web_search=... to search the web.", kept=kept, ambiguous=ambiguous)

    def _judge(self, state: ScoringState, trace: Trace, query: str, items: list[Passage]
               ) -> Step[tuple[list[int], list[float], Action]]:
        """Steps 1-2 of Algorithm 1: score every passage with text, then decide the action."""
        valid = [i for i, p in enumerate(items) if isinstance(p.text, str) and p.text.strip()]
        for i in sorted(set(range(len(items))) - set(valid)):
            trace.add(SkippedPassage(i, items[i].id, "empty or missing text"))
        trace.add(Input(len(items), len(valid), describe(state.evaluator), language_of(state.evaluator, query)))
        scores = [-1.0] * len(items)
        started = time.perf_counter()
        valid_scores = yield from self._score(state, trace, query,
                                                  [self._scored_text(items[i], state.evaluator) for i in valid])
        for i, s in zip(valid, valid_scores):
            scores[i] = s
        scored = set(valid)  # a set: a membership test on the list would make this quadratic in the passages
        keys = [" ".join(self._scored_text(p, state.evaluator).split()) if i in scored else ""
                for i, p in enumerate(items)]
        reasons = [state.reasons.get(k, "") if k else "" for k in keys]
        judges = [state.judges.get(k, "") if k else "" for k in keys]
        trace.add(Evaluated(list(scores), ms_since(started), reasons if any(reasons) else [],
                            judges if any(judges) else [], state.llm_calls))
        action = state.policy.decide(valid_scores)
        upper, lower = state.policy.upper, state.policy.lower
        why, follow_up = "", None
        if action is Action.CORRECT:  # a chat follow-up on its own: the passages cannot be judged against it
            language = self.question_language(query)
            follow_up = language if has_follow_up_table(language) else ""
            pronoun = follow_up_pronoun(query, language)
            if pronoun is not None:
                action = Action.AMBIGUOUS
                why = (f"the question names no one but '{pronoun}': judged at most Ambiguous (give CRAG the "
                       "standalone question, e.g. a chat engine's condensed question)")
        trace.add(Decided(action.value, upper, lower, max(valid_scores, default=None), why, follow_up,
                          decided_by(describe(state.evaluator), [j for j in judges if j], state.llm_calls)))
        if action is not Action.CORRECT:
            kept = [] if action is Action.INCORRECT else [i for i in valid if scores[i] >= lower]
            trace.add(PassagesFiltered(action.value, kept, [BelowLower(i, items[i].id, scores[i])
                                                            for i in valid if scores[i] < lower]))
        return valid, scores, action

    def _refine_only(self, query: str, passages: Sequence[str | Passage], web: bool, top_k: int | None,
                     judged: Sequence[tuple[float, str] | None] | None = None) -> Step[Refinement]:
        query, items = check_query(query), as_passages(passages)
        trace, state = Trace(), ScoringState(self.evaluator, self.policy)
        seed_verdicts(state, [" ".join(self._scored_text(p, state.evaluator).split()) for p in items], judged or ())
        valid = [i for i, p in enumerate(items) if isinstance(p.text, str) and p.text.strip()]
        refiner, origin = (self.web_refiner, Origin.WEB) if web else (self.refiner, Origin.INTERNAL)
        if top_k is not None:
            refiner = StripRefiner(**{**refiner.config(), "top_k": top_k})
        strips = yield from self._refine(state, trace, query, items, valid, refiner, origin)
        return Refinement(strips, trace)

    def _search_walk(self, question: str) -> Step[WebOutcome | None]:
        if self.web_search is None:
            return None
        found = yield WebRequest(question, self.web_top_k)
        return self._read_web(question, cast(WebAnswer, found))

    def _scored_text(self, passage: Passage, evaluator: RetrievalEvaluator) -> str:
        text = passage.text or ""
        return titled(text, passage.title) if self.score_titles or evaluator.reads_titles else text

    def _score(self, state: ScoringState, trace: Trace, query: str, texts: list[str], *, strips: bool = False
               ) -> Step[list[float]]:
        """Score texts, each distinct text once per query; on evaluator failure switch to the fallback. Strips
        go to the state's strip evaluator (`RetrievalEvaluator.strip_evaluator`).

        Texts that differ only in whitespace count as one (every evaluator here tokenizes on whitespace): a
        passage's single strip is its text without the leading space, and need not be scored again."""
        evaluator, cache = state.scorer(strips)
        keys = [" ".join(t.split()) for t in texts]
        missing = list({k: t for k, t in zip(keys, texts) if k not in cache}.items())
        if missing:
            answer = yield ScoreRequest(evaluator, query, [text for _, text in missing])
            if not isinstance(answer, Failed):
                answer = checked_scores(evaluator, answer, len(missing), trace)
            if isinstance(answer, Failed):
                fallback = self.fallback_evaluator
                if fallback is None or evaluator is fallback:
                    raise answer.error
                trace.fallback("evaluate", f"{describe(evaluator)} failed: {type(answer.error).__name__}: "
                               f"{answer.error}", f"scored with {describe(fallback)} and its thresholds")
                if evaluator is state.evaluator:
                    state.evaluator, state.policy = fallback, ActionPolicy.for_evaluator(fallback)
                    state.cache.clear()
                    state.reasons.clear()
                    state.judges.clear()
                state.strip_evaluator = fallback
                state.strip_cache.clear()
                return (yield from self._score(state, trace, query, texts, strips=strips))
            for note in answer.notes:
                trace.add(EvaluatorNote(note))
            for fault in answer.faults:
                trace.fallback("evaluate", fault.reason, fault.applied)
            state.llm_calls += answer.llm_calls
            cache.update(zip((key for key, _ in missing), answer.scores))
            if not strips or cache is state.cache:
                state.reasons.update((key, reason) for (key, _), reason in zip(missing, answer.reasons) if reason)
                state.judges.update((key, judge) for (key, _), judge in zip(missing, answer.judges))
        return [cache[k] for k in keys]

    def _refine(self, state: ScoringState, trace: Trace, query: str, passages: Sequence[Passage], indices: list[int],
                refiner: StripRefiner, origin: Origin, threshold: float | None = None
                ) -> Step[list[Strip]]:
        started = time.perf_counter()
        for i in indices:
            if len(passages[i].text or "") > refiner.max_chars:
                trace.add(TruncatedPassage(i, len(passages[i].text or ""), refiner.max_chars))
        pieces = refiner.decompose([(i, passages[i].text or "") for i in indices])
        reader = state.scorer(True)[0]
        titled = [self._scored_text(Passage(p.text, title=passages[p.source_index].title), reader) for p in pieces]
        piece_scores = yield from self._score(state, trace, query, titled, strips=True)
        selecting = refiner if threshold is None else StripRefiner(**{**refiner.config(), "threshold": threshold})
        if origin is Origin.INTERNAL and state.judges:
            keys = {i: " ".join(self._scored_text(passages[i], state.evaluator).split()) for i in indices}
            piece_scores = within_verdicts(pieces, piece_scores, accepted_by_llm(state, keys),
                                           max(state.policy.upper, selecting.threshold))
        strips = selecting.select(pieces, piece_scores, passages, origin)
        trace.add(Refined(origin.value, refiner.mode, len(indices), len(pieces), len(strips),
                          [round(s, 4) for s in piece_scores], ms_since(started)))
        return strips

    @staticmethod
    def _read_web(question: str, found: WebAnswer) -> WebOutcome:
        if isinstance(found.response, Failed):
            return read_search(question, found.rewrite, None, found.response.error)
        return read_search(question, found.rewrite, found.response)



def resume(walk: Step[T], answer: Answer) -> Step[T]:
    """Continue a sub-walk whose first request was already answered."""
    while True:
        try:
            request = walk.send(answer)
        except StopIteration as done:
            return done.value
        answer = yield request


def _state(judgment: Judgment) -> ScoringState:
    """The scoring state a judgment carries (set by the judge slice: scorer in use and its cache)."""
    if not isinstance(judgment.state, ScoringState):
        raise TypeError("this Judgment carries no scoring state: take it from Corrector.judge()")
    return judgment.state


def ms_since(started: float) -> float:
    """Milliseconds since `started` (a `time.perf_counter()` value), rounded for traces."""
    return round((time.perf_counter() - started) * 1000, 3)
