"""Regular expressions written in project files, run in linear time.

A pattern from a project file (a variable schema's ``pattern`` or ``patternProperties``,
a mock model's ``rules: match:``) is matched against text the program does not control
(a ``--var``, a model's answer, a tool's result). Python's ``re`` backtracks: ``(a+)+$``
against 40 characters runs for minutes inside C code, where neither a deadline nor
SIGTERM reaches it. Every such pattern therefore goes through :func:`compile_pattern`,
which compiles it with RE2 (google-re2): matching takes time linear in the text, and
compiling is bounded by RE2's memory budget (a pattern too large is an error), so no
pattern can hang a run or exhaust memory. One dimension escapes that budget: RE2 keeps
every capture group's position in each of its threads, so a search with N groups takes
memory (and time) that grows as N times the pattern's size, quadratic in N (12,000 groups,
a 24 KB pattern, took 2.3 GB for one search). A pattern has at most
:data:`MAX_PATTERN_GROUPS` groups; past that it is refused where it is written. A time bound on a backtracking engine (the
``regex`` package's ``timeout=``) was the other candidate; it leaves compiling unbounded
(``(?:a{1000}){1000}`` alone allocates hundreds of MB there) and turns a slow machine
into spurious failures.

The price: RE2 has no lookarounds, backreferences, possessive quantifiers, atomic
groups or verbose mode, and repeat counts stop at 1000. Such a pattern is refused where it is written
(``file:line: key``), with the reason. The rest is Python's syntax, with Python's
meaning: ``\\w``, ``\\d`` and ``\\s`` match Unicode letters, digits and spaces as in
``re`` (they are rewritten into RE2's Unicode classes; RE2's own are ASCII), and
``\\Z`` is the end of the text. ``\\b`` stays RE2's ASCII word boundary.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_PATTERN_GROUPS", "Pattern", "PatternError", "compile_pattern"]

#: Capture groups of one pattern (``(...)`` and ``(?P<name>...)``; ``(?:...)`` does not
#: count). Python's ``re`` itself allowed 100 until 3.5; no rule needs more.
MAX_PATTERN_GROUPS = 100


class PatternError(ValueError):
    """A pattern RE2 cannot compile; the message says why (never a traceback)."""


# Python's Unicode classes in RE2's terms. Inside a character class only the positive
# ones can be spelt (a negated class cannot be a member of another); there RE2's ASCII
# \W, \D and \S stay.
_WORD = r"\p{L}\p{N}_"
_SPACE = r"\t\n\v\f\r\x1c-\x1f\x85\p{Z}"
_OUTSIDE = {
    "w": f"[{_WORD}]",
    "W": f"[^{_WORD}]",
    "d": r"\p{Nd}",
    "D": r"\P{Nd}",
    "s": f"[{_SPACE}]",
    "S": f"[^{_SPACE}]",
    "Z": r"\z",
}
_INSIDE = {"w": _WORD, "d": r"\p{Nd}", "s": _SPACE}


def _translate(source: str) -> str:
    """``source`` (Python syntax) with the escapes whose meaning differs in RE2 rewritten."""
    out: list[str] = []
    i, n = 0, len(source)
    in_class = False
    class_open = -1  # index just past '[' or '[^': a ']' there is a literal
    while i < n:
        char = source[i]
        if char == "\\" and i + 1 < n:
            escape = source[i + 1]
            table = _INSIDE if in_class else _OUTSIDE
            out.append(table.get(escape, char + escape))
            i += 2
            continue
        if in_class:
            if char == "]" and i != class_open:
                in_class = False
        elif char == "[":
            in_class = True
            class_open = i + 1
            if i + 1 < n and source[i + 1] == "^":
                out.append("[^")
                class_open = i + 2
                i += 2
                continue
        out.append(char)
        i += 1
    return "".join(out)


class Pattern:
    """A compiled pattern: ``search`` as ``re.Pattern.search`` does, in linear time."""

    def __init__(self, source: str, compiled: Any) -> None:
        self.source = source
        self._compiled = compiled

    @property
    def groups(self) -> int:
        return int(self._compiled.groups)

    @property
    def groupindex(self) -> Mapping[str, int]:
        return dict(self._compiled.groupindex)

    def search(self, text: str) -> Any:
        """The first match in ``text`` (with ``group(n)``/``group(name)``), or None."""
        try:
            return self._compiled.search(text)
        except UnicodeEncodeError:  # a lone surrogate RE2 cannot encode: match its stand-in
            from .inputs import valid_text

            return self._compiled.search(valid_text(text))

    def __repr__(self) -> str:
        return f"Pattern({self.source!r})"


@functools.lru_cache(maxsize=1024)
def compile_pattern(source: str) -> Pattern:
    """``source`` compiled for linear-time matching, or PatternError saying why it cannot be.

    Cached: a mock rule or a schema pattern is compiled once per process, not per call.
    """
    import re2

    options = re2.Options()
    options.log_errors = False  # RE2 would print its own message on the process's fd 2
    try:
        compiled = re2.compile(_translate(source), options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "invalid pattern"
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise PatternError(f"{reason}{_hint(str(reason))}") from None
    except (UnicodeEncodeError, TypeError) as exc:
        raise PatternError(f"not a usable pattern ({type(exc).__name__})") from None
    if compiled.groups > MAX_PATTERN_GROUPS:
        # Compiling is cheap and bounded; a search is what would cost N x the pattern.
        raise PatternError(
            f"{compiled.groups:,} capture groups; a pattern has at most {MAX_PATTERN_GROUPS} "
            "(write (?:...) for a group that captures nothing)"
        )
    if _FIXED.fullmatch(source):
        # Literal text, '.' and a leading '^' only: a match has the pattern's length, so
        # Python's engine is linear in the text too, with the same meaning, and it keeps
        # the GIL (RE2's binding lets it go on every search, and getting it back waits
        # behind any busy worker thread: most of a mock model's time in a large run).
        compiled = re.compile(source)
    return Pattern(source, compiled)


#: Patterns Python's ``re`` runs in linear time with RE2's meaning: no quantifier,
#: group, alternation, class, escape or ``$`` (which ``re`` also lets match before a
#: final newline).
_FIXED = re.compile(r"\^?[^\\*+?{}()|\[\]$^]*")


def _hint(reason: str) -> str:
    """What the reader can do about a feature RE2 refuses."""
    known = ("perl operator", "escape sequence", "repetition size", "repetition operator")
    if any(word in reason for word in known):
        return (
            " (oxyeval matches patterns with RE2, in time linear in the text: lookarounds, "
            "backreferences, possessive and atomic groups and verbose mode (?x) are not "
            "supported, nor repeat counts above 1000, nested ones multiplied)"
        )
    if "too large" in reason:
        return " (the pattern compiles to more than RE2's memory budget; simplify it)"
    return ""
