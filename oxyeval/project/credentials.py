"""Credentials written into a project file, known before anything quotes the file.

A diagnostic quotes its source line, and a schema error, a duplicate key or a YAML
syntax error can sit on the line (or the flow mapping) that holds ``api_key: sk-...``
or ``Authorization: Bearer ...``. The values of a model entry are registered as
secrets once the file has passed its schema; that is too late for those messages. So
the raw text of a file that can hold credentials (``config.yml``) is read here first,
token by token (a file that is not valid YAML past some point still yields everything
before it, and a line-by-line reading covers the rest), and every literal credential
is registered (:mod:`oxyeval.redact`) before the file is parsed, so every diagnostic,
whatever it quotes, prints ``***``.

What counts: a string under a key whose name says credential
(:func:`oxyeval.redact.is_secret_name`: ``api_key``, ``Authorization``, ``X-Api-Key``,
``password``, ``secret``, ...; not ``key_var``, ``password_var`` or ``max_tokens``),
and the credentials of any URL or libpq connection string in the file (``api_url:
http://alice:secret@host``, ``history.url: postgresql://bob@h/db?password=...``).
"""

from __future__ import annotations

import re

import yaml

from ..redact import is_secret_name, register_credentials, register_secret
from .limits import MAX_YAML_DEPTH

__all__ = ["register_literal_secrets"]

#: ``  - "api_key": value  # comment`` as one line of block YAML.
_LINE = re.compile(r"""^\s*(?:-\s+)?(["']?)([^"':#\s][^"':]*)\1\s*:\s+(.*?)\s*$""")


class _Tokens(yaml.SafeLoader):
    """PyYAML's scanner, bounded like the project's loader: flow nesting is quadratic
    to scan, so it stops at the depth the loader refuses anyway."""

    def fetch_flow_collection_start(self, token_class: object) -> None:
        if self.flow_level >= MAX_YAML_DEPTH:
            raise yaml.scanner.ScannerError(None, None, "nested too deep", self.get_mark())
        super().fetch_flow_collection_start(token_class)  # type: ignore[misc]


def register_literal_secrets(text: str) -> None:
    """Register every literal credential in ``text`` (see the module docstring)."""
    scanner = _Tokens(text)
    stopped_at: int | None = None  # the line the scanner gave up on (0-based)
    key: str | None = None
    expect: str | None = None  # "key" after a KeyToken, "value" after a ValueToken
    try:
        while True:
            token = scanner.get_token()
            if token is None:
                break
            if isinstance(token, yaml.KeyToken):
                expect, key = "key", None
            elif isinstance(token, yaml.ValueToken):
                expect = "value"
            elif isinstance(token, yaml.ScalarToken):
                _scalar(token.value, key if expect == "value" else None)
                if expect == "value" and token.start_mark.line != token.end_mark.line:
                    # A quote left open swallows the lines after it; the line it opened on
                    # is what a diagnostic would quote.
                    _scalar(_first_line(text, token.start_mark), key)
                if expect == "key":
                    key = token.value
                expect = None
            elif not isinstance(token, (yaml.AnchorToken, yaml.TagToken)):
                expect = None
    except yaml.YAMLError as exc:
        # From where the broken part starts (an unclosed quote: its context mark).
        marks = [getattr(exc, name, None) for name in ("context_mark", "problem_mark")]
        stopped_at = min((m.line for m in marks if m is not None), default=0)
    finally:
        scanner.dispose()
    if stopped_at is not None:
        for line in text.splitlines()[stopped_at:]:
            _line(line)


def _first_line(text: str, mark: yaml.Mark) -> str:
    """What follows ``mark`` on its line, without the opening quote."""
    line = text[mark.index :].split("\n", 1)[0]
    return line.lstrip("'\"|>-+ ").strip()


def _scalar(value: str, key: str | None) -> None:
    if key is not None and is_secret_name(key):
        register_secret(value)
    if "://" in value or "=" in value:
        register_credentials(value.strip())


def _line(line: str) -> None:
    """One line the scanner did not reach: ``name: value`` read by eye, as a user wrote it."""
    match = _LINE.match(line)
    if match is None:
        return
    value = match.group(3)
    if value[:1] in ("'", '"'):
        value = value[1:].split(value[0], 1)[0]
    else:
        value = value.split(" #", 1)[0].strip()
    _scalar(value, match.group(2).strip())
