"""Jinja templates from YAML, always rendered in the sandbox.

Agent and test files come from anyone (a repo, a PR); a template must not reach
Python internals, so every template goes through ``SandboxedEnvironment`` with
``StrictUndefined``: a misspelt variable is an error naming the file, key and
line, not an empty string silently sent to a model.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .errors import Diagnostic, LoadError
from .load import Document, KeyPath, format_key_path

if TYPE_CHECKING:
    from jinja2 import Template
    from jinja2.sandbox import SandboxedEnvironment

__all__ = ["TemplateRef", "referenced_names", "render", "template_diagnostics"]


@functools.cache
def _env() -> SandboxedEnvironment:
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    return SandboxedEnvironment(
        undefined=StrictUndefined, keep_trailing_newline=True, autoescape=False
    )


class TemplateRef:
    """A template string and where it came from, so errors can point back at the file."""

    __slots__ = ("_compiled", "_names", "doc", "key", "source")

    def __init__(self, source: str, doc: Document | None = None, key: KeyPath = ()) -> None:
        self.source = source
        self.doc = doc
        self.key = key
        self._compiled: Template | None = None
        self._names: frozenset[str] | None = None

    @property
    def name(self) -> str:
        where = self.doc.display if self.doc else "<string>"
        return f"{where}:{format_key_path(self.key)}" if self.key else where

    def _file_line(self, line_in_template: int | None) -> int | None:
        if self.doc is None or line_in_template is None:
            return None
        return self.doc.text_line(self.key, line_in_template)

    def error(self, message: str, line_in_template: int | None = None) -> LoadError:
        if self.doc is None:
            where = f" (template line {line_in_template})" if line_in_template else ""
            return LoadError([Diagnostic("<string>", message + where)])
        line = self._file_line(line_in_template)
        return LoadError([self.doc.diagnostic(self.key, message, line=line)])

    def compiled(self) -> Template:
        if self._compiled is None:
            from jinja2 import TemplateSyntaxError

            try:
                self._compiled = _env().from_string(self.source)
            except TemplateSyntaxError as exc:
                raise self.error(f"template syntax error: {exc.message}", exc.lineno) from None
        return self._compiled


def template_diagnostics(ref: TemplateRef) -> list[Diagnostic]:
    """Syntax problems of a template as diagnostics (empty when it compiles)."""
    try:
        ref.compiled()
    except LoadError as exc:
        return exc.diagnostics
    return []


def referenced_names(ref: TemplateRef) -> set[str]:
    """Top-level variable names a template reads (for dependency and sanity checks)."""
    if ref._names is None:  # parsed once: compile checks and dependency building all ask
        from jinja2 import meta

        try:
            ref._names = frozenset(meta.find_undeclared_variables(_env().parse(ref.source)))
        except Exception:  # syntax errors are reported by template_diagnostics
            ref._names = frozenset()
    return set(ref._names)


def _template_line(exc: BaseException) -> int | None:
    """Template line of a render error: Jinja rewrites tracebacks to template frames."""
    tb = exc.__traceback__
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def render(ref: TemplateRef, context: Mapping[str, Any]) -> str:
    """Render in the sandbox; any failure becomes a LoadError pointing at the template."""
    from jinja2 import TemplateError, UndefinedError
    from jinja2.sandbox import SecurityError

    template = ref.compiled()
    try:
        return template.render(context)
    except UndefinedError as exc:
        available = ", ".join(sorted(context)) or "none"
        raise ref.error(
            f"template error: {exc.message} (variables available here: {available})",
            _template_line(exc),
        ) from None
    except SecurityError as exc:
        raise ref.error(f"template blocked by the sandbox: {exc}", _template_line(exc)) from None
    except TemplateError as exc:
        raise ref.error(f"template error: {exc}", _template_line(exc)) from None
    except (TypeError, ValueError, ArithmeticError, LookupError, AttributeError) as exc:
        raise ref.error(
            f"template error: {type(exc).__name__}: {exc}", _template_line(exc)
        ) from None
