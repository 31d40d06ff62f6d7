"""KnowledgeGate: the refined knowledge goes on to the prompt, or the pipeline abstains without the LLM."""

from dataclasses import replace
from typing import Any

from haystack import Document, component

from crag_shared.adapter import (
    UNVERIFIED_KEY,
    UNVERIFIED_NOTE,
    Action,
    AmbiguousRule,
    abstention_for,
    neutralized,
)

from ..convert import checked_documents
from ..integration import ROUTERS, keep_earlier_type_string
from ..logs import checked_query, logger


@component
class KnowledgeGate:
    """The last CRAG step of a modular pipeline (`build_crag_pipeline`), after the joiner of all branches.

    With knowledge, `documents` go on (connect it to a prompt builder that requires `documents`); without
    any (retrieval judged Incorrect and no web knowledge, nothing passing the strip threshold, or an
    unjudged query), only `abstention` is emitted, with the reason, so the prompt builder and the
    generator never run: connect it to a `NoAnswerReply`. It runs on the joiner's output, so every branch
    must feed the joiner, even with nothing (`build_crag_pipeline` sends the router's empty `incorrect`
    there when there is no web search). The router's `action` and `abstention` say more.
    An Ambiguous question's strips meet the core's `AmbiguousRule` here, once the web's outcome is known:
    the router stamps it on the Ambiguous documents (`meta["crag_keep_at"]`, the floor: the upper threshold,
    or above every score for a question that names no one; `meta["crag_below_floor"]`, what strips below it
    do), and the gate applies it to the strips' scores with "web knowledge" meaning a web strip arrived,
    exactly as `Corrector.correct` does: strips below the floor are dropped without web knowledge, or, with
    `ambiguous="guard"`, go on marked unverified (`meta["unverified"]`, shown by the default template).

    Usage:

    ```python
    pipeline.connect("joiner.documents", "gate.documents")
    pipeline.connect("gate.documents", "prompt_builder.documents")
    pipeline.connect("gate.abstention", "no_answer.abstention")
    pipeline.run({"query": question})                     # the flat query reaches the gate too
    ```
    """

    __module__ = ROUTERS  # its canonical, allowlisted home (see crag_haystack.integration)

    @component.output_types(documents=list[Document], abstention=str)
    def run(self, query: str, documents: list[Document], web_issues: list[str] | None = None,
            closest: str | None = None) -> dict[str, Any]:
        """
        :param query: the question (an empty one was not judged).
        :param documents: the joined knowledge of every branch.
        :param web_issues: the web search's issues, if it ran (they say why the web gave no knowledge).
        :param closest: the router's `closest`: the passage that came closest, named in an abstention.
        :returns: `documents` when there is knowledge, else `abstention` (why there is none).
        """
        checked_query("KnowledgeGate", query)
        documents = checked_documents("KnowledgeGate", documents)
        stamped = [i for i, d in enumerate(documents) if AmbiguousRule.read(d.meta) is not None]
        rule = AmbiguousRule.read(documents[stamped[0]].meta) if stamped else None
        placed = {}
        if rule is not None:
            web_knowledge = any(d.meta.get("crag_origin") == "web" for d in documents)
            scores = [_score(documents[i]) for i in stamped]
            placed = dict(zip(stamped, rule.place(scores, web_knowledge)))
        kept = [replace(d, content=neutralized(d.content or ""), meta={**d.meta, UNVERIFIED_KEY: UNVERIFIED_NOTE})
                if placed.get(i) == "unverified" else d
                for i, d in enumerate(documents) if placed.get(i) != "dropped"]
        if len(kept) < len(documents):
            logger.debug("KnowledgeGate: Ambiguous without web knowledge: kept {kept} of {total} internal strips "
                         "(those scoring at least the upper threshold)", kept=len(kept), total=len(documents))
        if kept:
            return {"documents": kept}
        if rule is not None:
            web = "; ".join(web_issues) if web_issues else (
                "no web search configured" if web_issues is None else "the web search gave no knowledge")
            reason = abstention_for(Action.AMBIGUOUS, web, rule.floor, closest or "").reason
            logger.debug("KnowledgeGate: abstained: {reason}", reason=reason)
            return {"abstention": reason}
        if not query.strip():
            reason = abstention_for(Action.UNJUDGED, None).reason
        else:
            web = f"; the web gave none ({'; '.join(web_issues)})" if web_issues else ""
            reason = f"no retrieved knowledge passed CRAG's judgment{web}" + (f"; {closest}" if closest else "")
        logger.debug("KnowledgeGate: abstained: {reason}", reason=reason)
        return {"abstention": reason}


def _score(document: Document) -> float:
    return document.score if document.score is not None else -1.0


keep_earlier_type_string(KnowledgeGate, "knowledge_gate")
