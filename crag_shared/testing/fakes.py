"""Offline test doubles that are real things: small evaluator checkpoints and a loopback web.

Nothing is downloaded: a word-level tokenizer is trained on the texts you pass, a randomly initialised
model is created from a hand-written config, and both are written with `save_pretrained`, so they load
through the same code path as a real checkpoint. `FakeWeb` is a real HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from html import escape as html_escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from ..evaluators.hf import require_torch
from ..text.words import content_terms
from .engines import ANSWER_FAULTS, BAD_ENTRIES, ROUTES, failure, request_key, results

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "</s>"]


def hashing_vector(text: str, dim: int = 256) -> list[float]:
    """A bag-of-words embedding by feature hashing: deterministic and instant, for the adapters' offline
    embedding models (LlamaIndex `HashingEmbedding`, Haystack `HashingTextEmbedder`)."""
    vector = [0.0] * dim
    for term in content_terms(text):
        vector[int(hashlib.md5(term.encode()).hexdigest()[:8], 16) % dim] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


def build_tokenizer(texts: Iterable[str], path: str | Path, kind: Literal["t5", "bert"],
                    vocab_size: int = 4000):
    """Train a lower-cased word-level tokenizer on `texts` and save it as a fast tokenizer.

    `kind="t5"` appends `</s>` to every sequence (T5's classification head reads the final EOS);
    `kind="bert"` builds `[CLS] a [SEP] b [SEP]` pairs with token type ids.
    """
    _, transformers = require_torch()
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordLevel
    from tokenizers.trainers import WordLevelTrainer

    tokenizer = Tokenizer(WordLevel(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(list(texts), WordLevelTrainer(vocab_size=vocab_size, special_tokens=SPECIAL))
    ids = {t: tokenizer.token_to_id(t) for t in SPECIAL}
    if kind == "t5":
        tokenizer.post_processor = processors.TemplateProcessing(
            single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", ids["</s>"])])
        extra = {"eos_token": "</s>"}
    else:
        tokenizer.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])])
        extra = {"cls_token": "[CLS]", "sep_token": "[SEP]"}
    names = ["input_ids", "attention_mask"] if kind == "t5" else ["input_ids", "token_type_ids", "attention_mask"]
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="[PAD]", unk_token="[UNK]",
                                                model_max_length=512, model_input_names=names, **extra)
    fast.save_pretrained(str(path))
    return fast


def build_t5_evaluator(path: str | Path, texts: Iterable[str], *, d_model: int = 32, layers: int = 2,
                       heads: int = 2, d_ff: int = 64, seed: int = 0) -> Path:
    """A randomly initialised `T5ForSequenceClassification` (num_labels=1) in the paper's format.

    Pass `d_model=512, layers=6, heads=8, d_ff=2048` for a T5-small-sized model.
    """
    torch, transformers = require_torch()
    path = Path(path)
    tokenizer = build_tokenizer(texts, path, "t5")
    torch.manual_seed(seed)
    config = transformers.T5Config(
        vocab_size=len(tokenizer), d_model=d_model, d_kv=d_model // heads, d_ff=d_ff, num_layers=layers,
        num_decoder_layers=layers, num_heads=heads, num_labels=1, problem_type="regression",
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.pad_token_id)
    transformers.T5ForSequenceClassification(config).save_pretrained(str(path))
    return path


def build_bert_evaluator(path: str | Path, texts: Iterable[str], *, hidden: int = 32, layers: int = 2,
                         heads: int = 2, intermediate: int = 64, num_labels: int = 1, seed: int = 0) -> Path:
    """A randomly initialised BERT-style `BertForSequenceClassification` cross-encoder."""
    torch, transformers = require_torch()
    path = Path(path)
    tokenizer = build_tokenizer(texts, path, "bert")
    torch.manual_seed(seed)
    config = transformers.BertConfig(
        vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        intermediate_size=intermediate, max_position_embeddings=512, num_labels=num_labels,
        pad_token_id=tokenizer.pad_token_id)
    transformers.BertForSequenceClassification(config).save_pretrained(str(path))
    return path


# -- a loopback web: SerpAPI-shaped search plus pages, with switchable faults --------------------------
def keyword_reply(prompt: str) -> str | None:
    """What a stand-in LLM answers to a keyword-rewrite prompt, i.e. one in the few-shot format of the paper's
    (ending "question: ...\nquery:", whatever its instructions say): "query: " and the offline keywords of
    the question. None for any other prompt."""
    _, marker, tail = prompt.rstrip().rpartition("\nquestion:")
    if not marker or not tail.rstrip().endswith("query:"):
        return None
    from ..rewrite import keyword_query

    return "query: " + keyword_query(tail.rstrip()[: -len("query:")].strip())


SEARCH_FAULTS = ("timeout", "trickle", "trickle_headers", "redirect_loop", *ANSWER_FAULTS)


@dataclass
class FakePage:
    """A page the fake web serves at /page/<name>; the fields after `paragraphs` are faults."""

    title: str
    paragraphs: list[str] = field(default_factory=list)
    status: int = 200
    content_type: str = "text/html; charset=utf-8"
    delay: float = 0.0
    body: bytes | None = None  # raw body instead of rendered HTML
    size: int = 0  # serve this many bytes of filler after the HTML
    redirect: str | None = None  # Location to redirect to (absolute or /page/<name>)
    snippet: str = ""
    headers: dict[str, str] = field(default_factory=dict)  # extra headers, e.g. Content-Encoding

    def html(self) -> bytes:
        """The page as HTML (title, paragraphs)."""
        paragraphs = "".join(f"<p>{html_escape(p)}</p>" for p in self.paragraphs)
        return (f"<html><head><title>{html_escape(self.title)}</title></head><body><nav>Home | Search</nav>"
                f"<h1>{html_escape(self.title)}</h1>{paragraphs}<footer>Footer links</footer></body></html>"
                ).encode()


class _Server(ThreadingHTTPServer):
    request_queue_size = 1024  # hundreds of concurrent searches connect at once


class FakeWeb:
    """A threaded HTTP server on 127.0.0.1 that emulates search APIs and serves pages.

    The search APIs, each in its provider's answer shape (see `engines`): SerpAPI at `/search`, Serper at
    `/serper/search`, SearXNG at `/searxng/search`, Brave at `/brave/web/search`, Tavily at
    `/tavily/search`, Exa at `/exa/search`; point a provider's `base_url` at `url` plus that prefix.

    `search_fault` switches the search endpoint to one of SEARCH_FAULTS ("timeout" holds the answer back
    until the server stops, "trickle" sends it a byte a second, "trickle_headers" sends the status line
    and headers a byte every half second (a per-read timeout never fires), "bad_entries" mixes malformed links in
    with the good results); `results` maps a query to the
    page names to return (default: every page, in insertion order); `api_key` is the key it accepts.
    Use as a context manager; `url` is its base URL (give it to `SerpAPISearch(base_url=...)`).
    """

    def __init__(self, api_key: str = "test-key", search_delay: float = 0.0, host: str = "127.0.0.1") -> None:
        self.api_key = api_key
        self.host = host
        self.pages: dict[str, FakePage] = {}
        self.results: dict[str, list[str]] = {}
        self.search_fault: str | None = None
        self.search_delay = search_delay
        self.requests: list[str] = []
        self.hosts: list[str] = []  # the Host header of each GET
        self.serper_bodies: list[dict[str, Any]] = []
        self.trickling = 0  # answers being sent a byte at a time right now
        self._server: ThreadingHTTPServer | None = None
        self._stopping = threading.Event()

    @property
    def url(self) -> str:
        """The server's base URL (a SerpAPI `base_url`)."""
        assert self._server is not None, "start the FakeWeb first"
        return f"http://{self.host}:{self._server.server_address[1]}"

    def page_url(self, name: str) -> str:
        """The URL the page named `name` is served at."""
        return f"{self.url}/page/{name}"

    def add(self, name: str, title: str, paragraphs: list[str] | None = None, **faults: Any) -> str:
        """Serve a page of `paragraphs` under `name` (answering after `delay` seconds)."""
        self.pages[name] = FakePage(title, list(paragraphs or []), **faults)
        return self.page_url(name) if self._server else name

    def __enter__(self) -> "FakeWeb":
        web = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                web.requests.append(self.path)
                web.hosts.append(self.headers.get("Host", ""))
                parts = urlsplit(self.path)
                if ("GET", parts.path) in ROUTES:
                    query = parse_qs(parts.query)
                    web._search(self, ROUTES["GET", parts.path], (query.get("q") or [""])[0],
                                request_key(ROUTES["GET", parts.path], query, self.headers), {})
                elif parts.path.startswith("/page/"):
                    web._page(self, parts.path[len("/page/"):])
                else:
                    self.send_error(404)

            def do_POST(self) -> None:  # serper.dev, Tavily, Exa: a JSON body
                web.requests.append(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                engine = ROUTES.get(("POST", self.path))
                if engine is None or not isinstance(body, dict):
                    return self.send_error(404)
                web.serper_bodies.append(body)
                query = str(body.get("q") or body.get("query") or "")
                web._search(self, engine, query, request_key(engine, {}, self.headers), body)
                return None

        self._stopping.clear()
        self._server = _Server((self.host, 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stopping.set()
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, body: bytes, content_type: str,
              headers: dict[str, str] | None = None) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.end_headers()
        with contextlib.suppress(OSError):
            handler.wfile.write(body)

    def _search(self, handler: BaseHTTPRequestHandler, engine: str, q: str, key: str | None,
                request: dict[str, Any]) -> None:
        time.sleep(self.search_delay)
        fault = self.search_fault
        if fault == "timeout":
            self._stopping.wait(60)
            return None
        if fault == "trickle_headers":
            return self._trickle(b"HTTP/1.1 200 OK\r\n" + b"X-Padding: slow\r\n" * 200, handler, 0.5)
        if fault == "redirect_loop":
            return self._send(handler, 302, b"", "text/html", {"Location": handler.path})
        failed = failure(engine, "401" if key is not None and key != self.api_key else fault)
        if failed:
            status, body, headers = failed
            return self._send(handler, status, body, headers["Content-Type"],
                              {k: v for k, v in headers.items() if k != "Content-Type"})
        names = self.results.get(q, list(self.pages))
        hits = [{"title": self.pages[n].title, "link": self.page_url(n), "text": "\n\n".join(self.pages[n].paragraphs),
                 "snippet": self.pages[n].snippet or " ".join(self.pages[n].paragraphs)[:150]} for n in names]
        answer = results(engine, q, hits, request)
        if fault == "bad_entries":
            organic = "organic" if engine == "serper" else "organic_results"
            answer[organic] = [*BAD_ENTRIES, *answer[organic]]
        data = json.dumps(answer).encode()
        if fault != "trickle":
            return self._send(handler, 200, data, "application/json")
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        return self._trickle(data, handler, 1.0)

    def _trickle(self, data: bytes, handler: BaseHTTPRequestHandler, pause: float) -> None:
        """Send `data` a byte per `pause` seconds, until it is sent, the client hangs up or the server stops."""
        self.trickling += 1
        try:
            with contextlib.suppress(OSError):
                for byte in data:
                    if self._stopping.wait(pause):
                        break
                    handler.wfile.write(bytes([byte]))
                    handler.wfile.flush()
        finally:
            self.trickling -= 1

    def _page(self, handler: BaseHTTPRequestHandler, name: str) -> None:
        page = self.pages.get(name)
        if page is None:
            return self._send(handler, 404, b"not found", "text/plain")
        time.sleep(page.delay)
        if page.redirect:
            target = page.redirect if "://" in page.redirect else f"{self.url}{page.redirect}"
            return self._send(handler, 302, b"", "text/html", {"Location": target})
        body = page.body if page.body is not None else page.html()
        if page.headers:
            handler.send_response(page.status)
            for key, value in {"Content-Type": page.content_type, **page.headers}.items():
                if value:
                    handler.send_header(key, value)
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            with contextlib.suppress(OSError):
                handler.wfile.write(body)
            return None
        if page.size:
            handler.send_response(page.status)
            handler.send_header("Content-Type", page.content_type)
            handler.send_header("Content-Length", str(len(body) + page.size))
            handler.end_headers()
            with contextlib.suppress(OSError):
                handler.wfile.write(body)
                chunk = b"<p>" + b"filler text " * 8000 + b"</p>"
                sent = 0
                while sent < page.size:
                    piece = chunk[: page.size - sent]
                    handler.wfile.write(piece)
                    sent += len(piece)
            return None
        return self._send(handler, page.status, body, page.content_type)
