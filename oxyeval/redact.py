"""Keep API keys out of everything we print, log, write or store.

Keys are registered the moment they are read from the environment (and, for every
model in config.yml, when the project loads, so commands that only read the history
know them too). Any string that later leaves the process can then be scrubbed, even
when a server or a model echoes the key back.

Where redaction happens, and why there:

1. **Where a model's answer enters.** :meth:`oxyeval.providers.Model.generate`
   redacts a completion's text and its tool-call arguments before anyone sees them.
   Everything downstream (task outputs, the next prompt, SQL a template builds, the
   judge, scoring, exports, the history database) only ever holds ``***``: a key a
   model echoed never flows into a second prompt (possibly to another vendor), an
   SQL query or a file. Two answers that differ only by the key compare as equal
   (both say ``***``), which is what the judge and exact match should see.
2. **At every sink, as defence in depth** for text that did not come from a model
   (SQL rows, variables, cache files or history written by an older version):
   JSON documents (:func:`oxyeval.report.json.write_json`), the consoles and every
   stream the CLI writes through (:class:`RedactingStream`), log lines, workflow exports
   and cache files (read and written), baselines ``oxy cases accept`` writes into
   YAML, and the history store (``case_runner`` redacts what it stores; the store's
   execution writer redacts again).

A key is scrubbed verbatim, in its JSON-escaped and URL-encoded forms (which differ only for keys
with unusual characters), escaped whole (every character as JSON's ``\\u0073``, every byte as
``%73``; lower- or upper-case hex) and base64-encoded (standard and URL-safe, padded or not, as a
whole value); a key re-encoded otherwise (reversed, split across lines, partly escaped, or base64
inside a longer encoded text) is not recognised.

**What a terminal does not show does not hide a key.** A key split by an ANSI escape sequence (a
colour code), a control character or a zero-width character reads whole on a terminal while the
text holds no copy of it. So before matching, such sequences are looked through
(:mod:`oxyeval.terminal`): a key found in what a terminal shows is replaced, with the sequences
inside it, by ``***``; the sequences elsewhere are left as they were.

**One rule for what a secret is made of** (:func:`register_secret`, whoever registers: an API key,
``key_var``, a header from config.yml or from ``env_var``, a database password, a credential in a
URL): the value itself, and the credential inside it: the token of ``Bearer <token>`` (any
``<scheme> <credential>`` header value) and, for ``Basic``, also the decoded ``user:password`` and
its password, since a server that refuses a header echoes the bare token, not the header.
:func:`register_credentials` finds the credentials in a URL or a libpq connection string (a URL's
whole userinfo, user name included, since ``https://TOKEN@host`` is a common way to write a token;
for the history's database URLs only the password; query parameters whose name says credential;
``password=``/``sslpassword=`` keywords) and registers them by the same rule;
:func:`mask_credentials` is how such an address is shown (a credential holding a raw ``/``, ``?``,
``#`` or ``@`` is masked as far as any library reads it); :func:`is_secret_name` is the one list of
names that say "credential" (headers, query parameters, config.yml keys).

**Redact, then cut** (:func:`clip`): every place that shortens text for display or storage redacts
it first, so a cut can never leave most of a key behind, and masks a piece of a secret left at
either edge of what it keeps (text that arrived already cut, by a server or an older version).

Who owns the set: the ``oxy`` process registers for its whole life (one command, one project, and
its report is printed after the run). A long-lived caller (a server, a notebook, a test suite) that
loads many projects scopes it with :func:`secret_scope`: keys registered inside are forgotten on
exit, so the set does not only grow. Scopes may overlap (two evaluations served at once, each in
its own task or thread): a key is forgotten only when no open scope registered it, so one
evaluation ending never unmasks the key another is still using. The current scope follows the
context (``contextvars``), so tasks and ``asyncio.to_thread`` workers register into the scope that
started them. The library's own run functions do not scope by default, because their results are
usually printed by the caller after they return, and that output must still be scrubbed."""

from __future__ import annotations

