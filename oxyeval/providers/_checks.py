"""What a model's entry must satisfy before a request can be built from it.

Checked when config.yml loads (literal header values, ``api_url``) and when a header's
value is read from the environment, so a bad one is bad input, named at its place, before
any call: otherwise httpx sends a header value with a line break as it is (a request the
server reads as two headers, or refuses), fails on a non-ASCII one with a
UnicodeEncodeError, and an ``api_url`` it cannot parse surfaces only at the first call,
where it was retried as a network error.
"""

from __future__ import annotations

import re

from ..redact import redact, split_userinfo

__all__ = ["api_url_problem", "header_problem", "value_problem"]

# RFC 9110 token characters: what a header name may be made of.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# A value: visible ASCII, spaces and tabs (no CR, LF, NUL or other control characters).
_VALUE = re.compile(r"[\t\x20-\x7e]*")


def header_problem(name: str, value: str, source: str = "its value") -> str | None:
    """Why HTTP header ``name: value`` cannot be sent (None when it can). ``source``
    says where the value comes from, for the message; the value itself is never shown
    (it is often a credential)."""
    if not _TOKEN.fullmatch(name):
        return (
            f"header name {name!r} is not a valid HTTP header name (letters, digits and "
            "!#$%&'*+-.^_`|~ only: no spaces or colons)"
        )
    problem = value_problem(value)
    if problem is not None:
        return (
            f"header '{name}': {source} holds {problem}; a header value is one line of ASCII text"
        )
    return None


def value_problem(value: str) -> str | None:
    """What in ``value`` no HTTP header can carry (an API key becomes one too), in words
    that do not show the value: ``"a line break (CR or LF)"``; None when it is fine."""
    if _VALUE.fullmatch(value):
        return None
    bad = next(ch for ch in value if not _VALUE.fullmatch(ch))
    if bad in "\r\n":
        return "a line break (CR or LF)"
    if ord(bad) < 0x20 or ord(bad) == 0x7F:
        return f"the control character U+{ord(bad):04X}"
    return f"the non-ASCII character U+{ord(bad):04X}"


def api_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a model's base URL (None when it can): an http(s) URL with a
    host, a valid port and no spaces or control characters."""
    from urllib.parse import urlsplit

    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in url):
        return "api_url holds a space or a control character"
    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError for a port that is not a number in range
    except ValueError as exc:
        authority = re.split(r"[/?#]", url.partition("://")[2], maxsplit=1)[0]
        if split_userinfo(url) is not None and "@" not in authority:
            # The credentials run past the first '/', '?' or '#', where httpx and urllib
            # end the host: urllib's words would quote a piece of the password as "port".
            return (
                "api_url is not a valid URL: its user name or password holds a raw '/', "
                "'?' or '#'; percent-encode them (%2F, %3F, %23)"
            )
        return f"api_url is not a valid URL ({redact(str(exc))})"
    if parts.scheme.lower() not in ("http", "https"):
        return "api_url must start with http:// or https://"
    if not parts.hostname:
        return "api_url names no host (write http://host:port/v1)"
    if port == 0:
        return "api_url has port 0; a port is 1-65535"
    return None
