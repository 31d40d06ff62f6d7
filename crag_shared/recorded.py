"""`RecordedLLM`: record an LLM's replies once, replay them offline, keyed by the prompt.

Tests of a CRAG pipeline then run in CI without keys, and a benchmark can measure an LLM judge from replies
recorded once. A recording is a JSON Lines file, one reply a line: `{"key": sha256 of the prompt, "prompt":
..., "reply": ...}` (`prompt` may be left out: the key decides). Framework adapters wrap it as their own LLM
classes (`crag_llamaindex.testing.RecordedLLM`, `crag_haystack.testing.RecordedChatGenerator`).
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Literal

from .aio import in_thread
from .llm import LLM, check_llm

Mode = Literal["replay", "record", "auto"]


class RecordingMissing(KeyError):
    """A prompt with no recorded reply, in replay mode: the recording is older than the prompt (record again)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "no recorded reply"


def prompt_key(prompt: str) -> str:
    """The key a reply is recorded under: the SHA-256 of the prompt's UTF-8 bytes, in hex."""
    return hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()


def read_recording(path: str | Path) -> dict[str, str]:
    """The replies of a recording by key; a malformed line is a ValueError naming the file and line."""
    replies: dict[str, str] = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            key, reply = row.get("key") or prompt_key(row["prompt"]), row["reply"]
            if not isinstance(key, str) or not isinstance(reply, str):
                raise TypeError("key and reply must be strings")
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"{path}:{number}: not a recorded reply ({type(error).__name__}: {error})") from None
        replies[key] = reply
    return replies


class RecordedLLM:
    """An `LLM` that answers from a recording.

    `mode="replay"` (default) answers only from `path` and raises `RecordingMissing` for a prompt it has no reply
    for; `"record"` asks `llm` every time and appends its reply; `"auto"` replays what is recorded and records
    the rest. `calls` counts the prompts answered, `prompts` keeps them in order (for tests that count calls).
    An adapter that asks its framework's LLM itself (`records_elsewhere`) uses `replayed` and `record` alone.
    """

    def __init__(self, path: str | Path, llm: LLM | None = None, *, mode: Mode = "replay",
                 records_elsewhere: bool = False) -> None:
        if mode not in ("replay", "record", "auto"):
            raise ValueError(f"mode must be 'replay', 'record' or 'auto', got {mode!r}")
        if mode != "replay" and llm is None and not records_elsewhere:
            raise ValueError(f"mode={mode!r} records replies: pass the llm that gives them")
        self.path = Path(path)
        self.llm = check_llm(llm) if llm is not None else None
        self.mode = mode
        if mode == "replay" and not self.path.is_file():
            raise FileNotFoundError(f"no recording at {self.path}: record one with mode='record' and an llm")
        self.replies = read_recording(self.path) if self.path.is_file() else {}
        self.prompts: list[str] = []
        self._lock = threading.Lock()

    @property
    def calls(self) -> int:
        """The prompts answered so far."""
        return len(self.prompts)

    def replayed(self, prompt: str) -> str | None:
        """The recorded reply to `prompt` (counted as a call), or None where this mode asks the LLM instead;
        `RecordingMissing` in replay mode for a prompt never recorded."""
        with self._lock:
            self.prompts.append(prompt)
        if self.mode == "record":
            return None
        reply = self.replies.get(prompt_key(prompt))
        if reply is None and self.mode == "replay":
            shown = " ".join(prompt.split())[:120]
            raise RecordingMissing(f"{self.path}: no recorded reply for the prompt beginning {shown!r}")
        return reply

    def record(self, prompt: str, reply: str) -> str:
        """Append `reply` to the recording under `prompt`'s key; return it."""
        key = prompt_key(prompt)
        line = json.dumps({"key": key, "prompt": prompt, "reply": reply}, ensure_ascii=False)
        with self._lock:
            self.replies[key] = reply
            with self.path.open("a", encoding="utf-8") as out:
                out.write(line + "\n")
        return reply

    def complete(self, prompt: str) -> str:
        """The recorded reply to `prompt` (asking the wrapped LLM where the mode records)."""
        reply = self.replayed(prompt)
        if reply is not None:
            return reply
        assert self.llm is not None  # the constructor requires it outside replay
        return self.record(prompt, self.llm.complete(prompt))

    async def acomplete(self, prompt: str) -> str:
        """Async `complete`."""
        reply = await in_thread(self.replayed, prompt)
        if reply is not None:
            return reply
        assert self.llm is not None
        return self.record(prompt, await self.llm.acomplete(prompt))