import base64
import binascii
import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TextIO
from urllib.parse import quote, quote_plus, unquote, unquote_plus

from .terminal import has_invisible, open_escape_start, visible

__all__ = [
    "RedactingPieces",
    "RedactingStream",
    "clip",
    "is_secret_name",
    "mask_credentials",
    "redact",
    "redact_data",
    "register_credentials",
    "register_secret",
    "registered_secret_count",
    "registered_secrets",
    "secret_scope",
    "split_userinfo",
]

_lock = threading.Lock()
_secrets: set[str] = set()  # what is scrubbed: the permanent keys and the scoped ones
_permanent: set[str] = set()  # registered outside any scope: kept for the process's life
_holders: dict[str, int] = {}  # a scoped key -> how many open scopes registered it
_scope: ContextVar[set[str] | None] = ContextVar("oxyeval_secret_scope", default=None)
# Every form we scrub, longest first so a key that contains another key is scrubbed
# whole; rebuilt on registration (rare) rather than sorted on every call (frequent).
_forms: tuple[str, ...] = ()

# Very short values are not scrubbed: replacing every "a" in a report because
# someone set OPENAI_API_KEY=a would destroy the output without protecting anything.
_MIN_LEN = 6


def _variants(value: str) -> set[str]:
    raw = value.encode("utf-8")
    encoded = base64.b64encode(raw).decode("ascii")
    urlsafe = base64.urlsafe_b64encode(raw).decode("ascii")
    # every UTF-16 unit as JSON's \\uXXXX, every byte as %XX: a server or a model may
    # escape all of a value, not only what needs it
    units = value.encode("utf-16-be", "surrogatepass")
    escaped = "".join(f"\\u{units[i]:02x}{units[i + 1]:02x}" for i in range(0, len(units), 2))
    percent = "".join(f"%{byte:02x}" for byte in raw)
    return {
        value,
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
        quote(value, safe=""),
        quote_plus(value, safe=""),
        escaped,
        escaped.replace("\\u", "\\U").upper().replace("\\U", "\\u"),
        percent,
        percent.upper(),
        # a server (or a model told to) may echo a key base64-encoded, as Basic auth does
        encoded,
        encoded.rstrip("="),
        urlsafe,
        urlsafe.rstrip("="),
    }


def _rebuild() -> None:
    global _forms
    forms = {v for s in _secrets for v in _variants(s) if len(v) >= _MIN_LEN}
    _forms = tuple(sorted(forms, key=len, reverse=True))


def register_secret(value: str | None) -> None:
    """Scrub ``value`` and the credential inside it (see the module docstring's one rule)
    from everything printed, logged or stored from now on."""
    if not value:
        return
    for part in _parts(value):
        _register(part)


def _parts(value: str) -> set[str]:
    """``value``, stripped, plus what an HTTP auth header value carries: ``Bearer <token>``
    -> the token; ``Basic <base64>`` -> also ``user:password`` and the password."""
    value = value.strip()
    parts = {value}
    match = _SCHEME.match(value)
    if match:
        credential = match.group(2).strip()
        parts.add(credential)
        if match.group(1).lower() == "basic":
            try:
                decoded = base64.b64decode(credential + "=" * (-len(credential) % 4), validate=True)
                plain = decoded.decode("utf-8")
            except (binascii.Error, ValueError):
                plain = ""
            if ":" in plain:
                parts.update((plain, plain.split(":", 1)[1]))
    return parts


#: ``<scheme> <credential>`` as an Authorization header spells it (RFC 9110: a token,
#: then the credentials); scheme names are short words.
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]{0,30})\s+(\S.*)$", re.S)


def _register(value: str) -> None:
    if len(value) < _MIN_LEN:
        return
    scope = _scope.get()
    if scope is None:
        if value in _permanent:
            return
        with _lock:
            _permanent.add(value)
            _update()
        return
    if value in scope:
        return
    with _lock:
        scope.add(value)
        _holders[value] = _holders.get(value, 0) + 1
        _update()


