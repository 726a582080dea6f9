"""Jinja templates from YAML, always rendered in the sandbox.

Agent and test files come from anyone (a repo, a PR); a template must not reach
Python internals, so every template goes through ``SandboxedEnvironment`` with
``StrictUndefined``: a misspelt variable is an error naming the file, key and
line, not an empty string silently sent to a model. The sandbox also bounds what
a template may allocate (``sandbox.py``): a breach is the same kind of error.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import Diagnostic, LoadError
from .document import Document, KeyPath, format_key_path
from .limits import render_limit

if TYPE_CHECKING:
    from jinja2 import Template

    from .sandbox import LimitedSandbox

__all__ = [
    "JINJA_NAMES",
    "TemplateRef",
    "answer_prompt",
    "attribute_chains",
    "attribute_reads",
    "environment",
    "evaluate",
    "loop_only_reads",
    "referenced_names",
    "render",
    "subscripts",
    "template_diagnostics",
    "template_tree",
]


#: Names Jinja itself provides, so a template may use them without a variable or a task.
JINJA_NAMES = frozenset(
    {
        "range",
        "dict",
        "lipsum",
        "cycler",
        "joiner",
        "namespace",
        "loop",
        "true",
        "false",
        "none",
        "True",
        "False",
        "None",
        "self",
        "varargs",
        "kwargs",
        "caller",
    }
)


@functools.cache
def environment() -> LimitedSandbox:
    """The one sandboxed Jinja environment every template renders in (SQL templates
    overlay it): strict undefined variables, size limits, no access to internals."""
    from jinja2 import StrictUndefined
    from jinja2.utils import missing

    from .sandbox import LimitedSandbox  # the sandbox with size limits (see sandbox.py)

    class NamedUndefined(StrictUndefined):
        """A missing attribute or item, worded for the person who wrote the template.

        Jinja names the Python class (``'oxyeval.workflow.sql.SqlResult object' has no
        attribute 'nope'``), which means nothing to them. A value the engine puts into
        templates explains itself through a ``_template_missing(name)`` method (the
        sandbox keeps templates from calling it); any other class is named without its
        module.
        """

        __slots__ = ()

        @property
        def _undefined_message(self) -> str:
            obj, name = self._undefined_obj, self._undefined_name
            if self._undefined_hint is None and obj is not missing:
                explain = getattr(type(obj), "_template_missing", None)
                if explain is not None:
                    return str(explain(obj, name))
                cls = type(obj)
                if cls.__module__ != "builtins" and obj is not None:
                    what = "element" if not isinstance(name, str) else "attribute"
                    return f"'{cls.__name__} object' has no {what} {name!r}"
            return str(super()._undefined_message)

    return LimitedSandbox(undefined=NamedUndefined, keep_trailing_newline=True, autoescape=False)


class TemplateRef:
    """A template string and where it came from, so errors can point back at the file."""

    __slots__ = ("_compiled", "_names", "_plain", "doc", "key", "source")

    def __init__(self, source: str, doc: Document | None = None, key: KeyPath = ()) -> None:
        self.source = source
        self.doc = doc
        self.key = key
        self._compiled: Template | None = None
        self._names: frozenset[str] | None = None
        self._plain: tuple[tuple[bool, str], ...] | bool | None = False  # False: not known

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
                self._compiled = environment().from_string(self.source)
            except TemplateSyntaxError as exc:
                raise self.syntax_error(exc) from None
        return self._compiled

    def syntax_error(self, exc: Exception) -> LoadError:
        """A compile failure, pointing at its line: a shape limit (nested too deeply, too
        large) says so in its own words, other syntax errors say they are one."""
        from .template_shape import TemplateShapeError

        message = str(getattr(exc, "message", None) or exc)
        if not isinstance(exc, TemplateShapeError):
            message = f"template syntax error: {message}"
        return self.error(message, getattr(exc, "lineno", None))


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
            ref._names = frozenset(meta.find_undeclared_variables(environment().parse(ref.source)))
        except Exception:  # syntax errors are reported by template_diagnostics
            ref._names = frozenset()
    return set(ref._names)


def template_tree(ref: TemplateRef) -> Any:
    """The template's Jinja syntax tree, for static checks; None when it does not parse
    (its syntax error is reported by :func:`template_diagnostics`)."""
    try:
        return environment().parse(ref.source)
    except Exception:
        return None


def attribute_reads(ref: TemplateRef, name: str) -> list[tuple[str, int]]:
    """The attributes a template reads of the variable ``name`` it is given (``name.x``,
    ``name['x']``), with their template lines. Nothing when the template sets ``name``
    itself (``{% set %}``, a loop or macro argument: it is then another value) or does
    not parse (its syntax error is reported instead)."""
    from jinja2 import nodes

    tree = template_tree(ref)
    if tree is None:
        return []
    if any(n.name == name and n.ctx in ("store", "param") for n in tree.find_all(nodes.Name)):
        return []
    return subscripts(tree, name)


def subscripts(tree: Any, name: str) -> list[tuple[str, int]]:
    """``name.x`` and ``name['x']`` read anywhere under the Jinja node ``tree``."""
    from jinja2 import nodes

    found = []
    for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
        inner = node.node
        if not (isinstance(inner, nodes.Name) and inner.name == name and inner.ctx == "load"):
            continue
        if isinstance(node, nodes.Getattr):
            found.append((node.attr, node.lineno))
        elif isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str):
            found.append((node.arg.value, node.lineno))
    return found


def attribute_chains(ref: TemplateRef, name: str) -> list[tuple[tuple[str | int, ...], int]]:
    """The constant paths a template reads below the variable ``name``, each with its
    template line: ``databases.local.datasets.duckdb`` reads ``("local", "datasets",
    "duckdb")``, ``name['x'][0]`` reads ``("x", 0)``. Each read counts once, by its
    longest constant path (its prefixes are read with it); below a computed key
    (``name[k].x``) nothing is known of the path. Nothing when the template sets ``name``
    itself or does not parse, as for :func:`attribute_reads`."""
    from jinja2 import nodes

    tree = template_tree(ref)
    if tree is None:
        return []
    if any(n.name == name and n.ctx in ("store", "param") for n in tree.find_all(nodes.Name)):
        return []
    reads = list(tree.find_all((nodes.Getattr, nodes.Getitem)))
    inner = {id(n.node) for n in reads}
    found = []
    for outer in reads:
        if id(outer) in inner:
            continue
        keys: list[str | int] = []
        node: Any = outer
        while isinstance(node, (nodes.Getattr, nodes.Getitem)):
            if isinstance(node, nodes.Getattr):
                keys.append(node.attr)
            elif isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, (str, int)):
                keys.append(node.arg.value)
            else:
                keys = []  # a computed key: what was read above it is unknown
            node = node.node
        if isinstance(node, nodes.Name) and node.name == name and node.ctx == "load" and keys:
            found.append((tuple(reversed(keys)), outer.lineno))
    return found


def loop_only_reads(ref: TemplateRef, name: str) -> set[str]:
    """Attributes of ``name`` the template reads only as what a ``{% for %}`` loops over
    (``{% for q in context.queries %}``), never printed or tested elsewhere."""
    from jinja2 import nodes

    tree = template_tree(ref)
    if tree is None:
        return set()
    looped = {
        id(loop.iter)
        for loop in tree.find_all(nodes.For)
        if isinstance(loop.iter, (nodes.Getattr, nodes.Getitem))
    }
    only: set[str] = set()
    elsewhere: set[str] = set()
    for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
        base = node.node
        if not (isinstance(base, nodes.Name) and base.name == name and base.ctx == "load"):
            continue
        if isinstance(node, nodes.Getattr):
            attr: object = node.attr
        elif isinstance(node.arg, nodes.Const):
            attr = node.arg.value
        else:
            continue
        if isinstance(attr, str):
            (only if id(node) in looped else elsewhere).add(attr)
    return only - elsewhere


def _template_line(exc: BaseException) -> int | None:
    """Template line of a render error: Jinja rewrites tracebacks to template frames."""
    tb = exc.__traceback__
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def evaluate(source: str, context: Mapping[str, Any]) -> Any:
    """The value of one Jinja expression (a list, a result object), under the same
    sandbox limits as :func:`render`; errors are Jinja's, for the caller to word."""
    from .sandbox import budget

    with budget():
        return environment().compile_expression(source, undefined_to_none=False)(**context)


