"""API keys that never show themselves: masked in repr, scrubbed from text, kept out of pickles and logs."""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import weakref
from urllib.parse import quote, quote_plus

__all__ = ["CLIENT_LOGGERS", "ApiKey", "scrub_all"]


class ApiKey:
    """A provider's API key, from the argument or the environment (required at construction).

    - `repr` and `vars()` of the provider show only where the key came from;
    - `scrub(text)` removes the key in every form a URL, a header or JSON may carry it (raw, percent-encoded,
      form-encoded, JSON-escaped, base64); callers scrub before they shorten a text, so no cut can leave
      a key's prefix behind;
    - a key read from the environment pickles as the variable's name and is read again on unpickling;
      a key passed as an argument refuses to be pickled, with an error saying what to do instead.
    """

    __slots__ = ("__weakref__", "_forms", "_value", "env_var", "from_env", "owner")

    def __init__(self, api_key: str | None, env_var: str, owner: str) -> None:
        value = api_key or os.environ.get(env_var)
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{owner} needs an API key: pass api_key=... or set {env_var}")
        self._value = value
        self.env_var = env_var
        self.owner = owner
        self.from_env = not api_key
        self._forms: list[str] | None = None
        _LIVE_KEYS.add(self)
        scrub_client_logs()

    def reveal(self) -> str:
        """The key itself, for the request that needs it."""
        return self._value

    def forms(self) -> list[str]:
        """The key as it can appear in URLs, query strings, headers and JSON, longest first: raw, percent-
        and form-encoded, JSON-escaped (also with `\\/` for `/`), and base64 (standard and URL-safe) at any
        alignment, so also inside the base64 of `Bearer KEY` or `user:KEY` (Basic authorization)."""
        if self._forms is None:
            key = self._value
            escaped = json.dumps(key)[1:-1]
            forms = {key, quote(key, safe=""), quote(key), quote_plus(key), quote(key, safe="").lower(), escaped,
                     json.dumps(key, ensure_ascii=False)[1:-1], escaped.replace("/", "\\/"),
                     *_base64_cores(key.encode())}
            self._forms = sorted((form for form in forms if form), key=len, reverse=True)
        return self._forms

    def scrub(self, text: str) -> str:
        """`text` with the key (and its encoded forms) replaced by a mask."""
        for form in self.forms():
            text = text.replace(form, "***")
        return text

    def __repr__(self) -> str:
        return f"ApiKey(from ${self.env_var})" if self.from_env else "ApiKey(***)"

    def __reduce__(self) -> tuple:
        if not self.from_env:
            raise TypeError(f"{self.owner} was given its API key as an argument, and keys are never pickled: "
                            f"set {self.env_var} instead (it is read again when the object is unpickled)")
        return ApiKey, (None, self.env_var, self.owner)


def _base64_cores(raw: bytes, least: int = 8) -> set[str]:
    """The parts of the base64 of `raw` that stay the same whatever bytes come before or after it: for each
    of the 3 alignments `raw` can start at, the characters of the groups it fills alone (both alphabets)."""
    cores = set()
    for offset in range(3):
        padded = bytes(offset) + raw
        first, last = -(-offset // 3), len(padded) // 3  # whole groups of raw alone: [first, last)
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            core = encode(padded)[4 * first:4 * last].decode()
            if len(core) >= least:
                cores.add(core)
    return cores


#: Every key a provider holds now: log records of the HTTP clients are scrubbed of all of them.
_LIVE_KEYS: weakref.WeakSet[ApiKey] = weakref.WeakSet()
#: The loggers that may see a key: crag's, the HTTP clients' (request URLs, headers echoed at DEBUG) and
#: the official clients'. A filter on a logger sees the records created on it, so each is named.
CLIENT_LOGGERS = ("crag", "haystack_integrations.crag", "httpx", "httpcore.http11", "httpcore.http2",
                  "httpcore.connection", "httpcore.proxy", "urllib3.connectionpool", "urllib3.util.retry",
                  "requests", "serpapi", "tavily", "exa_py", "ddgs")


def scrub_all(text: str) -> str:
    """`text` without any live key, in any of its forms, and without `api_key=...` values."""
    for key in list(_LIVE_KEYS):
        text = key.scrub(text)
    return _QUERY_KEY.sub(r"\1***", text) if "api_key=" in text.lower() else text


_QUERY_KEY = re.compile(r"(api_key=)[^&\s\"']+", re.IGNORECASE)


class ScrubKeys(logging.Filter):
    """Scrubs every live key (`scrub_all`) from a log record's message and its formatted traceback; always
    keeps the record."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Mask the keys in the record; keep it."""
        message = record.getMessage()
        scrubbed = scrub_all(message)
        if scrubbed != message:
            record.msg, record.args = scrubbed, None
        if record.exc_info and not record.exc_text:
            record.exc_text = scrub_all(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = scrub_all(record.exc_text)
        return True


_SCRUB = ScrubKeys()


def scrub_client_logs(*loggers: str) -> None:
    """Install the scrubbing filter on `CLIENT_LOGGERS` and the named loggers (once each)."""
    for name in (*CLIENT_LOGGERS, *loggers):
        target = logging.getLogger(name)
        if _SCRUB not in target.filters:
            target.addFilter(_SCRUB)
