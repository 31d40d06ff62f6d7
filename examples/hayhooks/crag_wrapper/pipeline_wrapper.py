"""A hayhooks PipelineWrapper around a CRAG pipeline: put this folder in HAYHOOKS_PIPELINES_DIR (or
`hayhooks pipeline deploy-files -n crag_wrapper examples/hayhooks/crag_wrapper`) and POST
/crag_wrapper/run with {"query": ..., "documents": [{"content": ...}, ...]}.

The answer is CRAG's knowledge and verdict. Add your generator behind `crag.documents` (and a
`NoAnswerReply` behind `crag.abstention`) to answer in the same call.
"""

from hayhooks import BasePipelineWrapper
from haystack import Document, Pipeline

from crag_haystack import CRAG


class PipelineWrapper(BasePipelineWrapper):
    """CRAG over the documents a client sends: the knowledge strips, the action and the scores."""

    def setup(self) -> None:
        """Build the pipeline once, when hayhooks deploys it."""
        self.pipeline = Pipeline()
        self.pipeline.add_component("crag", CRAG())

    def run_api(self, query: str, documents: list[dict]) -> dict:
        """
        Judge `documents` for `query` with CRAG and return the refined knowledge.

        :param query: the question.
        :param documents: the retrieved documents, as `{"content": ..., "meta": {...}}` objects.
        :returns: `action`, `scores`, `knowledge` (the strips' texts) and `abstention` (why there is none).
        """
        out = self.pipeline.run({"crag": {"query": query, "documents": [Document.from_dict(d) for d in documents]}})
        crag = out["crag"]
        return {"action": crag["action"], "scores": crag["scores"],
                "knowledge": [d.content for d in crag.get("documents", [])], "abstention": crag.get("abstention")}
