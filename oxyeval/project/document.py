"""Read YAML files while remembering where every key and value came from.

PyYAML's constructed objects forget their source position, so error messages
could only say "somewhere in this file". We compose the node tree first, record
the mark of every key and value by its key path, then construct plain Python
data from the same nodes. Every later stage reports problems through
:meth:`Document.diagnostic`, which turns a key path back into file:line:column.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from ..errors import Diagnostic, LoadError
from ..inputs import MAX_INT_DIGITS, valid_text
from ..redact import clip
from .limits import MAX_FILE_BYTES
from .yamlloader import (
    FLOAT_TAG,
    INT_TAG,
    STR_TAG,
    LimitError,
    ProjectLoader,
    build_fast,
    compose_fast,
    finite_yaml_float,
    int_too_long,
)

__all__ = [
    "SYMLINK_LOOP",
    "Document",
    "KeyPath",
    "format_key_path",
    "load_yaml",
    "not_found",
    "parse_yaml",
    "path_problem",
    "read_text",
]

SYMLINK_LOOP = "symlink loop (too many levels of symbolic links)"

KeyPath = tuple[Any, ...]


def format_key_path(path: KeyPath) -> str:
    """``("tests", 0, "n")`` -> ``tests[0].n``: the form users see in messages."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            text = str(part)
            if not text.replace("_", "").replace("-", "").isalnum():
                text = repr(text)
            out += f".{text}" if out else text
    return out


@dataclass(frozen=True)
class _Pos:
    line: int  # 1-based
    column: int  # 1-based
    span: int
    block: bool = False  # a literal/folded block scalar: its text starts on the next line
    start: int = 0  # character offsets of the node in the text: what in-place edits replace
    end: int = 0
    flow: bool = False  # inside a flow collection ({...} / [...]): edits must stay on one line


def _pos(node: yaml.Node) -> _Pos:
    start, end = node.start_mark, node.end_mark
    span = end.column - start.column if end.line == start.line else 1
    block = isinstance(node, yaml.ScalarNode) and node.style in ("|", ">")
    flow = bool(getattr(node, "flow_style", False))
    return _Pos(start.line + 1, start.column + 1, max(1, span), block, start.index, end.index, flow)


@dataclass(repr=False)
class Document:
    """A parsed YAML file: its data plus the position of every key path."""

    def __repr__(self) -> str:  # short: asyncio may repr results (3.11 SIGINT check)
        return f"Document({self.display!r})"

    path: Path
    text: str
    data: Any
    #: Position tables, filled as the file is parsed; a large file's are left empty and
    #: made again from ``text`` when first asked for (:attr:`values`, :attr:`keys`): a
    #: file of 10,000 cases held 30 MB of positions for a run that quotes none of them.
    _values: dict[KeyPath, _Pos] = field(default_factory=dict)
    _keys: dict[KeyPath, _Pos] = field(default_factory=dict)
    _deferred: bool = False

    @property
    def values(self) -> dict[KeyPath, _Pos]:
        """The position of every value, by key path."""
        if self._deferred:
            self._place()
        return self._values

    @property
    def keys(self) -> dict[KeyPath, _Pos]:
        """The position of every mapping key, by its key path."""
        if self._deferred:
            self._place()
        return self._keys

    def _place(self) -> None:
        """The positions of a file parsed without keeping them: parsed again (it parsed
        once, so again it does), its problems already said."""
        self._deferred = False
        again, _problems = parse_yaml(self.text, self.path, positions=True)
        self._values, self._keys = again._values, again._keys

    @property
    def display(self) -> str:
        """The path as the user would type it: relative to the working directory when inside it."""
        try:
            rel = os.path.relpath(self.path)
        except ValueError:  # other drive on Windows
            return str(self.path)
        return str(self.path) if rel.startswith("..") else rel

    @cached_property
    def _lines(self) -> list[str]:
        return self.text.splitlines()

    def source_line(self, line: int) -> str | None:
        """Line ``line`` (1-based) of the text. The text is split once: a file with many
        problems (every key a duplicate) quotes a line for each."""
        lines = self._lines
        return lines[line - 1] if 0 < line <= len(lines) else None

    def locate(self, path: KeyPath, *, at_key: bool = False) -> _Pos | None:
        """Position of ``path``; falls back to the nearest enclosing key that exists."""
        probe = tuple(path)
        if at_key and probe in self.keys:
            return self.keys[probe]
        while True:
            if probe in self.values:
                return self.values[probe]
            if probe in self.keys:
                return self.keys[probe]
            if not probe:
                return None
            probe = probe[:-1]

    def text_line(self, path: KeyPath, line_in_text: int) -> int | None:
        """File line of line ``line_in_text`` (1-based) of the string value at ``path``."""
        pos = self.values.get(tuple(path))
        if pos is None:
            return None
        return pos.line + line_in_text - (0 if pos.block else 1)

    def diagnostic(
        self,
        path: KeyPath,
        message: str,
        *,
        severity: str = "error",
        at_key: bool = False,
        line: int | None = None,
    ) -> Diagnostic:
        if line is not None:
            return Diagnostic(
                self.display,
                message,
                line=line,
                key=format_key_path(path),
                severity=severity,
                source_line=self.source_line(line),
            )
        pos = self.locate(path, at_key=at_key)
        if pos is None:
            return Diagnostic(self.display, message, key=format_key_path(path), severity=severity)
        return Diagnostic(
            self.display,
            message,
            line=pos.line,
            column=pos.column,
            key=format_key_path(path),
            severity=severity,
            source_line=self.source_line(pos.line),
            span=pos.span,
        )

    def get(self, path: KeyPath, default: Any = None) -> Any:
        node = self.data
        for part in path:
            try:
                node = node[part]
            except (KeyError, IndexError, TypeError):
                return default
        return node


