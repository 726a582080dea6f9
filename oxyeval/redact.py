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

A key is scrubbed verbatim and in its JSON-escaped and URL-encoded forms (which
differ only for keys with unusual characters); a key re-encoded otherwise (base64,
split across lines) is not recognised.

Who owns the set: the ``oxy`` process registers for its whole life (one command, one
project, and its report is printed after the run). A long-lived caller (a server, a
notebook, a test suite) that loads many projects scopes it with :func:`secret_scope`:
keys registered inside are forgotten on exit, so the set does not only grow. Scopes
may overlap (two evaluations served at once, each in its own task or thread): a key
is forgotten only when no open scope registered it, so one evaluation ending never
unmasks the key another is still using. The current scope follows the context
(``contextvars``), so tasks and ``asyncio.to_thread`` workers register into the scope
that started them. The library's own run functions do not scope by default, because
their results are usually printed by the caller after they return, and that output
must still be scrubbed.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TextIO
from urllib.parse import quote, quote_plus

__all__ = [
    "RedactingStream",
    "redact",
    "redact_data",
    "register_secret",
    "registered_secret_count",
    "secret_scope",
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
    return {
        value,
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
        quote(value, safe=""),
        quote_plus(value, safe=""),
    }


def _rebuild() -> None:
    global _forms
    forms = {v for s in _secrets for v in _variants(s) if len(v) >= _MIN_LEN}
    _forms = tuple(sorted(forms, key=len, reverse=True))


def register_secret(value: str | None) -> None:
    if not value or len(value) < _MIN_LEN:
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


def redact(text: str) -> str:
    forms = _forms
    if not forms or not text:
        return text
    for form in forms:
        if form in text:
            text = text.replace(form, "***")
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