def _update() -> None:
    """Recompute what is scrubbed (under ``_lock``); rebuild the forms only on a change."""
    wanted = _permanent | _holders.keys()
    if wanted != _secrets:
        _secrets.clear()
        _secrets.update(wanted)
        _rebuild()


@contextmanager
def secret_scope() -> Iterator[None]:
    """Forget, on exit, the secrets registered inside, unless registered outside any
    scope or by another scope still open: for callers that load many projects in one
    process, possibly at once."""
    outer = _scope.get()
    mine: set[str] = set()
    _scope.set(mine)
    try:
        yield
    finally:
        _scope.set(outer)  # not reset(token): the exit may run in another context
        with _lock:
            for value in mine:
                left = _holders.get(value, 0) - 1
                if left > 0:
                    _holders[value] = left
                else:
                    _holders.pop(value, None)
            _update()


def registered_secret_count() -> int:
    return len(_secrets)


def registered_secrets() -> frozenset[str]:
    """What is scrubbed now: for a helper process of ours that must scrub the same."""
    with _lock:
        return frozenset(_secrets)


def redact(text: str) -> str:
    forms = _forms
    if not forms or not text:
        return text
    if has_invisible(text):
        text = _redact_visible(text, forms)
    for form in forms:
        if form in text:
            text = text.replace(form, "***")
    return text


def _redact_visible(text: str, forms: tuple[str, ...]) -> str:
    """``text`` with each secret found in what a terminal shows of it replaced, together
    with the invisible sequences inside it, by ``***``."""
    shown, where = visible(text)
    spans: list[tuple[int, int]] = []
    taken = bytearray(len(shown))
    for form in forms:  # longest first: a key holding another is replaced whole
        at = shown.find(form)
        while at != -1:
            end = at + len(form)
            if not any(taken[at:end]):
                taken[at:end] = b"\x01" * len(form)
                spans.append((where[at], where[end - 1] + 1))
            at = shown.find(form, end)
    for begin, end in sorted(spans, reverse=True):
        text = text[:begin] + "***" + text[end:]
    return text


def redact_data(value: Any) -> Any:
    """``value`` with every string in it (keys included) redacted: for JSON-like data,
    scrubbed before it is serialised so the escaping can never hide a key."""
    if not _forms:
        return value
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact_data(k): redact_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_data(v) for v in value]
    return value


# --------------------------------------------------------------------------- names


#: ``code`` is Azure Functions' key parameter (``https://app.azurewebsites.net/api/f?code=``).
_SECRET_NAME = re.compile(
    r"(?i)auth|key|token|secret|passw|pwd|cookie|signature|credential|session|(?:^|[_-])sig$"
    r"|^code$"
)
#: Names that match the above but hold no secret: the name of a variable holding one
#: (``key_var``, ``password_var``), a path or id (``key_path``, ``key_id``, libpq's
#: ``sslkey`` file), a count (``max_tokens``).
_NOT_SECRET_NAME = re.compile(
    r"(?i)[_-](?:var|path|file|type|id|url|name|method|tokens)$|^max_tokens$"
    r"|^ssl(?:key|cert|rootcert|crl|crldir)$"
)


def is_secret_name(name: object) -> bool:
    """Whether a header, query parameter or config.yml key of this name holds a credential
    (``Authorization``, ``X-Api-Key``, ``api_key``, ``password``, ``sslpassword``, ``sig``,
    ``code``):
    the one list every registration and every mask uses."""
    text = str(name)
    return bool(_SECRET_NAME.search(text)) and not _NOT_SECRET_NAME.search(text)


# --------------------------------------------------------------------------- addresses