def _walk(
    node: yaml.Node,
    path: KeyPath,
    doc: Document,
    problems: list[Diagnostic],
    seen: set[int],
    record: bool = True,
) -> None:
    if record:
        doc._values.setdefault(path, _pos(node))
    if id(node) in seen:  # an alias to a node we already walked
        return
    seen.add(id(node))
    if isinstance(node, yaml.ScalarNode):
        _check_scalar(node, path, doc, problems)
    elif isinstance(node, yaml.MappingNode):
        names: dict[Any, yaml.Node] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            if isinstance(key_node, yaml.ScalarNode):
                _check_scalar(key_node, (*path, key_node.value), doc, problems)
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag == INT_TAG:
                with contextlib.suppress(ValueError):
                    key = int(key)
            child = (*path, key)
            if key in names:
                first = names[key].start_mark.line + 1
                problems.append(
                    Diagnostic(
                        doc.display,
                        f"duplicate key '{key}' (first defined on line {first}); "
                        "YAML would silently keep only the last one",
                        line=key_node.start_mark.line + 1,
                        column=key_node.start_mark.column + 1,
                        key=format_key_path(child),
                        source_line=doc.source_line(key_node.start_mark.line + 1),
                        span=len(str(key)),
                    )
                )
            names[key] = key_node
            if record:
                doc._keys[child] = _pos(key_node)
            _walk(value_node, child, doc, problems, seen, record)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*path, index), doc, problems, seen, record)


def _check_scalar(
    node: yaml.ScalarNode, path: KeyPath, doc: Document, problems: list[Diagnostic]
) -> None:
    """Values as documented: numbers finite and within a float's range, text valid.
    ``.inf``, ``.nan``, ``1.0e+999`` and an integer of more than
    :data:`~oxyeval.inputs.MAX_INT_DIGITS` digits are errors here, at their line, whatever
    key holds them (the integer is then read as text, so the rest of the file still loads
    and is checked); a double-quoted ``"\\ud800"`` (a lone surrogate, which no file, report
    or database can hold) is replaced by U+FFFD with a warning."""
    problem = None
    if node.tag == FLOAT_TAG and not finite_yaml_float(str(node.value)):
        problem = (
            f"{node.value} is not a finite number; numbers must be finite "
            "(quote it if it is meant as text)"
        )
    elif node.tag == INT_TAG and int_too_long(str(node.value)):
        problem = (
            f"an integer of more than {MAX_INT_DIGITS} digits; numbers must be within a "
            "float's range (quote it if it is meant as text)"
        )
        node.tag = STR_TAG  # Python would refuse to read it past 4,300 digits
    elif isinstance(node.value, str) and not node.value.isascii():
        line = node.start_mark.line + 1
        node.value = valid_text(node.value, f"{doc.display}:{line}")
    if problem is not None:
        line = node.start_mark.line + 1
        problems.append(
            Diagnostic(
                doc.display,
                problem,
                line=line,
                column=node.start_mark.column + 1,
                key=format_key_path(path),
                source_line=_clip(doc.source_line(line)),
                span=min(max(1, len(str(node.value))), 200),
            )
        )


