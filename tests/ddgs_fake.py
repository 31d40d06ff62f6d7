"""A loopback stand-in for the public engines `ddgs` scrapes: an HTTP proxy that opens the CONNECT tunnel,
speaks TLS with a certificate from a throwaway CA (trustme), and answers every request as
html.duckduckgo.com's HTML results page would."""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from html import escape
from typing import Any


class FakeDuckDuckGo:
    """`proxy` is the URL to give `DDGS(proxy=..., verify=False)`; `results` are (title, href, body) dicts;
    `delay` holds each answer back that many seconds; `hosts` lists the hosts tunnelled to."""

    def __init__(self, results: list[dict[str, str]], delay: float = 0.0) -> None:
        self.results = results
        self.delay = delay
        self.hosts: list[str] = []
        self.queries: list[str] = []
        self._stop = threading.Event()

    def __enter__(self) -> "FakeDuckDuckGo":
        import trustme

        ca = trustme.CA()
        self._tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("html.duckduckgo.com", "duckduckgo.com", "*.duckduckgo.com").configure_cert(self._tls)
        self._server = socket.create_server(("127.0.0.1", 0))
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._server.close()

    @property
    def proxy(self) -> str:
        """The proxy URL."""
        return f"http://127.0.0.1:{self._server.getsockname()[1]}"

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while not self._stop.is_set():
                connection, _ = self._server.accept()
                threading.Thread(target=self._tunnel, args=(connection,), daemon=True).start()

    def _tunnel(self, connection: socket.socket) -> None:
        with contextlib.suppress(OSError, ssl.SSLError), connection:
            head, _ = _read_head(connection, b"")
            self.hosts.append(head.split(b" ")[1].decode())
            connection.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            with self._tls.wrap_socket(connection, server_side=True) as tls:
                rest = b""
                while True:
                    head, rest = _read_head(tls, rest)
                    if not head:
                        return
                    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                                   if line.lower().startswith(b"content-length:")), 0)
                    while len(rest) < length:
                        rest += tls.recv(65536)
                    body, rest = rest[:length], rest[length:]
                    self.queries.append(body.decode(errors="replace"))
                    if self._stop.wait(self.delay):
                        return
                    page = self._page().encode()
                    tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n"
                                + f"Content-Length: {len(page)}\r\n\r\n".encode() + page)

    def _page(self) -> str:
        items = "".join(f'<div class="result results_links web-result"><div class="links_main result__body">'
                        f'<h2 class="result__title"><a href="{escape(r["href"])}">{escape(r["title"])}</a></h2>'
                        f'<a class="result__snippet" href="{escape(r["href"])}">{escape(r["body"])}</a></div></div>'
                        for r in self.results)
        return f"<html><body><div id='links'>{items}</div></body></html>"


def _read_head(connection: Any, data: bytes) -> tuple[bytes, bytes]:
    """(the request head, the bytes read past it)."""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(4096)
        if not chunk:
            return b"", b""
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    return head, rest
