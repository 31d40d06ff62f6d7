"""API keys that never show themselves: masked in repr, scrubbed from text, kept out of pickles and logs."""

from __future__ import annotations

import base64
import json
import logging
import os
import re
from urllib.parse import quote, quote_plus


class ApiKey:
    """A provider's API key, from the argument or the environment (required at construction).

    - `repr` and `vars()` of the provider show only where the key came from;
    - `scrub(text)` removes the key in every form a URL, a header or JSON may carry it (raw, percent-encoded,
      form-encoded, JSON-escaped, base64); callers scrub before they shorten a text, so no cut can leave
      a key's prefix behind;
    - a key read from the environment pickles as the variable's name and is read again on unpickling;
      a key passed as an argument refuses to be pickled, with an error saying what to do instead.
    """

    __slots__ = ("_value", "env_var", "from_env", "owner")

    def __init__(self, api_key: str | None, env_var: str, owner: str) -> None:
        value = api_key or os.environ.get(env_var)
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{owner} needs an API key: pass api_key=... or set {env_var}")
        self._value = value
        self.env_var = env_var
        self.owner = owner
        self.from_env = not api_key

    def reveal(self) -> str:
        """The key itself, for the request that needs it."""
        return self._value

    def forms(self) -> list[str]:
        """The key as it can appear in URLs, query strings, headers and JSON, longest first."""
        key = self._value
        raw = key.encode()
        encoded = [base64.b64encode(raw), base64.urlsafe_b64encode(raw)]
        forms = {key, quote(key, safe=""), quote(key), quote_plus(key), quote(key, safe="").lower(),
                 json.dumps(key)[1:-1], json.dumps(key, ensure_ascii=False)[1:-1],
                 *(form.decode().rstrip("=") for form in encoded)}
        return sorted((form for form in forms if form), key=len, reverse=True)

    def scrub(self, text: str) -> str:
        """`text` with the key (and its URL-encoded forms) replaced by a mask."""
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


class RedactQueryKeys(logging.Filter):
    """Masks `api_key=...` in records of HTTP client loggers (urllib3 logs request URLs at DEBUG)."""

    pattern = re.compile(r"(api_key=)[^&\s\"']+", re.IGNORECASE)

    def filter(self, record: logging.LogRecord) -> bool:
        """Mask API keys in a log record's message and arguments; always keep the record."""
        message = record.getMessage()
        if "api_key=" in message.lower():
            record.msg, record.args = self.pattern.sub(r"\1***", message), None
        return True


_REDACT = RedactQueryKeys()


def redact_client_logs(*loggers: str) -> None:
    """Install the redacting filter on the named loggers (once each)."""
    for name in loggers:
        target = logging.getLogger(name)
        if _REDACT not in target.filters:
            target.addFilter(_REDACT)