#: Files larger than this keep no position tables until one is asked for.
DEFER_POSITIONS = 64_000


def parse_yaml(
    text: str, path: Path, *, positions: bool | None = None
) -> tuple[Document, list[Diagnostic]]:
    """Parse ``text``; syntax errors come back as diagnostics, never as exceptions.
    ``positions``: keep every node's position now (default: unless the text is larger
    than :data:`DEFER_POSITIONS`; then they are made when first asked for)."""
    doc = Document(path=path, text=text, data=None)
    record = len(text) <= DEFER_POSITIONS if positions is None else positions
    problems: list[Diagnostic] = []
    loader: Any = None
    if not record:
        built = build_fast(text)
        if built is not None:
            doc.data, doc._deferred = built[0], True
            return doc, problems
    try:
        fast = compose_fast(text)
        if fast is not None:
            loader, node = fast
        else:
            loader = ProjectLoader(text)  # reads the whole text: a NUL byte is refused here
            node = loader.get_single_node()
        if node is not None:
            _walk(node, (), doc, problems, set(), record)
            doc._deferred = not record
            doc.data = loader.construct_document(node)
    except LimitError as exc:
        mark = exc.problem_mark
        line = mark.line + 1 if mark else None
        problems.append(
            Diagnostic(
                doc.display,
                str(exc.problem),
                line=line,
                column=mark.column + 1 if mark else None,
                source_line=_clip(doc.source_line(line)) if line else None,
            )
        )
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or "invalid YAML"
        if exc.context and exc.context != problem:
            problem = f"{problem} ({exc.context})"
        if (
            ("end of stream" in problem or "<stream end>" in problem)
            and exc.context_mark is not None
            and mark is not None
            and exc.context_mark.line != mark.line
        ):
            # "found unexpected end of stream" at the end of the file is useless without where
            # the unclosed thing began: point at that instead, and say where it ran to.
            problem = f"{problem}; it starts here and runs to line {mark.line + 1}"
            mark = exc.context_mark
        line = mark.line + 1 if mark else None
        problems.append(
            Diagnostic(
                doc.display,
                f"YAML syntax error: {problem}",
                line=line,
                column=mark.column + 1 if mark else None,
                source_line=doc.source_line(line) if line else None,
            )
        )
    except yaml.reader.ReaderError as exc:
        problems.append(_unreadable(doc, exc))
    except yaml.YAMLError as exc:
        problems.append(Diagnostic(doc.display, f"YAML error: {exc}"))
    except (ValueError, OverflowError, RecursionError) as exc:
        # A value PyYAML itself cannot make (a date out of range): the file is bad input,
        # never a crash of the command or of the server's sync.
        problems.append(Diagnostic(doc.display, f"YAML error: a value cannot be read ({exc})"))
    finally:
        if loader is not None:
            loader.dispose()
    return doc, problems


def _unreadable(doc: Document, exc: yaml.reader.ReaderError) -> Diagnostic:
    """A character YAML does not allow (NUL, other control characters), at its line."""
    position = exc.position if isinstance(exc.position, int) else 0
    line = doc.text.count("\n", 0, position) + 1
    column = position - (doc.text.rfind("\n", 0, position) + 1) + 1
    code = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "?")
    return Diagnostic(
        doc.display,
        f"the character U+{code:04X} is not allowed in a YAML file (control characters "
        'are refused); inside double quotes, write it as an escape such as "\\x00"',
        line=line,
        column=column,
        source_line=_clip(doc.source_line(line), 200),
    )


def _clip(line: str | None, width: int = 200) -> str | None:
    """A source line short enough to quote (a 5,000-bracket line is no help to anyone)."""
    return None if line is None else clip(line, width)