_URL_START = re.compile(r"^\s*([A-Za-z][A-Za-z0-9+.\-]*)://")
#: The history's database URLs: their user name is not a secret (it is shown, so a user
#: can tell which role a message is about); every other URL's whole userinfo is.
_DB_SCHEME = re.compile(r"(?i)(?:postgres(?:ql)?|sqlite)(?:\+[a-z0-9_]+)?")
#: What may follow the ``@`` that ends a userinfo: a host (a name or an address, possibly
#: empty, or a bracketed IPv6 address), an optional numeric port, then the end of the URL
#: or its path, query or fragment.
_HOST_AFTER = re.compile(r"(?:\[[^\]/?#@]*\]|[^\s:/?#@\[\]]*)(?::[0-9]*)?(?=[/?#]|\Z)")
#: SQLAlchemy's reading of a userinfo (``make_url``): a user holding no ``:`` or ``/``,
#: then ``:`` and a password up to the first ``@``.
_SQLA_USERINFO = re.compile(r"[^:/]*(?::[^@]*)?@")
#: One ``keyword = value`` of a libpq connection string; a value may be single-quoted,
#: with backslash escapes.
_DSN_PAIR = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*=\s*('(?:[^'\\]|\\.)*'?|[^\s']*)")
_DSN = re.compile(r"\s*" + _DSN_PAIR.pattern + r"(?:\s+" + _DSN_PAIR.pattern + r")*\s*")

#: ``(start, end, the values to register)`` of one credential in a text.
_Span = tuple[int, int, tuple[str, ...]]


def _authority_end(text: str, at: int) -> int:
    """Where the authority starting at ``at`` ends as httpx and ``urllib`` read it: at
    the first ``/``, ``?`` or ``#``."""
    ends = [text.find(stop, at) for stop in "/?#"]
    return min((e for e in ends if e != -1), default=len(text))


def _userinfo_end(text: str, at: int) -> int:
    """The index of the ``@`` that ends the userinfo of the URL whose authority starts at
    ``at``, or -1 when it has none.

    Libraries disagree on a credential holding a raw ``/``, ``?``, ``#`` or ``@``:
    httpx and ``urllib`` end the authority at the first ``/?#`` (``alice:pa/ss@host``
    is host ``alice``, port ``pa``), SQLAlchemy takes everything up to the first ``@``
    after the password's ``:`` (password ``pa/ss``), and a user may mean the last ``@``
    before the host. The userinfo ends at the furthest of these readings, so a
    credential is masked however any of them splits it; the price is that an ``@`` in a
    path or query followed by something host-like (``/v1?mail=a@b.org``) masks the
    host and path before it too.
    """
    ends = [text.rfind("@", at, _authority_end(text, at))]  # httpx, urllib
    sqla = _SQLA_USERINFO.match(text, at)
    if sqla is not None:
        ends.append(sqla.end() - 1)
    found = text.rfind("@", at)
    while found != -1:  # the last '@' followed by a host (then a path, query or the end)
        if _HOST_AFTER.match(text, found + 1):
            ends.append(found)
            break
        found = text.rfind("@", at, found)
    return max(ends)


def _url_userinfo(text: str) -> tuple[int, int] | None:
    """``(start, end)`` of the userinfo of URL ``text`` (``text[end]`` is its ``@``), by
    :func:`_userinfo_end`'s reading; None when it has none or is not a URL."""
    start = _URL_START.match(text)
    if start is None:
        return None
    end = _userinfo_end(text, start.end())
    return None if end == -1 else (start.end(), end)


def split_userinfo(url: str) -> tuple[str, str | None, str] | None:
    """``(user, password, url without its userinfo)`` of ``url``, its userinfo read as
    :func:`mask_credentials` reads it (a password may hold a raw ``/``, ``?``, ``#`` or
    ``@``), both as written (percent-encoded); None when ``url`` has no userinfo. For a
    caller that checks a URL's host, port and path without ever seeing its credentials."""
    found = _url_userinfo(url)
    if found is None:
        return None
    begin, end = found
    user, colon, password = url[begin:end].partition(":")
    return user, (password if colon else None), url[:begin] + url[end + 1 :]


