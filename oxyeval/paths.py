"""The one rule for a path a project file names: it must stay inside the project.

Apart from :mod:`oxyeval.project` because two stages apply it: the project (datasets,
exports, caches a file names) and the history store (an SQLite history named in
config.yml), and the store may not import the project stage. Standard library only, so
importing it costs nothing on any command's start-up path.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["inside_project"]


def inside_project(root: Path, text: str) -> Path | None:
    """``text`` resolved against ``root`` (links followed), or None when it leaves ``root``.

    The one rule for every path a project file names (datasets, exports, caches, an SQLite
    history): a shared file must not make oxyeval read or write outside the project.
    A path that cannot be resolved (a NUL byte, a link loop) counts as leaving.
    """
    try:
        path = (root / text).resolve()
    except (OSError, RuntimeError, ValueError):
        return None
    return path if path.is_relative_to(root) else None
