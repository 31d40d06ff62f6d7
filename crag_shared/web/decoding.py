"""Content-Encoding undone under a byte cap that holds on every layer: no decompression bomb gets through.

httpx decodes a whole network chunk at once, so `Content-Encoding: gzip, gzip` can turn a few kilobytes
into gigabytes before any cap is looked at. Here each layer's output is bounded in the zlib call itself
(`max_length`), so memory and time per chunk stay small and the event loop is never held for long.
"""

from __future__ import annotations

import zlib

__all__ = ["ACCEPT_ENCODING", "BoundedDecoder", "EncodingError"]

SUPPORTED = ("gzip", "x-gzip", "deflate", "identity")
ACCEPT_ENCODING = "gzip, deflate"
MAX_LAYERS = 3


class EncodingError(ValueError):
    """An encoding the decoder cannot or will not undo; the page fails with this reason."""


class _Layer:
    def __init__(self, coding: str, limit: int) -> None:
        self.coding = coding
        self.left = limit
        self.started = False
        self.inflater = zlib.decompressobj(zlib.MAX_WBITS | 16 if "gzip" in coding else zlib.MAX_WBITS)

    def push(self, data: bytes) -> bytes:
        if self.left <= 0 or not data:
            return b""
        try:
            out = self.inflater.decompress(data, self.left)
        except zlib.error as error:
            if self.coding != "deflate" or self.started:
                raise EncodingError(f"broken {self.coding} data: {error}") from None
            self.inflater = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate, as some servers send it
            try:
                out = self.inflater.decompress(data, self.left)
            except zlib.error as raw_error:
                raise EncodingError(f"broken deflate data: {raw_error}") from None
        self.started = True
        self.left -= len(out)
        return out


class BoundedDecoder:
    """Decodes a body sent with `content_encoding`, producing at most `limit` bytes at every layer.

    `feed(raw)` returns the decoded bytes of one network chunk; `full` says the cap was reached (the body
    is then cut there). Unknown encodings and more than `MAX_LAYERS` layers raise `EncodingError`.
    """

    def __init__(self, content_encoding: str, limit: int) -> None:
        codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        unknown = [c for c in codings if c not in SUPPORTED]
        if unknown:
            raise EncodingError(f"unsupported content encoding {unknown[0]!r}")
        if len(codings) > MAX_LAYERS:
            raise EncodingError(f"{len(codings)} content-encoding layers (at most {MAX_LAYERS} are undone)")
        self.limit = limit
        self.produced = 0
        self.layers = [_Layer(c, limit) for c in reversed(codings)]  # the last coding listed was applied last

    @property
    def full(self) -> bool:
        """Whether the byte cap is reached."""
        return self.produced >= self.limit or any(layer.left <= 0 for layer in self.layers)

    def feed(self, raw: bytes) -> bytes:
        """Decode one chunk, up to the cap; the decoded bytes."""
        data = raw if self.layers else raw[: self.limit - self.produced]
        for layer in self.layers:
            data = layer.push(data)
        self.produced += len(data)
        return data
