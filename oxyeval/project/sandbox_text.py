"""The sandbox's text filters and methods whose work could outgrow their input.

The sandbox checks the *size* of what an operation makes before making it; some single
calls do far more *work* than their result shows, in C or library code that neither the
render deadline nor a stop request (the first SIGTERM) can interrupt, since both are
checked between operations:

* ``wordwrap`` breaks a long word by re-slicing the rest of it for every line:
  ``("a" * 4000000) | wordwrap(3)`` took 54 s and held SIGTERM for 49. Wrapped here by
  position instead (linear), line by line on the rendering's clock;
* ``trim(chars)`` and ``.strip/.lstrip/.rstrip(chars)`` look each character up in
  ``chars`` by scanning it: a 2,000,000-character text and a 4,000,000-character
  ``chars`` ran for minutes. ``chars`` is reduced to its distinct characters, and past
  64 of them the edges are found with a set (``strip_text``): linear;
* ``urlize`` of a long text is a Python loop over its words, and its result several times
  larger: done in blocks (cut in whitespace, where urlize cuts too), each measured;
* ``round(x, -100000000)`` computes ``10 ** 100000000``: the precision is bounded;
* the ``idna`` and ``punycode`` codecs (``.encode``/``.decode``) do quadratic work: text
  for them is bounded by ``MAX_CODEC_CHARS``; ``namereplace`` writes up to a hundred
  characters per character: checked before; ``int.to_bytes(n)`` allocates ``n`` bytes:
  checked before;
* ``striptags`` is linear from MarkupSafe 3.0 (required in pyproject.toml: 2.x's regex
  is quadratic on a text of ``<`` without ``>``).

Results several times larger than their input (``escape``, ``urlencode``, ``tojson`` of
emoji, ``hex``) and integers made by a call (``int(s, 16)``, ``from_bytes``) are
measured as soon as they are made (``render_budget.check_result``).

Searching (``in``, ``find``, ``count``, ``replace``, ``split``) is linear in CPython
(two-way search for long needles), as are the other str methods; what they make is
checked by size (``sandbox_filters.method_size``, ``sandbox_items.check_split``).
"""

from __future__ import annotations

import codecs
import re
import textwrap
from collections.abc import Callable
from typing import Any

from jinja2 import filters as jinja_filters
from jinja2 import pass_environment, pass_eval_context
from jinja2.nodes import EvalContext
from markupsafe import Markup, escape, soft_str

from . import limits
from .render_budget import TemplateLimitError, check_chars, check_text, current

__all__ = ["check_method", "strip_text", "text_guards"]

_DISTINCT_FROM = 64  # a chars argument longer than this is reduced to its distinct characters
_URLIZE_BLOCK = 1 << 16  # characters urlize handles at a time
_SPACE = re.compile(r"\s")  # where urlize splits words (re.split(r"(\s+)", ...))
_ROUND_DIGITS = limits.MAX_TEMPLATE_INT_BITS * 3 // 10 + 1  # digits of the largest integer
_NAME_CHARS = 100  # namereplace: "\N{...}" with the longest Unicode name is 88 characters
_QUADRATIC_CODECS = frozenset({"idna", "punycode"})


def _distinct(chars: str | bytes) -> str | bytes:
    if isinstance(chars, str):
        return "".join(dict.fromkeys(chars))
    return bytes(dict.fromkeys(chars))


def strip_text(name: str, text: Any, chars: Any) -> Any:
    """``text.strip/lstrip/rstrip(chars)`` (``name``) in linear time, or None when Python's
    own is linear already (a ``chars`` of at most 64 characters, or none).

    Python looks each character up in ``chars`` by scanning it: reduced to its distinct
    characters first (same result), and past 64 of them the edges are found with a set
    instead, a lookup per character. The result is a slice of ``text``, of its type as
    its own strip's is (Markup stays Markup; a str subclass gives a str)."""
    if not isinstance(chars, (str, bytes)) or len(chars) <= _DISTINCT_FROM:
        return None
    if isinstance(chars, str) != isinstance(text, str):
        return None  # Python's own TypeError
    distinct = _distinct(chars)
    if len(distinct) <= _DISTINCT_FROM:
        return getattr(text, name)(distinct)
    members = set(distinct)
    spent = current()
    start, end = 0, len(text)
    if name != "rstrip":
        while start < end and text[start] in members:
            start += 1
            if not start & 0xFFFF:
                spent.tick(0x10000)
    if name != "lstrip":
        while end > start and text[end - 1] in members:
            end -= 1
            if not end & 0xFFFF:
                spent.tick(0x10000)
    return text[start:end]


