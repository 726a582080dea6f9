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
Anchors are followed: ``api_key: *k`` registers what ``&k`` holds, wherever the anchor's
line is (see :class:`_Anchors`).
"""

from __future__ import annotations

import re

import yaml

from ..redact import is_secret_name, register_credentials, register_secret
from .limits import MAX_ALIAS_NODES, MAX_YAML_DEPTH

__all__ = ["register_literal_secrets"]

#: ``  - "api_key": value  # comment`` as one line of block YAML.
_LINE = re.compile(r"""^\s*(?:-\s+)?(["']?)([^"':#\s][^"':]*)\1\s*:\s+(.*?)\s*$""")
#: ``&name `` at the start of a value: an anchor.
_ANCHOR = re.compile(r"&([^\s,\[\]{}]+)\s+")


class _Tokens(yaml.SafeLoader):
    """PyYAML's scanner, bounded like the project's loader: flow nesting is quadratic
    to scan, so it stops at the depth the loader refuses anyway."""

    def fetch_flow_collection_start(self, token_class: object) -> None:
        if self.flow_level >= MAX_YAML_DEPTH:
            raise yaml.scanner.ScannerError(None, None, "nested too deep", self.get_mark())
        super().fetch_flow_collection_start(token_class)  # type: ignore[misc]


_STARTS = (
    yaml.BlockMappingStartToken,
    yaml.BlockSequenceStartToken,
    yaml.FlowMappingStartToken,
    yaml.FlowSequenceStartToken,
)
_ENDS = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)
#: Tokens that end an indentless sequence (``key:`` then ``- item`` lines at the key's
#: own indentation) at the depth it was opened at.
_AFTER_INDENTLESS = (
    yaml.KeyToken,
    yaml.ValueToken,
    yaml.BlockEndToken,
    yaml.StreamEndToken,
    yaml.DocumentStartToken,
    yaml.DocumentEndToken,
)


class _Anchors:
    """What each anchor (``&name``) of a file holds, as the scanner meets it: the value
    scalars of its node (a scalar, or every value inside a mapping or list, aliases
    inside resolved), so an alias (``*name``) under a credential-named key registers
    what it stands for, wherever the anchor's line is.

    Values, not mapping keys, are collected (an alias to a mapping under ``api_key:``
    would otherwise register ``name`` or ``vendor``). A merge (``<<: *x``) needs nothing
    more: the credential-named keys it brings in were registered where ``x`` is written.
    The values gathered through aliases are bounded like the loader's alias expansion;
    past that, every scalar anchored from then on is registered (an alias bomb is
    refused by the loader anyway, and its message must not show a key either)."""

    def __init__(self) -> None:
        self.values: dict[str, set[str]] = {}
        self.pending: str | None = None  # an anchor whose node has not started yet
        self.depth = 0
        self.open: list[tuple[str, int, bool]] = []  # (name, depth, indentless)
        self.budget = MAX_ALIAS_NODES
        self.flooded = False

    def add(self, values: set[str] | list[str]) -> None:
        """Values met inside every anchored collection open now."""
        for name, _depth, _indentless in self.open:
            self.values[name].update(values)

    def alias(self, name: str) -> set[str]:
        """What ``*name`` stands for, added to the anchored collections it is inside."""
        found = self.values.get(name, set())
        if self.open and not self.flooded:
            self.budget -= len(found) * len(self.open)
            self.flooded = self.budget < 0
            if not self.flooded:
                self.add(found)
        return found

    def token(self, token: yaml.Token, value_expected: bool) -> None:
        """Follow nesting and anchors through one token (before it is read otherwise)."""
        if isinstance(token, _AFTER_INDENTLESS):
            self.open = [o for o in self.open if not (o[2] and o[1] == self.depth)]
        if isinstance(token, yaml.AnchorToken):
            self.pending = token.value
            return
        if isinstance(token, yaml.TagToken):
            return
        name, self.pending = self.pending, None
        if isinstance(token, yaml.ScalarToken):
            if name is not None:
                self.values[name] = {token.value}
                if self.flooded:
                    register_secret(token.value)
            if value_expected:  # a value or a list item, not a mapping's key
                self.add([token.value])
        elif isinstance(token, _STARTS):
            if name is not None:
                self.values[name] = set()
                self.open.append((name, self.depth, False))
            self.depth += 1
        elif isinstance(token, _ENDS):
            self.depth -= 1
            self.open = [o for o in self.open if o[2] or o[1] < self.depth]
        elif isinstance(token, yaml.BlockEntryToken) and name is not None:
            self.values[name] = set()
            self.open.append((name, self.depth, True))


def register_literal_secrets(text: str) -> None:
    """Register every literal credential in ``text`` (see the module docstring)."""
    scanner = _Tokens(text)
    lines = text.splitlines()
    anchors = _Anchors()
    stopped_at: int | None = None  # the line the scanner gave up on (0-based)
    key: str | None = None
    expect: str | None = None  # "key" after a KeyToken, "value" after a ValueToken
    token: yaml.Token | None = None
    try:
        while True:
            previous, token = token, scanner.get_token()
            if token is None:
                break
            anchors.token(token, expect != "key")
            if isinstance(token, yaml.KeyToken):
                expect, key = "key", None
            elif isinstance(token, yaml.ValueToken):
                if isinstance(previous, yaml.ScalarToken):
                    # A key the scanner did not mark (inside a broken flow collection,
                    # ``[a: b``, no KeyToken comes first): the scalar before the ':'.
                    key = previous.value
                expect = "value"
            elif isinstance(token, yaml.ScalarToken):
                _scalar(token.value, key if expect == "value" else None)
                first, last = token.start_mark.line, token.end_mark.line
                if expect == "value" and first != last:
                    # A quote left open swallows the lines after it; the line it opened on
                    # is what a diagnostic would quote, and the lines it swallowed are
                    # read by eye (``api_key: x`` there is what the user meant).
                    _scalar(_first_line(text, token.start_mark), key)
                    if token.style in ("'", '"'):
                        for line in lines[first + 1 : last + 1]:
                            _line(line, anchors.values)
                if expect == "key":
                    key = token.value
                expect = None
            elif isinstance(token, yaml.AliasToken):
                found = anchors.alias(token.value)
                if expect == "value":
                    for value in found:
                        _scalar(value, key)
                elif expect == "key":  # *name as a key: the key it stands for
                    key = next(iter(found)) if len(found) == 1 else None
                    continue  # the ValueToken follows
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
        for line in lines[stopped_at:]:
            _line(line, anchors.values)


def _first_line(text: str, mark: yaml.Mark) -> str:
    """What follows ``mark`` on its line, without the opening quote."""
    line = text[mark.index :].split("\n", 1)[0]
    return line.lstrip("'\"|>-+ ").strip()


def _scalar(value: str, key: str | None) -> None:
    if key is not None and is_secret_name(key):
        register_secret(value)
    if "://" in value or "=" in value:
        register_credentials(value.strip())


def _line(line: str, anchors: dict[str, set[str]]) -> None:
    """One line the scanner did not reach: ``name: value`` read by eye, as a user wrote it
    (``name: &a value`` anchors ``value``; ``name: *a`` stands for what ``a`` holds)."""
    match = _LINE.match(line)
    if match is None:
        return
    value = match.group(3)
    anchor = _ANCHOR.match(value)
    if anchor is not None:
        value = value[anchor.end() :]
    if value[:1] in ("'", '"'):
        value = value[1:].split(value[0], 1)[0]
    else:
        value = value.split(" #", 1)[0].strip()
    if anchor is not None:
        anchors[anchor.group(1)] = {value}
    name = match.group(2).strip()
    if value.startswith("*") and value[1:] in anchors:
        for found in anchors[value[1:]]:
            _scalar(found, name)
    else:
        _scalar(value, name)