def _credential_spans(text: str) -> list[_Span]:
    """Where the credentials of a URL or a libpq keyword/value string are in ``text``,
    with the values to register for each: as written and as the server gets them."""
    spans: list[_Span] = []
    start = _URL_START.match(text)
    if start is None:
        if "=" not in text or not _DSN.fullmatch(text):
            return spans
        for m in _DSN_PAIR.finditer(text):
            raw = m.group(2)
            if raw and is_secret_name(m.group(1)):
                value = raw
                if raw.startswith("'"):  # quoted: backslash escapes a quote or a backslash
                    value = re.sub(r"\\(.)", r"\1", raw[1:].removesuffix("'"))
                spans.append((m.start(2), m.end(2), (raw, value)))
        return spans
    at = start.end()
    database = _DB_SCHEME.fullmatch(start.group(1)) is not None
    end = _userinfo_end(text, at)
    if end != -1:
        spans.extend(_userinfo_spans(text, at, end, database))
    # Query parameters, as the standard reading finds the query and as it starts past a
    # userinfo that holds a '?'.
    for query in {text.find("?", at), text.find("?", max(at, end))}:
        if query != -1:
            spans.extend(_query_spans(text, query))
    return spans


def _userinfo_spans(text: str, at: int, end: int, database: bool) -> list[_Span]:
    """The credential in ``text[at:end]``: the whole userinfo (a token written as a user
    name, ``https://TOKEN@host``, is as secret as a password), or for a database URL the
    password alone. Registered with it: its user and password, and, when httpx and
    ``urllib`` read the start of the userinfo as a host and a port (a password holding a
    raw ``/``, ``?`` or ``#``), what they read, which their errors quote."""
    userinfo = text[at:end]
    user, colon, password = userinfo.partition(":")
    values = [password, unquote(password)]
    if not database:
        values += [userinfo, unquote(userinfo), user, unquote(user)]
        # An HTTP client sends a URL's userinfo as ``Authorization: Basic base64(user:pass)``
        # and a server may quote that header back: its base64 is the same secret.
        for pair in {f"{user}:{password}", f"{unquote(user)}:{unquote(password)}"}:
            values.append(base64.b64encode(pair.encode("utf-8")).decode("ascii"))
    authority = text[at : _authority_end(text, at)]
    if len(authority) < len(userinfo) and not _HOST_AFTER.fullmatch(authority):
        host, _, port = authority.partition(":")
        values += [port, port.rpartition(":")[2]]
        if not database:
            values.append(host)
    if database:
        return [(at + len(user) + 1, end, tuple(values))] if colon and password else []
    return [(at, end, tuple(values))] if userinfo else []


def _query_spans(text: str, query: int) -> list[_Span]:
    """The values of the credential-named parameters of the query starting at ``text[query]``."""
    spans: list[_Span] = []
    fragment = text.find("#", query)
    stop = len(text) if fragment == -1 else fragment
    offset = query + 1
    for item in re.split(r"[&;]", text[query + 1 : stop]):
        name, sep, value = item.partition("=")
        if sep and value and is_secret_name(unquote_plus(name)):
            first = offset + len(name) + 1
            spans.append((first, first + len(value), (value, unquote_plus(value))))
        offset += len(item) + 1
    return spans


def register_credentials(address: str | None) -> None:
    """Register the credentials written into a URL (``http://TOKEN@host``,
    ``http://alice:secret@host``, ``?password=...``, ``?key=...``) or a libpq connection
    string (``password='x y'``), as written and as the server gets them, by
    :func:`register_secret`'s rule."""
    if not address:
        return
    for _begin, _end, values in _credential_spans(address):
        for value in values:
            register_secret(value)


def mask_credentials(address: str) -> str:
    """A URL or libpq connection string as it may be shown: every credential in it as
    ``***``. A URL's whole userinfo is a credential (``https://***@host/v1``), but for the
    history's database URLs (``postgresql://``, ``sqlite://``) only the password is: the
    user name stays readable (``postgresql://bob:***@host/db``), as do host, port,
    database and the other parameters."""
    merged: list[list[int]] = []
    for begin, end, _values in sorted(_credential_spans(address)):
        if merged and begin <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([begin, end])
    for begin, end in reversed(merged):
        address = address[:begin] + "***" + address[end:]
    return address


# --------------------------------------------------------------------------- cutting