def check_method(name: str, owner: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """A str, bytes or int method about to be called: its work or allocation is bounded
    (see the module docstring; strips are :func:`strip_text`'s)."""
    what = f".{name}()"
    if name in ("encode", "decode") and isinstance(owner, (str, bytes)):
        _check_codec(owner, args, kwargs, what)
    elif name == "to_bytes" and isinstance(owner, int):
        length = args[0] if args else kwargs.get("length", 1)
        if isinstance(length, int):
            check_chars(length, what)


def _check_codec(
    text: str | bytes, args: tuple[Any, ...], kwargs: dict[str, Any], what: str
) -> None:
    encoding = args[0] if args else kwargs.get("encoding", "utf-8")
    errors = args[1] if len(args) > 1 else kwargs.get("errors", "strict")
    try:
        codec = codecs.lookup(encoding).name
    except (LookupError, TypeError):
        return  # the call raises its own error
    if codec in _QUADRATIC_CODECS and len(text) > limits.MAX_CODEC_CHARS:
        raise TemplateLimitError(
            f"{what} with the {codec} codec of {len(text):,} characters: its work grows with "
            f"the square of the length, and templates are limited to "
            f"{limits.MAX_CODEC_CHARS:,} characters for it (domain names are far shorter)"
        )
    if errors == "namereplace" and isinstance(text, str) and not text.isascii():
        check_chars(len(text) * _NAME_CHARS, f"{what} with namereplace")


# -- filters ---------------------------------------------------------------------------


class _Wrapper(textwrap.TextWrapper):
    """textwrap's greedy wrapping as Jinja's ``wordwrap`` asks for it (no indents, no
    line limit: the only options it sets), with the same lines, but linear: a word too
    long for a line is broken by position (``skip``) instead of re-slicing the rest of it
    for every line, and each line ticks the rendering's clock (deadline, stop flag)."""

    def _wrap_chunks(self, chunks: list[str]) -> list[str]:
        width = self.width
        if width <= 0:
            raise ValueError(f"invalid width {width!r} (must be > 0)")
        spent = current()
        lines: list[str] = []
        chunks.reverse()
        skip = 0  # characters of chunks[-1] already on earlier lines
        words_end = 0  # where chunks[-1]'s last non-whitespace character ends (when skip)
        while chunks:
            cur_line: list[str] = []
            cur_len = 0
            # A first chunk that is whitespace is dropped (also the rest of a broken word
            # that is only Unicode whitespace, which textwrap's str.strip() sees as such).
            if self.drop_whitespace and lines:
                if skip and skip >= words_end:
                    del chunks[-1]
                    skip = 0
                elif not skip and chunks[-1].strip() == "":
                    del chunks[-1]
            while chunks:
                size = len(chunks[-1]) - skip
                if cur_len + size > width:
                    break
                chunk = chunks.pop()
                cur_line.append(chunk[skip:] if skip else chunk)
                skip = 0
                cur_len += size
            if chunks and len(chunks[-1]) - skip > width:  # textwrap's _handle_long_word
                chunk = chunks[-1]
                if self.break_long_words:
                    end = width - cur_len
                    if self.break_on_hyphens:
                        hyphen = chunk.rfind("-", skip, skip + end) - skip
                        if hyphen > 0 and chunk[skip : skip + hyphen].strip("-"):
                            end = hyphen + 1
                    if not skip:
                        words_end = len(chunk.rstrip())
                    cur_line.append(chunk[skip : skip + end])
                    skip += end
                elif not cur_line:
                    cur_line.append(chunks.pop())
                cur_len = sum(map(len, cur_line))
            if self.drop_whitespace and cur_line and cur_line[-1].strip() == "":
                cur_len -= len(cur_line[-1])
                del cur_line[-1]
            if cur_line:
                lines.append("".join(cur_line))
            spent.tick(cur_len + 16)
        return lines


@pass_environment
def _wordwrap(
    environment: Any,
    s: str,
    width: int = 79,
    break_long_words: bool = True,
    wrapstring: str | None = None,
    break_on_hyphens: bool = True,
) -> str:
    """Jinja's ``wordwrap`` (each line of the text wrapped on its own), in linear time;
    the result measured before it is joined."""
    check_text(s, "wordwrap(...)")
    if wrapstring is None:
        wrapstring = environment.newline_sequence
    wrapper = _Wrapper(
        width=width,
        expand_tabs=False,
        replace_whitespace=False,
        break_long_words=break_long_words,
        break_on_hyphens=break_on_hyphens,
    )
    spent = current()
    paragraphs = []
    chars = joins = 0  # of the result: characters of the lines, wrapstrings between them
    for line in s.splitlines():
        lines = wrapper.wrap(line) if line else []  # textwrap's [] for ""
        paragraphs.append(lines)
        if lines:
            joins += len(lines) - 1
            chars += sum(map(len, lines))
        spent.tick(len(line) + 16)
    joins += max(len(paragraphs) - 1, 0)
    check_chars(chars + joins * len(wrapstring), "wordwrap(...)")
    return wrapstring.join([wrapstring.join(p) for p in paragraphs])


def _trim(value: Any, chars: Any = None) -> str:
    text = soft_str(value)
    stripped = strip_text("strip", text, chars)
    return text.strip(chars) if stripped is None else stripped


@pass_eval_context
def _urlize(
    eval_ctx: EvalContext,
    value: Any,
    trim_url_limit: int | None = None,
    nofollow: bool = False,
    target: str | None = None,
    rel: str | None = None,
    extra_schemes: Any = None,
) -> str:
    """Jinja's ``urlize``, a block of the text at a time. urlize escapes the text, splits
    it at whitespace and handles each word alone, so blocks cut just after a whitespace
    character give the same text; each block's result is measured as it is made."""
    check_text(value, "urlize(...)")
    if isinstance(value, str) and len(value) <= _URLIZE_BLOCK // 8:  # one block anyway
        return jinja_filters.do_urlize(
            eval_ctx, value, trim_url_limit, nofollow, target, rel, extra_schemes
        )
    text = str(escape(value))
    spent = current()
    limit = spent.chars
    parts: list[str] = []
    size = pos = 0
    while pos < len(text) or not parts:
        cut = pos + _URLIZE_BLOCK
        if cut < len(text):
            space = _SPACE.search(text, cut)
            cut = space.end() if space else len(text)
        block = Markup(text[pos:cut])  # escaped already
        part = jinja_filters.do_urlize(
            eval_ctx, block, trim_url_limit, nofollow, target, rel, extra_schemes
        )
        size += len(part)
        if size > limit:
            check_chars(size, "urlize(...)")
        spent.tick(len(part))
        parts.append(part)
        pos = cut
    joined = "".join(parts)
    return Markup(joined) if eval_ctx.autoescape else joined


def _round(value: Any, precision: int = 0, method: str = "common") -> Any:
    """``round(x, -n)`` of an integer computes ``10 ** n`` (and ceil/floor always do):
    the precision is bounded by the digits the largest integer has."""
    if isinstance(precision, int) and abs(precision) > _ROUND_DIGITS:
        raise TemplateLimitError(
            f"round(precision={precision:,}): templates are limited to {_ROUND_DIGITS:,} "
            "digits either side of the point"
        )
    return jinja_filters.do_round(value, precision, method)  # type: ignore[arg-type]


def text_guards() -> dict[str, Callable[..., Any]]:
    """The filters of this module, by name, to replace Jinja's own."""
    return {"wordwrap": _wordwrap, "trim": _trim, "urlize": _urlize, "round": _round}
