"""Keep API keys out of everything we print, log or store.

Keys are registered the moment they are read from the environment, so any
string that later leaves the process (error text, JSON report, log line) can be
scrubbed even when a server echoes the key back in an error body.
"""

from __future__ import annotations

import threading

__all__ = ["redact", "register_secret", "registered_secret_count"]

_lock = threading.Lock()
_secrets: set[str] = set()

# Very short values are not scrubbed: replacing every "a" in a report because
# someone set OPENAI_API_KEY=a would destroy the output without protecting anything.
_MIN_LEN = 6


def register_secret(value: str | None) -> None:
    if value and len(value) >= _MIN_LEN:
        with _lock:
            _secrets.add(value)


def registered_secret_count() -> int:
    return len(_secrets)


def redact(text: str) -> str:
    if not _secrets or not text:
        return text
    # Longest first so a key that contains another key is scrubbed whole.
    for secret in sorted(_secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, "***")
    return text