#: The shortest piece of a secret masked at the edge of a text: as short as the shortest
#: secret scrubbed at all (a shorter piece is also the start or end of too many ordinary
#: words, and says next to nothing about the secret).
_EDGE_MIN = _MIN_LEN


def clip(text: str, limit: int, ellipsis: str = "...", *, total: bool = False) -> str:
    """``text`` redacted, then, when longer than ``limit``, cut to its first ``limit``
    characters followed by ``ellipsis`` (``{more}`` in it: how many characters were cut;
    ``total=True``: ``limit`` counts the ellipsis too). Never the reverse: a cut made
    first could split a key and leave most of it readable. A piece of a secret left at
    either edge (text that came already cut) is masked as well, and a cut never splits
    the ``***`` of a redacted key."""
    text = redact(text)
    if len(text) <= limit:
        return _mask_edges(text)
    cut = max(0, limit - len(ellipsis) if total else limit)
    mark = text.rfind("***", max(0, cut - 2), cut + 2)
    if mark != -1 and mark < cut < mark + 3:
        cut = mark
    return _mask_edges(text[:cut]) + ellipsis.replace("{more}", f"{len(text) - cut:,}")


def _mask_edges(text: str) -> str:
    """``text`` without a piece of a registered secret at its start or its end.

    Forms with a space in them (``Bearer <token>``) are left out: their pieces start
    with ordinary words, and the token in them is registered on its own."""
    forms = _forms
    if not forms or len(text) < _EDGE_MIN:
        return text
    for form in forms:
        if " " in form:
            continue
        for size in range(min(len(form) - 1, len(text)), _EDGE_MIN - 1, -1):
            if text.endswith(form[:size]):
                text = text[:-size] + "***"
                break
        for size in range(min(len(form) - 1, len(text)), _EDGE_MIN - 1, -1):
            if text.startswith(form[-size:]):
                text = "***" + text[size:]
                break
    return text


class RedactingStream:
    """A text stream that redacts every write: what the CLI's stdout and stderr go through.

    ``target`` is the stream, or a function returning the stream to use at each write
    (the CLI's streams follow ``sys.stdout``/``sys.stderr`` as pytest or a rich progress
    display swap them).
    Writes are redacted one by one; every writer here emits a line or a whole document
    per write, so a key is never split across two writes.
    """

    def __init__(self, target: TextIO | Callable[[], TextIO]) -> None:
        self._target = target if callable(target) else (lambda: target)

    def write(self, data: str) -> int:
        self._target().write(redact(data))
        return len(data)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding...
        return getattr(self._target(), name)


class RedactingPieces:
    """Text that arrives in pieces (a streamed answer), passed on redacted.

    A key may be split across two pieces, so an end of what arrived that could be the
    beginning of a scrubbed form is held back until the next piece says whether it is:
    complete keys are already replaced in what goes out, and a key's beginning waits
    for its end. :meth:`flush` passes on the rest when the text is complete.
    """

    __slots__ = ("_held", "_target")

    def __init__(self, target: Callable[[str], object]) -> None:
        self._target = target
        self._held = ""

    def write(self, piece: str) -> None:
        text = redact(self._held + piece)
        cut = _held_from(text)
        self._held = text[cut:]
        if cut:
            self._target(text[:cut])

    def flush(self) -> None:
        text, self._held = redact(self._held), ""
        if text:
            self._target(text)


def _held_from(text: str) -> int:
    """Where the end of ``text`` that must wait for the next piece starts: the beginning
    of a scrubbed form, as a terminal would show it (escape sequences inside it looked
    through), or an escape sequence not yet complete."""
    cut = open_escape_start(text)
    if not has_invisible(text[:cut]):
        return cut - _open_prefix(text[:cut])
    shown, where = visible(text[:cut])
    size = _open_prefix(shown)
    return where[len(shown) - size] if size else cut


def _open_prefix(text: str) -> int:
    """The length of the longest end of ``text`` that begins a scrubbed form."""
    longest = 0
    for form in _forms:
        for size in range(min(len(form) - 1, len(text)), longest, -1):
            if text.endswith(form[:size]):
                longest = size
                break
    return longest
