from __future__ import annotations

from pathlib import Path

import pytest

from oxyeval.errors import LoadError
from oxyeval.project.document import format_key_path, load_yaml, parse_yaml


def test_positions_of_keys_and_values() -> None:
    doc, problems = parse_yaml("a: 1\nitems:\n  - name: x\n    n: 5\n", Path("f.yml"))
    assert problems == []
    assert doc.data == {"a": 1, "items": [{"name": "x", "n": 5}]}
    pos = doc.locate(("items", 0, "n"))
    assert (pos.line, pos.column) == (4, 8)
    key = doc.locate(("items", 0, "n"), at_key=True)
    assert (key.line, key.column) == (4, 5)


def test_missing_path_falls_back_to_nearest_parent() -> None:
    doc, _ = parse_yaml("tests:\n  - type: consistency\n", Path("f.yml"))
    pos = doc.locate(("tests", 0, "n"))
    assert pos.line == 2


def test_syntax_error_has_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.agent.yml"
    path.write_text("model: x\ntests:\n  - type: consistency\n   n: 3\n")
    with pytest.raises(LoadError) as info:
        load_yaml(path)
    text = str(info.value)
    assert "bad.agent.yml:4:" in text
    assert "YAML syntax error" in text
    assert "   n: 3" in text  # the offending line is shown


def test_duplicate_keys_are_errors() -> None:
    _doc, problems = parse_yaml("model: a\nmodel: b\n", Path("f.yml"))
    assert len(problems) == 1
    assert problems[0].line == 2
    assert "duplicate key 'model'" in problems[0].message
    assert "line 1" in problems[0].message


def test_block_scalar_text_line_mapping() -> None:
    doc, _ = parse_yaml("x: 1\nprompt: |\n  one\n  two\n", Path("f.yml"))
    assert doc.text_line(("prompt",), 2) == 4
    doc, _ = parse_yaml("prompt: 'one'\n", Path("f.yml"))
    assert doc.text_line(("prompt",), 1) == 1


def test_missing_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(LoadError, match="file not found"):
        load_yaml(tmp_path / "nope.yml")
    binary = tmp_path / "b.yml"
    binary.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(LoadError, match="not UTF-8"):
        load_yaml(binary)


def test_anchors_and_merge_keys_construct() -> None:
    text = "base: &b {n: 3}\ntest:\n  <<: *b\n  type: consistency\n"
    doc, problems = parse_yaml(text, Path("f.yml"))
    assert problems == []
    assert doc.data["test"] == {"n": 3, "type": "consistency"}


@pytest.mark.parametrize(
    ("path", "text"),
    [(("tests", 0, "n"), "tests[0].n"), ((), ""), (("a b",), "'a b'"), (("m", "x-y"), "m.x-y")],
)
def test_format_key_path(path: tuple, text: str) -> None:
    assert format_key_path(path) == text


def test_a_large_file_keeps_no_positions_until_one_is_asked_for(tmp_path: Path) -> None:
    """A file of thousands of cases held its position tables through a whole run that
    quotes none of them; they are made again, the same, when a message needs one."""
    from oxyeval.project.document import DEFER_POSITIONS, parse_yaml

    items = "".join(f"  - name: c{i}\n    input: {{n: {i}}}\n" for i in range(3_000))
    text = f"name: p\ncases:\n{items}  - name: c1\n"
    assert len(text) > DEFER_POSITIONS
    lazy, problems = parse_yaml(text, tmp_path / "p.prompt.yml")
    eager, _ = parse_yaml(text, tmp_path / "p.prompt.yml", positions=True)
    assert problems == [] and lazy.data == eager.data
    assert lazy._values == {} and lazy._keys == {}  # nothing kept yet
    assert lazy.locate(("cases", 2999, "input", "n")) == eager.locate(("cases", 2999, "input", "n"))
    assert lazy.locate(("cases", 3000, "name")).line == text.count("\n")  # type: ignore[union-attr]
    assert lazy.values == eager.values and lazy.keys == eager.keys
