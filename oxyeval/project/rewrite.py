"""Accepting a new baseline: one ``expected_output`` value rewritten in its YAML file.

Apart from the loader (:mod:`.prompts`) because it edits text, not data: it finds the
value's span and replaces only it, leaving every comment, quote style and the rest of
the layout as the user wrote them, and replaces the file atomically.

A project may come from someone else, so a write never follows a link: the new text
goes into a fresh file created exclusively, under a random name, in the file's own
folder, which is then renamed over the file; a file that is a link out of the project
is refused (:func:`~.document.path_problem`). Writers of one file take turns
(:func:`file_lock`): each one reads the file as the previous one left it.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Protocol

from ..errors import ConfigError
from .document import Document, KeyPath, load_yaml, path_problem

__all__ = ["DeclaredCase", "file_lock", "rewrite_expected_output"]

#: How long a writer waits for another process writing in the same folder.
LOCK_WAIT_S = 30.0


class _Turn:
    """One file's writers: a re-entrant lock for the threads of this process, and the
    folder's ``flock`` for other processes, held by the outermost holder."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.depth = 0
        self.fd: int | None = None


_turns: dict[str, _Turn] = {}
_turns_guard = threading.Lock()


def _flock_folder(folder: Path) -> int | None:
    """The folder's exclusive ``flock`` (its descriptor), or None where there is none to
    take (no fcntl, a file system without locks). The folder, not the file: the file is
    replaced by a rename, so a lock held on it would guard an inode no longer there."""
    try:
        import fcntl
    except ImportError:  # Windows: the in-process lock alone
        return None
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_CLOEXEC)
    except OSError:
        return None
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                raise ConfigError(
                    f"{folder}: another oxyeval process has been writing a file in this folder "
                    f"for {LOCK_WAIT_S:.0f} s; try again when it is done"
                ) from None
            time.sleep(0.02)
        except OSError:  # locks not supported here
            os.close(fd)
            return None


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Take ``path``'s turn: one writer at a time reads, changes and writes the file.

    Without it two writers that read the same text each write back their own change,
    and the second rename silently drops the first one's. Re-entrant, so a caller may
    hold the turn across the rewrite and its own bookkeeping (the store's copy).
    """
    real = os.path.realpath(path)
    with _turns_guard:
        turn = _turns.setdefault(real, _Turn())
    with turn.lock:
        if turn.depth == 0:
            turn.fd = _flock_folder(Path(real).parent)
        turn.depth += 1
        try:
            yield
        finally:
            turn.depth -= 1
            if turn.depth == 0 and turn.fd is not None:
                os.close(turn.fd)  # closing releases the flock
                turn.fd = None


class DeclaredCase(Protocol):
    """What a rewrite needs of a case (a :class:`~oxyeval.project.CaseDef`): its name and
    where it is declared."""

    name: str
    doc: Document | None
    key: KeyPath


def _plain_ok(text: str) -> bool:
    """Whether ``text`` can be written unquoted and read back as the same string."""
    import re

    import yaml

    if (
        not text
        or text != text.strip()
        or "\n" in text
        or not re.fullmatch(r"[A-Za-z][\w .,!?'()/-]*", text)
    ):
        return False
    if ": " in text or " #" in text:
        return False
    try:
        return yaml.safe_load(f"k: {text}") == {"k": text}
    except yaml.YAMLError:
        return False


def _yaml_scalar(text: str, indent: int) -> str:
    """``text`` as a YAML value that reads back exactly: a literal block for multi-line
    text (what people write by hand), else a double-quoted (JSON) string."""
    lines = text.split("\n")
    simple_end = text.endswith("\n") and not text.endswith("\n\n")
    if (
        "\n" in text.rstrip("\n")
        and (simple_end or not text.endswith("\n"))
        and not lines[0].startswith(" ")
    ):
        chomp = "" if simple_end else "-"
        body = lines[:-1] if simple_end else lines
        pad = " " * indent
        return f"|{chomp}\n" + "\n".join(pad + line if line else "" for line in body)
    return text if _plain_ok(text) else json.dumps(text, ensure_ascii=False)


def _keep_block_header(text: str, start: int, new: str) -> str:
    """A block scalar's header line (``|   # keep me``) keeps its comment: the new value's
    own indicator (``|`` or ``|-``, what reads back exactly), then the old header's
    spacing and comment; a one-line new value keeps the comment after it."""
    import re

    header_end = text.find("\n", start)
    header = text[start : len(text) if header_end == -1 else header_end]
    comment = re.match(r"^[|>][-+0-9]*(\s+#.*)?$", header)
    if comment is None or not comment.group(1):
        return new
    if new.startswith("|"):
        first, _, body = new.partition("\n")
        return f"{first}{comment.group(1)}\n{body}"
    return f"{new}{comment.group(1)}"


def _content_end(text: str, start: int, end: int) -> int:
    """End of the last non-blank line in text[start:end], just after its line break."""
    last = start + len(text[start:end].rstrip(" \t\r\n"))
    newline = text.find("\n", last)
    return len(text) if newline == -1 else newline + 1


def rewrite_expected_output(case: DeclaredCase, output: str) -> Path:
    """Set ``expected_output`` of a YAML-declared case in place, keeping the file's layout.

    Only the characters of that one value change (or one line is added when the case
    had no expected output), so comments, ordering and formatting all survive. The
    file is re-read afterwards and must give back exactly ``output``.
    """
    if case.doc is None:
        raise ConfigError(f"case '{case.name}' is not declared in a file; nothing to rewrite")
    path = case.doc.path
    with file_lock(path):
        _rewrite(case, path, output)
    return path


def _rewrite(case: DeclaredCase, path: Path, output: str) -> None:
    """The rewrite itself, with the file's turn held."""
    doc = load_yaml(path)  # the file as it is now, not as it was when the run started
    items = doc.get(case.key[:-1])
    index = next(
        (
            i
            for i, c in enumerate(items or [])
            if isinstance(c, dict) and c.get("name") == case.name
        ),
        None,
    )
    if index is None:
        raise ConfigError(f"{path}: case '{case.name}' is no longer in this file")
    item_key = (*case.key[:-1], index)
    text = doc.text
    item = doc.values[item_key]
    item_text = text[item.start : item.end]
    if "<<:" in item_text or "<< :" in item_text:
        raise ConfigError(
            f"{path}: case '{case.name}' inherits keys through a YAML merge key (<<); changing "
            "it in place could change other cases too, so set expected_output by hand"
        )
    name_key = doc.keys[(*item_key, "name")]
    key_indent = name_key.column - 1
    value_key = (*item_key, "expected_output")
    value = doc.values.get(value_key) if value_key in doc.keys else None
    if value is not None:
        key_pos = doc.keys[value_key]
        between = text[
            text.index(":", _offset(text, key_pos.line, key_pos.column)) + 1 : value.start
        ]
        raw = text[value.start : value.end]
        if "&" in between or "!" in between or raw.startswith(("&", "*", "!")):
            raise ConfigError(
                f"{path}: expected_output of case '{case.name}' carries a YAML anchor, alias or "
                "tag that other values may share; set it by hand"
            )
    if item.flow:
        if value is None:
            raise ConfigError(
                f"{path}: case '{case.name}' is a one-line mapping; add expected_output by hand"
            )
        flow_plain = _plain_ok(output) and not any(ch in output for ch in ",[]{}")
        scalar = output if flow_plain else json.dumps(output, ensure_ascii=False)
        new_text = text[: value.start] + scalar + text[value.end :]
    elif value is not None:
        line_end = text.find("\n", value.end)
        trailing = text[value.end : len(text) if line_end == -1 else line_end]
        if trailing.strip() and not value.block:
            # A comment follows on the same line: a block would swallow it; stay on one line.
            new = output if _plain_ok(output) else json.dumps(output, ensure_ascii=False)
        else:
            new = _yaml_scalar(output, key_indent + 2)
        end = _content_end(text, value.start, value.end) if value.block else value.end
        if value.block:  # the replaced span ended after a line break: keep one
            new = _keep_block_header(text, value.start, new) + "\n"
        new_text = text[: value.start] + new + text[end:]
    else:
        at = _content_end(text, item.start, item.end)
        line = " " * key_indent + "expected_output: " + _yaml_scalar(output, key_indent + 2) + "\n"
        if at == len(text) and not text.endswith("\n"):
            line = "\n" + line
        new_text = text[:at] + line + text[at:]
    if "\r\n" in text:  # keep the file's line endings
        new_text = new_text.replace("\r\n", "\n").replace("\n", "\r\n")
    _replace_file(path, text, new_text, lambda: load_yaml(path).get(value_key) == output, case.name)


def _offset(text: str, line: int, column: int) -> int:
    """Character offset of a 1-based line and column."""
    start = 0
    for _ in range(line - 1):
        start = text.index("\n", start) + 1
    return start + column - 1


def _write_new(path: Path, text: str) -> None:
    """Replace ``path`` with ``text``, keeping its permissions, without following a link.

    The text goes into a new file made with O_EXCL under a random name in the same
    folder (so never into a file or link someone left there), then renamed over
    ``path``: a rename replaces the name itself, never a link's target. Raises OSError,
    or UnicodeEncodeError for text no file can hold, before anything is created."""
    data = text.encode("utf-8")
    mode = stat.S_IMODE(os.stat(path, follow_symlinks=False).st_mode)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".oxy-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            if hasattr(os, "fchmod"):
                os.fchmod(handle.fileno(), mode)
        if not hasattr(os, "fchmod"):
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


def _replace_file(path: Path, old: str, new: str, check: Any, case_name: str) -> None:
    """Write ``new`` atomically with the file's permissions; put ``old`` back unless the
    result reads back right, so a failed accept never leaves a broken file.

    ``path`` is the file as the project names it: a link inside the project is written
    through (its target is the project's file), a link out of it is refused."""
    problem = path_problem(path)
    if problem is not None:
        raise ConfigError(f"{path}: {problem}; the expected output was not written")
    target = Path(os.path.realpath(path))
    try:
        _write_new(target, new)
    except UnicodeEncodeError:
        raise ConfigError(
            f"{path}: the new expected output of case '{case_name}' holds a character no file "
            "can hold (a lone UTF-16 surrogate); the file is unchanged"
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot write the new expected output ({exc.strerror or exc}); the file "
            "is unchanged"
        ) from None
    try:
        ok = check()
    except Exception:
        ok = False
    if not ok:
        try:
            _write_new(target, old)
        except OSError as exc:
            raise ConfigError(
                f"{path}: could not write expected_output of case '{case_name}' so that it "
                f"reads back exactly, nor put the previous text back ({exc.strerror or exc})"
            ) from None
        raise ConfigError(
            f"{path}: could not write expected_output of case '{case_name}' so that it reads back "
            "exactly; the file is unchanged"
        )
