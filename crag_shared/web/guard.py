"""The SSRF guard: which addresses a fetched page may come from, and connections pinned to checked addresses.

A name is resolved once, every address it resolves to is checked, and the connection goes to a checked
address: a DNS answer that changes between the check and the connect (rebinding) never reaches an
internal host. The HTTP Host header and the TLS server name stay the URL's host name.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any, NoReturn

import httpcore
import httpx

__all__ = ["AddressPolicy", "IPAddress", "Refused", "is_public", "literal_ip"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

#: IANA special-purpose IPv4 ranges that are not globally reachable (RFC 6890 registry), plus multicast,
#: the shared CGNAT space (100.64.0.0/10 holds cloud metadata addresses) and the deprecated 6to4 relay.
NOT_GLOBAL_V4 = tuple(ipaddress.ip_network(n) for n in (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
    "192.0.0.0/24", "192.0.2.0/24", "192.31.196.0/24", "192.52.193.0/24", "192.88.99.0/24", "192.168.0.0/16",
    "192.175.48.0/24", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4"))

#: The IPv6 counterparts. Forms that embed an IPv4 address (mapped, translated, compatible, 6to4, NAT64) are
#: judged by the IPv4 address inside them; every other address in ::/8 (reserved by the IETF, never global
#: unicast) is refused, and Teredo (2001::/32) lies in 2001::/23 and is refused outright.
NOT_GLOBAL_V6 = tuple(ipaddress.ip_network(n) for n in (
    "::/8", "::/128", "::1/128", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32", "2620:4f:8000::/48",
    "3fff::/20", "5f00::/16", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8"))

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_COMPATIBLE = ipaddress.ip_network("::/96")
_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")  # SIIT's IPv4-translated form, ::ffff:0:a.b.c.d


class Refused(Exception):
    """A URL the guard will not fetch; the message says why."""


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, translated, compatible, 6to4 or NAT64), if any."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64 or ip in _TRANSLATED or (ip in _COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def is_public(address: str | IPAddress) -> bool:
    """True only for globally reachable unicast addresses."""
    ip = address if isinstance(address, (ipaddress.IPv4Address, ipaddress.IPv6Address)) else \
        ipaddress.ip_address(str(address).split("%")[0])
    if ip.version == 6:
        inner = embedded_ipv4(ip)
        if inner is not None:
            return is_public(inner)
        return not any(ip in network for network in NOT_GLOBAL_V6) and ip.is_global
    return not any(ip in network for network in NOT_GLOBAL_V4) and ip.is_global


def literal_ip(host: str) -> IPAddress | None:
    """`host` as an IP address if it is one in any form (decimal, hex, IPv4-mapped...), else None."""
    try:
        return ipaddress.ip_address(host.strip("[]").split("%")[0])
    except ValueError:
        return None


class AddressPolicy:
    """Public addresses pass; others only when `allow` is True or lists a network holding them."""

    def __init__(self, allow: bool | Sequence[str] = False) -> None:
        self.allow_all = allow is True
        self.networks = [] if isinstance(allow, bool) else [ipaddress.ip_network(n, strict=False) for n in allow]

    def permits(self, address: str) -> bool:
        """Whether connecting to `address` is allowed."""
        if self.allow_all or is_public(address):
            return True
        ip = ipaddress.ip_address(address.split("%")[0])
        return any(ip.version == n.version and ip in n for n in self.networks)

    def check(self, host: str, addresses: Iterable[str]) -> list[str]:
        """The addresses, if every one is permitted; else `Refused` naming the first that is not."""
        addresses = list(addresses)
        for address in addresses:
            if not self.permits(address):
                raise Refused(f"refused: {host} resolves to a non-public address ({address}); "
                              "set allow_private_addresses=True to allow it")
        if not addresses:
            raise Refused(f"cannot resolve {host}: no address")
        return addresses

    async def resolve(self, host: str, port: int) -> list[str]:
        """Resolve `host` once and check every address it has."""
        if literal_ip(host) is not None:
            return self.check(host, [str(literal_ip(host))])
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as error:
            raise Refused(f"cannot resolve {host}: {error}") from error
        return self.check(host, dict.fromkeys(str(info[4][0]) for info in infos))


class PinnedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend, connecting only to addresses the policy checked at that moment."""

    def __init__(self, policy: AddressPolicy, inner: httpcore.AsyncNetworkBackend | None = None) -> None:
        self.policy = policy
        self.inner = inner or httpcore.AnyIOBackend()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None, socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        """Connect to the address checked for this host, never a new resolution."""
        addresses = await self.policy.resolve(host, port)
        last: Exception | None = None
        for address in addresses:  # the checked addresses, in resolver order
            try:
                return await self.inner.connect_tcp(address, port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as error:
                last = error
        assert last is not None
        raise last

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        """Refused: pages are fetched over TCP only."""
        raise Refused("refused: unix sockets are not fetched")

    async def sleep(self, seconds: float) -> None:
        """Sleep as the wrapped backend does."""
        await self.inner.sleep(seconds)


#: httpcore's errors as the httpx errors a caller of httpx expects, most specific first.
_HTTPX_ERRORS: tuple[tuple[type[Exception], type[httpx.HTTPError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout), (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout), (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException), (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError), (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError), (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError), (httpcore.ProtocolError, httpx.ProtocolError))


def _reraised_as_httpx(error: Exception) -> NoReturn:
    """Raise the httpx error for an httpcore one (others as they are), so callers catch httpx's classes only."""
    for inner, outer in _HTTPX_ERRORS:
        if isinstance(error, inner):
            raise outer(str(error)) from error
    raise error


class _HttpxStream(httpx.AsyncByteStream):
    """httpcore's response body as an httpx stream, with httpcore errors raised as httpx's."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for part in self.inner:
                yield part
        except Exception as error:
            _reraised_as_httpx(error)

    async def aclose(self) -> None:
        await self.inner.aclose()


class PinnedTransport(httpx.AsyncBaseTransport):
    """An httpx transport whose every connection (each redirect hop, each retry) goes through the guard.

    It drives an `httpcore.AsyncConnectionPool` built with `PinnedBackend`, through both libraries' public
    interfaces. Environment proxies are never used: a proxy would resolve names itself, out of the
    guard's reach.
    """

    def __init__(self, policy: AddressPolicy, ssl_context: ssl.SSLContext) -> None:
        limits = httpx.Limits()
        self.pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context, max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections, keepalive_expiry=limits.keepalive_expiry,
            network_backend=PinnedBackend(policy))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send `request` over a pinned connection."""
        url = request.url
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
            headers=request.headers.raw, content=request.stream, extensions=request.extensions)
        try:
            response = await self.pool.handle_async_request(core_request)
        except Exception as error:
            _reraised_as_httpx(error)
        return httpx.Response(status_code=response.status, headers=response.headers,
                              stream=_HttpxStream(response.stream), extensions=response.extensions)

    async def aclose(self) -> None:
        """Close every pooled connection."""
        await self.pool.aclose()
