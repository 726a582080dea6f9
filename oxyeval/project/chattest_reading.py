"""chattest's files on disk: which ones a path names, and each read as JSON with the
position of every key, so the loader (:mod:`.chattest`) can point at file, line and key.
Apart from the loader because reading a file (and registering the literal keys it holds
as secrets before any message may quote a line) is its own concern.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import Diagnostic, LoadError
from ..inputs import JSONProblem, loads
from ..redact import register_secret
from .document import Document, not_found, parse_yaml, read_text

__all__ = ["ENV_REF", "chattest_files", "collect", "load_json", "read"]

#: ``${VAR}``: an apiKey read from the environment.
ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_API_KEY_TEXT = re.compile(r'"apiKey"\s*:\s*"((?:[^"\\\n]|\\.)*)"')


def load_json(path: str | os.PathLike[str]) -> Document:
    """A JSON file as a :class:`Document` (data, and the line of every key path), or a
    LoadError naming the file, line and column.

    Python's json parser decides what the data is (strict JSON: ``1e3`` is a number,
    no NaN); the YAML reader, run on the same text with its tabs made spaces (tabs are
    only whitespace in valid JSON; YAML refuses them as indentation), gives the
    positions and reports duplicate keys. Literal ``apiKey`` values are registered as
    secrets before any message can quote their line.
    """
    file = Path(path)
    text = read_text(file, what="a chattest file")
    for match in _API_KEY_TEXT.finditer(text):
        if not ENV_REF.fullmatch(match.group(1).strip()):
            register_secret(match.group(1))
    display = Document(file.resolve(), text, None).display
    try:
        data = loads(text, display)
    except JSONProblem as exc:
        lines = text.splitlines()
        line = exc.line if exc.line is not None and 0 < exc.line <= len(lines) else None
        source = lines[line - 1] if line is not None else None
        diagnostic = Diagnostic(display, str(exc), line, exc.column, source_line=source)
        raise LoadError([diagnostic]) from None
    written = data.get("apiKey") if isinstance(data, dict) else None
    if isinstance(written, str) and not ENV_REF.fullmatch(written.strip()):
        register_secret(written)
    doc, problems = parse_yaml(text.replace("\t", " "), file.resolve())
    duplicates = [p for p in problems if p.message.startswith("duplicate key")]
    if len(duplicates) != len(problems):  # JSON that YAML 1.1 reads otherwise: no positions
        doc = Document(file.resolve(), text, None)
    doc.text, doc.data = text, data
    if duplicates:
        for problem in duplicates:
            problem.message = problem.message.replace("YAML", "JSON readers")
        raise LoadError(duplicates)
    return doc


def chattest_files(path: Path) -> tuple[list[Path], list[Path]]:
    """The prompt and model files ``oxy chattest path`` reads, without reading them."""
    return collect([path], [])


def collect(roots: list[Path], problems: list[Diagnostic]) -> tuple[list[Path], list[Path]]:
    prompts: dict[Path, None] = {}
    models: dict[Path, None] = {}

    def add_folder(folder: Path, into: dict[Path, None]) -> None:
        if folder.is_dir():
            into.update(dict.fromkeys(sorted(folder.glob("*.json"))))

    for root in roots:
        if root.is_dir():
            if (root / "prompts").is_dir():
                add_folder(root / "prompts", prompts)
                add_folder(root / "models", models)
            elif root.name == "prompts":
                add_folder(root, prompts)
                add_folder(root.parent / "models", models)
            elif root.name == "models":
                add_folder(root, models)
            else:
                problems.append(
                    Diagnostic(
                        str(root),
                        "no prompts/ folder here: a chattest folder holds prompts/*.json and models/*.json",
                    )
                )
        elif not root.exists():
            problems.append(Diagnostic(str(root), not_found(root)))
        elif root.parent.name == "models":
            models[root] = None
        else:
            prompts[root] = None
            if root.parent.name == "prompts":
                add_folder(root.parent.parent / "models", models)
    return _unique(prompts), _unique(models)


def _unique(files: dict[Path, None]) -> list[Path]:
    """``files`` in order, each file once however it was named."""
    seen: set[Path] = set()
    out: list[Path] = []
    for file in files:
        if file.resolve() not in seen:
            seen.add(file.resolve())
            out.append(file)
    return out


def read(file: Path, problems: list[Diagnostic]) -> Document | None:
    try:
        return load_json(file)
    except LoadError as exc:
        problems.extend(exc.diagnostics)
        return None
