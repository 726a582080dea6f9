"""ARCHITECTURE.md, the architecture test and the packages' docstrings tell one story:
the same stage order, in the text, the diagram and the stage numbers."""

from __future__ import annotations

import re
from pathlib import Path

from .test_architecture import ORDER

ROOT = Path(__file__).resolve().parents[1]


def _section() -> str:
    text = (ROOT / "ARCHITECTURE.md").read_text("utf-8")
    start = text.index("## The stages")
    return text[start : text.index("\n## ", start + 1)]


def test_the_order_in_the_text_is_the_enforced_one() -> None:
    first = _section().split("```")[0]
    named = re.findall(r"`(\w+)`\s*←", first) + re.findall(r"←\s*`(\w+)`", first)[-1:]
    assert tuple(named) == tuple(ORDER)


def test_the_diagram_draws_the_enforced_order_with_its_numbers() -> None:
    diagram = _section().split("```")[1]
    boxes = re.findall(r"(\d+) (\w+)/", diagram.splitlines()[1])
    assert [name for _, name in boxes] == list(ORDER)
    assert [int(n) for n, _ in boxes] == list(range(1, len(ORDER) + 1))


def test_each_package_docstring_gives_its_stage_number() -> None:
    for number, name in enumerate(ORDER, start=1):
        doc = (ROOT / "oxyeval" / name / "__init__.py").read_text("utf-8")
        assert doc.startswith(f'"""Stage {number}, '), name
