"""config.yml's ``cache:`` section: checked by the schema, with the line and key named."""

from __future__ import annotations

import pytest

from oxyeval.errors import LoadError
from oxyeval.project.config import load_project

from ..conftest import MakeProject

MODELS = "models:\n  - {name: m, vendor: mock, outputs: [x]}\n"


def test_a_valid_cache_section_loads(make_project: MakeProject) -> None:
    root = make_project(MODELS + "cache:\n  ttl_days: 7\n  truncated: true\n")
    assert load_project(root).config.data["cache"] == {"ttl_days": 7, "truncated": True}


@pytest.mark.parametrize(
    ("section", "words"),
    [
        ("cache:\n  ttl_days: 0\n", "ttl_days"),
        ("cache:\n  ttl_days: soon\n", "ttl_days"),
        ("cache:\n  truncated: maybe\n", "truncated"),
        ("cache:\n  answers: true\n", "answers"),
    ],
)
def test_a_bad_cache_section_names_its_line(
    make_project: MakeProject, section: str, words: str
) -> None:
    root = make_project(MODELS + section)
    with pytest.raises(LoadError) as info:
        load_project(root)
    (diagnostic,) = info.value.diagnostics
    assert diagnostic.line == 4 and words in f"{diagnostic.key} {diagnostic.message}"
