"""A LlamaIndex LLM as the core's LLM protocol (prompt in, text out)."""

from __future__ import annotations

from llama_index.core import Settings
from llama_index.core.llms import LLM

from crag_shared.adapter import NoLLMConfigured


def configured_llm() -> LLM | None:
    """`Settings.llm` only if the user set one: resolving the default would import OpenAI or, in test
    setups, return MockLLM, which echoes prompts and would turn into a nonsense search query."""
    return getattr(Settings, "_llm", None)


class LlamaIndexLLM:
    """Calls `llm` (or, when None, the `Settings.llm` you set, looked up at call time)."""

    def __init__(self, llm: LLM | None = None) -> None:
        self._llm = llm

    @property
    def held(self) -> bool:
        """Whether there is an LLM to call now: the one given, or the `Settings.llm` you set."""
        return self._llm is not None or configured_llm() is not None

    @property
    def llm(self) -> LLM:
        """The LlamaIndex LLM in use: the one given, else `Settings.llm` when set, else None."""
        llm = self._llm or configured_llm()
        if llm is None:
            raise NoLLMConfigured("no LLM configured: pass llm=... or set Settings.llm")
        return llm

    def complete(self, prompt: str) -> str:
        """The LLM's completion text for `prompt`."""
        return self.llm.complete(prompt).text

    async def acomplete(self, prompt: str) -> str:
        """Async `complete`."""
        return (await self.llm.acomplete(prompt)).text
