"""A workflow's variables given on the command line (``--vars FILE``, ``--var NAME=VALUE``).

In the library, not the CLI, so a server or the SDK that takes the same two forms reads
them the same way: the project's YAML loader for files (positions in errors, the same
size, depth and alias limits), UTF-8-checked text for pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import ConfigError
from ..inputs import valid_text
from .document import load_yaml

__all__ = ["parse_variables"]


def parse_variables(
    pairs: Sequence[str] | None = None, files: Sequence[str] | None = None
) -> dict[str, Any]:
    """Files first (in order), then ``NAME=VALUE`` pairs, later ones winning. Values from
    pairs are strings; a workflow's variable schema converts and checks them."""
    values: dict[str, Any] = {}
    for file in files or []:
        data = load_yaml(file).data
        if not isinstance(data, dict):
            raise ConfigError(f"--vars {file}: expected a mapping of variable names to values")
        values.update(data)
    for pair in pairs or []:
        # Bytes that are not UTF-8 arrive as surrogate escapes, which no report can hold.
        pair = valid_text(pair, f"--var {pair.partition('=')[0].strip()!r}")
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"--var {pair!r}: expected NAME=VALUE")
        values[name.strip()] = value
    return values