#: At most this many names of a folder are compared with a mistyped one.
_MAX_SIBLINGS = 2000


def _nearest_name(path: Path) -> str:
    """``; did you mean 'agents/support.agent.yml'?`` for a path with one mistyped part:
    the first part that does not exist, matched against the names in its folder."""
    import difflib

    parts = path.parts
    for i in range(len(parts)):
        head = Path(*parts[: i + 1])
        if os.path.lexists(head):
            continue
        folder = Path(*parts[:i]) if i else Path(".")
        try:
            with os.scandir(folder) as entries:
                names = [e.name for _, e in zip(range(_MAX_SIBLINGS), entries, strict=False)]
        except OSError:
            return ""
        close = difflib.get_close_matches(parts[i], names, n=1, cutoff=0.6)
        if not close:
            return ""
        guess = Path(*parts[:i], close[0], *parts[i + 1 :])
        if not os.path.lexists(guess):
            return ""
        # A path as typed comes back whole; an absolute one (made from a file's own
        # reference) names only the part that differs, not the whole disk's path.
        return f"; did you mean '{close[0] if path.is_absolute() else guess}'?"
    return ""


def not_found(path: str | os.PathLike[str]) -> str:
    """``file not found``, with the nearest existing name when one part looks mistyped."""
    return f"file not found{_nearest_name(Path(path))}"


def path_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be read as a file, in words; None when it can.

    ``Path.exists()`` answers False for a symlink loop, which then reads as "file not
    found"; this says what is really there. A file of a project that is a link out of
    it cannot be read either (:func:`~.files.link_leaves`): every reader of project files
    asks here first, so that one rule holds for all of them.
    """
    from .files import link_leaves  # files imports this module

    file = Path(path)
    try:
        info = file.stat()
    except FileNotFoundError:
        if file.is_symlink():
            return f"file not found (broken symlink to {os.readlink(file)!r})"
        return not_found(file)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return SYMLINK_LOOP
        return f"cannot read file: {exc.strerror}"
    leaves = link_leaves(file)
    if leaves is not None:
        return leaves
    if stat.S_ISDIR(info.st_mode):
        return "is a directory, expected a YAML file"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file (a device, pipe or socket), expected a YAML file"
    return None


def read_text(
    path: str | os.PathLike[str], max_bytes: int | None = None, what: str = "a project file"
) -> str:
    """A project's text file (YAML, SQL, context), or one clear reason why it cannot be.

    Never reads more than ``max_bytes`` (a 10 GB file must not become a MemoryError) and
    never echoes content: an SQL error quoting ``/etc/passwd`` would leak what it read.
    """
    if max_bytes is None:
        max_bytes = MAX_FILE_BYTES
    file = Path(path)
    problem = path_problem(file)
    if problem is not None:
        raise LoadError([Diagnostic(str(path), problem)])
    try:
        with file.open("rb") as handle:
            raw = handle.read(max_bytes + 1)
    except OSError as exc:
        reason = SYMLINK_LOOP if exc.errno == errno.ELOOP else f"cannot read file: {exc.strerror}"
        raise LoadError([Diagnostic(str(path), reason)]) from None
    if len(raw) > max_bytes:
        size = f"{max_bytes // 1_000_000} MB" if max_bytes >= 1_000_000 else f"{max_bytes} bytes"
        raise LoadError(
            [Diagnostic(str(path), f"file is larger than {size}, the most oxyeval reads as {what}")]
        )
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LoadError(
            [Diagnostic(str(path), f"not UTF-8 text (bad byte at offset {exc.start})")]
        ) from None


def load_yaml(path: str | os.PathLike[str]) -> Document:
    """Read and parse one file; raise LoadError with every syntax problem found."""
    file = Path(path)
    text = read_text(file)
    from .files import CONFIG_NAMES  # files imports this module

    if file.name in CONFIG_NAMES:
        # The one project file that holds credentials (API keys, Authorization headers,
        # URLs with a password): registered before any diagnostic can quote a line.
        from .credentials import register_literal_secrets

        register_literal_secrets(text)
    doc, problems = parse_yaml(text, file.resolve())
    if problems:
        raise LoadError(problems)
    return doc