#: Names Jinja's generated code binds itself rather than reading them from the values.
_BOUND_BY_JINJA = frozenset({"self", "loop", "caller", "varargs", "kwargs", "super"})


def _plain_parts(ref: TemplateRef) -> tuple[tuple[bool, str], ...] | None:
    """The template as text and ``{{ name }}`` prints only (``Classify: {{ text }}``, the
    form of most prompts), as (is a name, text or name) pairs; None for any other
    template. Such a template filled with text or numbers prints exactly their joined
    parts: a case's rendering then costs a join, not a sandboxed Jinja call (which was a
    third of the per-case work of a large cases run)."""
    if ref._plain is False:
        from jinja2 import nodes

        parts: list[tuple[bool, str]] | None = []
        tree = template_tree(ref)
        body = tree.body if tree is not None else None
        for output in body or ():
            if parts is None or not isinstance(output, nodes.Output):
                parts = None
                break
            for node in output.nodes:
                if isinstance(node, nodes.TemplateData):
                    parts.append((False, node.data))
                elif (
                    isinstance(node, nodes.Name)
                    and node.ctx == "load"
                    and node.name not in _BOUND_BY_JINJA
                ):
                    parts.append((True, node.name))
                else:
                    parts = None
                    break
        ref._plain = tuple(parts) if parts is not None and body else None
    return ref._plain  # type: ignore[return-value]


