"""Your LLM as the retrieval evaluator: one call per query, the offline judge as its partner and fallback.

The LLM reads every passage of a query in one prompt (the sufficiency prompt by default: does the document state
the answer to the question as asked?) and answers yes or no per document: yes scores +1, no -1. An offline
judge (`offline`, crag's default) works beside it, at no LLM cost:

- its scores stand in for any verdict the LLM did not give: the LLM raised, timed out, answered out of format,
  or skipped some documents. Each such fault is a fallback in the trace and a warning in the log, never a
  "yes" and never silent;
- when it rules every passage out far below its lower threshold (`skip_below`), the LLM is not asked: off-topic
  retrieval costs nothing;
- it scores the strips (`strip_evaluator`): the strips of a passage the LLM accepted keep that acceptance and
  are ranked by the offline judge within it, so strips never go back to the LLM.

The thresholds are the offline judge's, so the LLM's ±1 and the offline scores mean the same on one scale.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from ..llm import LLM, check_llm
from ..specs import Kind
from .base import LLM_JUDGE, Evaluation, Fault, RetrievalEvaluator
from .default import default_evaluator
from .judge_prompt import (
    PROMPTS,
    Mode,
    check_judge_prompt,
    judge_prompts,
    parse_numbered,
    parse_verdict,
)
from .spec import EVALUATOR_SPECS, describe, evaluator_from_spec

__all__ = ["LLMEvaluator"]

#: Characters of a passage the LLM reads (the rest is cut, noted in the trace).
MAX_DOCUMENT_CHARS = 3_000
#: How far above its floor the offline judge may score every passage and still skip the call ("the offline
#: judge finds nothing of the question in any passage"): chosen on the judge sets' and PopQA's tune halves, where
#: it costs at most one answer per set (`crag-bench llm-skip` prints the trade).
SKIP_ABOVE_FLOOR = 0.02
_POOL = ThreadPoolExecutor(max_workers=32, thread_name_prefix="crag-llm-judge")


class LLMEvaluator(RetrievalEvaluator):
    """Asks an LLM whether each passage states the answer to the question, one call per query.

    `prompt`: "sufficiency" (default; this subject, this condition, this time), "paper" (the paper's
    "exact information to answer the question", Table 6), or your own template (`{question}` and `{documents}`;
    `{document}` with `mode="per_document"`). `mode="per_document"` asks once per passage instead (as
    LangGraph's CRAG grades), concurrently in async code. `offline`: the judge that stands in for missing
    verdicts, skips the call for off-topic retrieval and scores strips (a spec or an evaluator; "default").
    `timeout` (seconds, None for none) bounds each call; `max_document_chars` cuts long passages;
    `skip_below` is the offline score under which every passage must fall for the LLM not to be asked: "floor"
    (default: just above the lowest score the offline judge gives, i.e. it finds nothing of the question in any
    passage), a number, or None (always ask). `thresholds` default to the offline judge's.
    """

    default_thresholds = (0.5, -0.5)
    reads_titles = True

    def __init__(self, llm: LLM, *, mode: Mode = "batched", prompt: str = "sufficiency",
                 offline: RetrievalEvaluator | str = "default", timeout: float | None = 60.0,
                 max_document_chars: int = MAX_DOCUMENT_CHARS, skip_below: float | str | None = "floor",
                 thresholds: tuple[float, float] | None = None) -> None:
        if mode not in ("batched", "per_document"):
            raise ValueError(f"mode must be 'batched' or 'per_document', got {mode!r}")
        if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
            raise ValueError(f"timeout must be a positive number of seconds or None, got {timeout!r}")
        if not isinstance(max_document_chars, int) or max_document_chars < 200:
            raise ValueError(f"max_document_chars must be an integer of at least 200, got {max_document_chars!r}")
        if skip_below != "floor" and skip_below is not None and not (
                isinstance(skip_below, (int, float)) and -1.0 <= skip_below <= 1.0):
            raise ValueError(f"skip_below must be 'floor', a number in [-1, 1] or None, got {skip_below!r}")
        self.llm = check_llm(llm)
        self.mode = mode
        self.prompt = prompt  # a preset's name or a template, checked by the setter
        self.offline = _offline_judge(offline)
        self._offline = offline if isinstance(offline, str) else describe(self.offline)
        self.timeout = timeout
        self.max_document_chars = max_document_chars
        self.skip_below = skip_below
        if thresholds is not None:
            upper, lower = thresholds
            if not (-1.0 <= lower <= upper <= 1.0):
                raise ValueError(f"thresholds must be (upper, lower) in [-1, 1] with upper >= lower, "
                                 f"got {thresholds!r}")
            self._thresholds = (float(upper), float(lower))

    @property
    def thresholds(self) -> tuple[float, float]:
        """Those given, else the offline judge's: the LLM's ±1 and the offline scores share one scale."""
        own = getattr(self, "_thresholds", None)
        return (own[0], own[1]) if own is not None else self.offline.thresholds

    @property
    def prompt(self) -> str:
        """The judge prompt template in use."""
        return self._template

    @prompt.setter
    def prompt(self, value: str) -> None:
        """Set the prompt: a preset's name ("sufficiency", "paper") or a template with the mode's placeholders."""
        if not isinstance(value, str):
            raise TypeError(f"prompt must be 'sufficiency', 'paper' or a template string, got {type(value).__name__}")
        preset = PROMPTS.get((value, self.mode))
        self._template = preset if preset is not None else check_judge_prompt(value, self.mode)
        self._prompt = value

    @property
    def strip_evaluator(self) -> RetrievalEvaluator:
        """Strips are scored offline, within the verdicts the LLM gave their passages."""
        return self.offline

    def warm_up(self) -> None:
        """Load the offline judge's model."""
        self.offline.warm_up()

    def _prompts(self, query: str, texts: Sequence[str]) -> list[str]:
        return judge_prompts(self._template, self.mode, query, [t[: self.max_document_chars] for t in texts])

    @property
    def skip_score(self) -> float | None:
        """The offline score under which every passage must fall for the LLM not to be asked (None: always ask);
        "floor" is the offline judge's floor plus `SKIP_ABOVE_FLOOR`."""
        if self.skip_below == "floor":
            return self.offline.floor + SKIP_ABOVE_FLOOR
        return None if self.skip_below is None else float(self.skip_below)

    def _skipped(self, offline: Evaluation) -> Evaluation | None:
        """The offline judge's evaluation when it rules every passage out far below its lower threshold."""
        below = self.skip_score
        if below is None or any(s >= below for s in offline.scores):
            return None
        note = f"the LLM was not asked: every passage scored below {below:+.2f} by {describe(self.offline)}"
        return Evaluation(offline.scores, [*offline.notes, note], offline.reasons,
                          judges=[describe(self.offline)] * len(offline.scores))

    def _read(self, replies: list[str], texts: Sequence[str], offline: Evaluation) -> Evaluation:
        count = len(texts)
        if self.mode == "per_document":
            verdicts = [parse_verdict(r) for r in replies]
        else:
            verdicts = parse_numbered(replies[0], count)
        missing = [i for i, v in enumerate(verdicts) if v is None]
        judge = describe(self.offline)
        faults = []
        if missing:
            which = "any document" if len(missing) == count else "document" + (
                "s " if len(missing) > 1 else " ") + ", ".join(str(i + 1) for i in missing)
            shown = " | ".join(r.replace("\n", " ")[:80] for r in replies)
            faults.append(Fault(f"the LLM judge gave no yes/no verdict for {which} (reply began: {shown!r})",
                                f"scored {len(missing)} of {count} with {judge}"))
        notes = [f"{len(cut)} passage(s) cut to {self.max_document_chars} characters for the LLM"
                 for cut in [[t for t in texts if len(t) > self.max_document_chars]] if cut]
        scores = [offline.scores[i] if v is None else v for i, v in enumerate(verdicts)]
        reasons = [offline.reasons[i] if v is None and offline.reasons else "" for i, v in enumerate(verdicts)]
        if any(v is not None and v < 0 for v in verdicts):
            reasons = [r or ("the LLM judged that it does not state the answer" if v is not None and v < 0 else "")
                       for r, v in zip(reasons, verdicts)]
        judges = [judge if v is None else LLM_JUDGE for v in verdicts]
        return Evaluation(scores, notes, reasons if any(reasons) else [], judges=judges, faults=faults,
                          llm_calls=len(replies))

    def _failed(self, error: BaseException, offline: Evaluation, calls: int) -> Evaluation:
        reason = (f"the LLM judge timed out after {self.timeout:g} s" if isinstance(error, TimeoutError)
                  else f"the LLM judge failed: {type(error).__name__}: {error}")
        judge = describe(self.offline)
        return Evaluation(offline.scores, offline.notes, offline.reasons, judges=[judge] * len(offline.scores),
                          faults=[Fault(reason, f"scored with {judge} and the same thresholds")], llm_calls=calls)

    def evaluate(self, query: str, texts: Sequence[str]) -> Evaluation:
        """One LLM call for all passages (or one per passage); the offline judge for what it does not answer."""
        if not texts:
            return Evaluation([])
        offline = self.offline.evaluate(query, texts)
        skipped = self._skipped(offline)
        if skipped is not None:
            return skipped
        prompts = self._prompts(query, texts)
        try:
            replies = [self._complete(p) for p in prompts]
        except Exception as error:
            return self._failed(error, offline, len(prompts))
        return self._read(replies, texts, offline)

    async def aevaluate(self, query: str, texts: Sequence[str]) -> Evaluation:
        """Async `evaluate`: per-document calls run concurrently."""
        if not texts:
            return Evaluation([])
        offline = await self.offline.aevaluate(query, texts)
        skipped = self._skipped(offline)
        if skipped is not None:
            return skipped
        prompts = self._prompts(query, texts)
        try:
            replies = list(await asyncio.gather(*(self._acomplete(p) for p in prompts)))
        except Exception as error:
            return self._failed(error, offline, len(prompts))
        return self._read(replies, texts, offline)

    def _complete(self, prompt: str) -> str:
        if self.timeout is None:
            return _text(self.llm.complete(prompt))
        future = _POOL.submit(contextvars.copy_context().run, self.llm.complete, prompt)  # the caller's spans, logs
        try:
            return _text(future.result(timeout=self.timeout))
        except FutureTimeout:
            future.cancel()
            raise TimeoutError(f"no reply in {self.timeout:g} s") from None

    async def _acomplete(self, prompt: str) -> str:
        try:
            return _text(await asyncio.wait_for(self.llm.acomplete(prompt), self.timeout))
        except asyncio.TimeoutError:
            raise TimeoutError(f"no reply in {self.timeout:g} s") from None


def _text(reply: object) -> str:
    """The LLM's reply, which the protocol says is text: anything else is the LLM wrapper's bug, named."""
    if not isinstance(reply, str):
        raise TypeError(f"the LLM returned {type(reply).__name__}, not text")
    return reply


def _offline_judge(offline: RetrievalEvaluator | str) -> RetrievalEvaluator:
    judge = evaluator_from_spec(offline) if isinstance(offline, str) else offline
    if not isinstance(judge, RetrievalEvaluator):
        raise TypeError(f"offline must be an evaluator spec or a RetrievalEvaluator, got {type(offline).__name__}")
    if isinstance(judge, LLMEvaluator):
        raise ValueError("the LLM judge's offline judge must not be an LLM judge itself")
    return judge


def _judge(target: str, *, llm: LLM | None = None, **kwargs: Any) -> LLMEvaluator:
    if llm is None:
        raise ValueError(f"evaluator 'llm{':' + target if target else ''}' needs an LLM: pass llm=... (a chat "
                         "generator in Haystack; the LLM of your LlamaIndex app)")
    if target not in ("", "batched", "per_document"):
        raise ValueError(f"evaluator 'llm:{target}': the mode is 'batched' (the default) or 'per_document'")
    return LLMEvaluator(llm, mode=target or "batched", **kwargs)  # type: ignore[arg-type]


def _auto(target: str, *, llm: LLM | None = None, language: str = "en", **kwargs: Any) -> RetrievalEvaluator:
    """The LLM judge where there is an LLM (its offline partner the default judge in `language`), else the judge
    "default" stands for."""
    if llm is None:
        return default_evaluator(language, **kwargs)
    kwargs.setdefault("offline", default_evaluator(language))
    return _judge("", llm=llm, **kwargs)


EVALUATOR_SPECS.register(Kind("llm", "optional", _judge, LLMEvaluator,
                              lambda e: "" if e.mode == "batched" else e.mode, placeholder="per_document"),
                         before="custom")
EVALUATOR_SPECS.register(Kind("auto", "none", _auto), before="default")
