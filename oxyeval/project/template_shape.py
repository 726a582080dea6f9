"""What a template may look like, checked when it is compiled (when its file loads).

Jinja parses templates recursively and compiles them to Python source, which Python
then compiles in its turn; each step has limits of its own that a template from anyone
can cross: 21 nested ``{% for %}`` are "too many statically nested blocks" for Python,
about 100 nested ``{% if %}`` "too many levels of indentation", a few thousand
``{% elif %}`` or an expression nested a hundred deep a RecursionError, and a template
of a million tags takes a minute to compile. Each surfaced as an internal error with no
file or line. :func:`check_shape` finds them on Jinja's tree first, each at its line
(against the limits in :mod:`oxyeval.project.limits`, well inside what Python allows);
:func:`check_size` counts tokens before the parser starts; and :func:`python_failure`
words anything that still gets through (the same errors from Python's compiler) as a
``TemplateSyntaxError`` at the nearest template line, so that every caller (``oxy
validate`` included) reports bad input, with the file and line, never a crash.
"""

from __future__ import annotations

import re

from jinja2 import TemplateSyntaxError, nodes
from jinja2.lexer import Lexer

from .limits import (
    MAX_TEMPLATE_ELIFS,
    MAX_TEMPLATE_EXPRESSION_DEPTH,
    MAX_TEMPLATE_NESTING,
    MAX_TEMPLATE_TOKENS,
)

__all__ = ["TemplateShapeError", "check_shape", "check_size", "python_failure"]

_DEBUG_INFO = re.compile(r"^debug_info = '([0-9=&]*)'$", re.MULTILINE)


class TemplateShapeError(TemplateSyntaxError):
    """A template nested too deeply, or too large, to compile: bad input, at a line."""


def check_size(lexer: Lexer, source: str, name: str | None, filename: str | None) -> None:
    """More than MAX_TEMPLATE_TOKENS tokens is an error, found before parsing them all.

    A template shorter than the limit in characters cannot have more tokens: only
    long sources are counted (the lexer again, stopping at the limit)."""
    if len(source) <= MAX_TEMPLATE_TOKENS:
        return
    for count, token in enumerate(lexer.tokenize(source, name, filename), 1):
        if count > MAX_TEMPLATE_TOKENS:
            raise TemplateShapeError(
                f"template too large to compile: more than {MAX_TEMPLATE_TOKENS:,} names, "
                "values, operators and pieces of text (move data into a variable or a file)",
                token.lineno,
                name,
                filename,
            )


_BLOCKS = (
    nodes.For,
    nodes.If,
    nodes.Macro,
    nodes.CallBlock,
    nodes.FilterBlock,
    nodes.With,
    nodes.AssignBlock,
    nodes.Block,
    nodes.ScopedEvalContextModifier,
    nodes.OverlayScope,
)


def check_shape(tree: nodes.Template, name: str | None = None, filename: str | None = None) -> None:
    """Raise TemplateShapeError at the first node past a nesting limit (an iterative
    walk: the tree may be deeper than Python's recursion allows)."""

    def fail(message: str, node: nodes.Node) -> TemplateShapeError:
        return TemplateShapeError(message, node.lineno or 1, name, filename)

    # (node, blocks around it, expressions around it)
    stack: list[tuple[nodes.Node, int, int]] = [(tree, 0, 0)]
    while stack:
        node, blocks, depth = stack.pop()
        if isinstance(node, nodes.Expr):
            depth += 1
            if depth > MAX_TEMPLATE_EXPRESSION_DEPTH:
                raise fail(
                    "template expression nested more than "
                    f"{MAX_TEMPLATE_EXPRESSION_DEPTH} levels deep (parentheses, filters, "
                    "operators); split it with {% set %}",
                    node,
                )
        elif not isinstance(node, nodes.Helper):  # a keyword argument, a dict's pair: inside
            depth = 0
        if isinstance(node, _BLOCKS):
            blocks += 1
            if blocks > MAX_TEMPLATE_NESTING:
                raise fail(
                    f"template blocks nested more than {MAX_TEMPLATE_NESTING} deep "
                    "({% for %}, {% if %}, {% macro %}... inside each other); templates "
                    f"are limited to {MAX_TEMPLATE_NESTING}",
                    node,
                )
        if isinstance(node, nodes.If) and len(node.elif_) > MAX_TEMPLATE_ELIFS:
            raise fail(
                f"template has more than {MAX_TEMPLATE_ELIFS} {{% elif %}} branches in one "
                "{% if %}; look the value up in a mapping instead",
                node.elif_[MAX_TEMPLATE_ELIFS],
            )
        # an {% elif %} is an If node in the list of its {% if %}: not one level deeper
        elifs = {id(e) for e in node.elif_} if isinstance(node, nodes.If) else ()
        for child in node.iter_child_nodes():
            stack.append((child, blocks - 1 if id(child) in elifs else blocks, depth))


def _template_line(python_source: str, python_line: int | None) -> int | None:
    """The template line of a line of Jinja's generated Python (its debug_info map)."""
    found = _DEBUG_INFO.search(python_source)
    if not found or not found.group(1) or python_line is None:
        return None
    best = None
    for pair in found.group(1).split("&"):
        template_line, code_line = (int(n) for n in pair.split("="))
        if code_line <= python_line:
            best = template_line
    return best


def python_failure(
    exc: BaseException, python_source: str | None, name: str | None, filename: str | None
) -> TemplateShapeError:
    """A failure of Python's compiler (or Jinja's code generator) on a template, worded
    as a template error at the nearest line Jinja's map gives."""
    detail = exc.msg if isinstance(exc, SyntaxError) else type(exc).__name__
    line = None
    if isinstance(exc, SyntaxError) and python_source is not None:
        line = _template_line(python_source, exc.lineno)
    return TemplateShapeError(
        f"template too complex to compile ({detail}): nest fewer blocks or expressions, "
        "or split the template",
        line or 1,
        name,
        filename,
    )