#: Integers this long print in any interpreter (Python refuses past 4,300 digits).
_PRINTED_INT_BITS = 1_024


def _fill(parts: tuple[tuple[bool, str], ...], context: Mapping[str, Any]) -> str | None:
    """A plain template's text when every name it prints is a text or a number (printed
    by ``str``, as Jinja's own code prints it) and the text is within the render limit;
    None when the sandbox must render it (another type, a missing name, an integer too
    long to print, a limit to report)."""
    out = []
    for is_name, text in parts:
        if not is_name:
            out.append(text)
            continue
        value = context.get(text)
        kind = type(value)
        if kind is str:
            out.append(value)
        elif kind is float or (kind is int and value.bit_length() <= _PRINTED_INT_BITS):
            out.append(str(value))
        else:
            return None
    joined = "".join(out)
    return joined if len(joined) <= render_limit() else None


def render(ref: TemplateRef, context: Mapping[str, Any]) -> str:
    """Render in the sandbox; any failure becomes a LoadError pointing at the template."""
    template = ref.compiled()  # a syntax or shape error is raised whatever the values
    # Only a template of the plain sandbox prints as a join (SQL's environment binds
    # every value it prints instead).
    parts = _plain_parts(ref) if template.environment is environment() else None
    if parts is not None:
        filled = _fill(parts, context)
        if filled is not None:
            return filled
    return _render_sandboxed(ref, template, context)


def _render_sandboxed(ref: TemplateRef, template: Template, context: Mapping[str, Any]) -> str:
    from jinja2 import TemplateError, UndefinedError
    from jinja2.sandbox import SecurityError

    from .sandbox import TemplateLimitError, budget

    try:
        with budget():
            return template.render(context)
    except TemplateLimitError as exc:
        raise ref.error(f"template exceeds a sandbox limit: {exc}", _template_line(exc)) from None
    except RecursionError:
        raise ref.error(
            "template recursion too deep (a macro or recursive loop that never ends?)"
        ) from None
    except MemoryError:  # the limits above should make this unreachable; never a traceback
        raise ref.error("template ran out of memory while rendering") from None
    except UndefinedError as exc:
        message = str(exc.message)
        if message.endswith(" is undefined"):  # a name: say which ones there are
            message += f" (variables available here: {', '.join(sorted(context)) or 'none'})"
        raise ref.error(f"template error: {message}", _template_line(exc)) from None
    except SecurityError as exc:
        raise ref.error(f"template blocked by the sandbox: {exc}", _template_line(exc)) from None
    except TemplateError as exc:
        raise ref.error(f"template error: {exc}", _template_line(exc)) from None
    except ValueError as exc:
        raise ref.error(f"template error: {_value_error(exc)}", _template_line(exc)) from None
    except (TypeError, ArithmeticError, LookupError, AttributeError) as exc:
        raise ref.error(
            f"template error: {type(exc).__name__}: {exc}", _template_line(exc)
        ) from None


def _value_error(exc: ValueError) -> str:
    """A ValueError in the user's words. Python prints integers of at most 4,300 digits
    (its guard against slow conversions), while templates may compute with integers of
    100,000 bits: say that, not which interpreter setting to change."""
    text = str(exc)
    if "integer string conversion" in text:
        return (
            "an integer too long to print: text shows integers of at most 4,300 digits "
            "(templates may compute with larger ones, up to 100,000 bits, e.g. to compare "
            "them)"
        )
    return f"ValueError: {text}"


def answer_prompt(
    doc: Document, key: KeyPath, source: str | None, problems: list[Diagnostic]
) -> TemplateRef | None:
    """A judge prompt a file brings for one answer (a test file's ``judge_prompt``, a
    chattest prompt's ``testPrompt``): checked as a template and for showing the judge
    ``{{ output }}``, the answer; None when the file has none."""
    if source is None:
        return None
    ref = TemplateRef(source, doc, key)
    problems.extend(template_diagnostics(ref))
    if "output" not in referenced_names(ref):
        problems.append(
            doc.diagnostic(
                key, "the judge prompt never uses {{ output }}: the judge would not see the answer"
            )
        )
    return ref
