"""Project files composed by libyaml read exactly as the pure-Python loader reads them:
the same data, the same positions of every key and value, the same diagnostics; a file
that breaks a bound or is not valid YAML goes to the Python loader for its message."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from oxyeval.project import document, limits, yamlloader
from oxyeval.project.document import parse_yaml

pytestmark = pytest.mark.skipif(
    not getattr(yaml, "__with_libyaml__", False), reason="PyYAML built without libyaml"
)

SAMPLES = {
    "cases": (
        "name: p\nmodel: m\ntemplate: |\n  Classify: {{ text }}\n  Done.\nthreshold: 0.8\n"
        "cases:\n"
        + "".join(
            f'  - name: "c{i} é"\n    input: {{text: "item {i}", n: {i}}}\n'
            f"    expected_output: >\n      folded {i}\n"
            for i in range(30)
        )
    ),
    "anchors and merge keys": (
        "base: &b {model: m, params: {temperature: 0}}\nother:\n  <<: *b\n  extra: [1, 2]\n"
    ),
    "numbers, base 60, duplicates, a NaN": "a: 1:30\nb: 0x1F\nc: .nan\nd: 1e3\na: 2\n",
    "unicode and flow": "k: [é, {x: 'ünï'}, \"\\u00e9\"]\n# comment\nlast: ~\n",
    "empty": "",
}


def _shape(text: str) -> tuple[object, list[str], dict[object, object], dict[object, object]]:
    doc, problems = parse_yaml(text, Path("x.yml"))
    return doc.data, [p.format() for p in problems], dict(doc.keys), dict(doc.values)


@pytest.mark.parametrize("text", list(SAMPLES.values()), ids=list(SAMPLES))
def test_libyaml_reads_as_the_python_loader_does(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert yamlloader.compose_fast(text) is not None  # this file takes the fast path
    fast = _shape(text)
    monkeypatch.setattr(document, "compose_fast", lambda _text: None)
    slow = _shape(text)
    assert repr(fast) == repr(slow)  # NaN is not equal to itself; its repr is


@pytest.mark.parametrize(
    "text",
    [
        "x: " + "[" * (limits.MAX_YAML_DEPTH + 1) + "]" * (limits.MAX_YAML_DEPTH + 1),
        "a: &x [1, *x]\n",
        "a: *nowhere\n",
        "a: b: c\n",
        "a: 1\nb: x\x00y\n",
        "--- 1\n--- 2\n",
    ],
    ids=["too deep", "alias in itself", "unknown alias", "syntax", "NUL", "two documents"],
)
def test_what_breaks_a_bound_or_is_invalid_goes_to_the_python_loader(text: str) -> None:
    assert yamlloader.compose_fast(text) is None
    _, problems, _, _ = _shape(text)
    assert problems  # the Python loader's message, at its line


def test_the_value_and_alias_bounds_hold_on_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlloader, "MAX_YAML_NODES", 50)
    assert yamlloader.compose_fast("".join(f"k{i}: v\n" for i in range(24))) is not None
    assert yamlloader.compose_fast("a: [" + ", ".join("1" for _ in range(60)) + "]\n") is None
    monkeypatch.setattr(yamlloader, "MAX_ALIAS_NODES", 10)
    bomb = "a: &a [1, 2, 3]\nb: &b [*a, *a]\nc: [*b, *b]\n"  # 4 + 2 x 9 = 22 aliased nodes
    assert yamlloader.compose_fast(bomb) is None
    _, problems, _, _ = _shape(bomb)
    assert len(problems) == 1 and "aliases expand to more than 10 nodes" in problems[0]


# A large file is built straight from libyaml's events (no node tree) when it is plain
# data; whatever it builds must be what the composed way reads, with no problem that the
# composed way would have reported; anything else must be left to the composed way.
SCALARS = (
    "s: text\nq: '1'\nd: \"2\"\ni: 12\nh: 0x1F\no: 017\nb: 0b101\nu: 1_000\nneg: -3\n"
    "f: 1.5\ne: 1.0e+3\nlow: .5\nt: true\ny: yes\nn: No\noff: off\nnil: ~\nnull2: null\n"
    "empty:\nsixty: 1:30\nuni: ünï\nlit: |\n  a\n  b\nfold: >-\n  c\n  d\n"
    "flow: {a: [1, 2, {b: c}], 'k': v}\n1: int key\n2.5: float key\ntrue: bool key\n"
    "~: null key\n"
)
BUILT = {
    **{name: text for name, text in SAMPLES.items() if "anchors" not in name and "NaN" not in name},
    "scalars": SCALARS,
    "nested": "a:\n  - b:\n      - [1, [2, [3]]]\n  - {}\n  - []\nc: {d: {e: {f: g}}}\n",
    "explicit document": "---\nk: v\n...\n",
    "comments only": "# nothing\n",
}


@pytest.mark.parametrize("text", list(BUILT.values()), ids=list(BUILT))
def test_built_from_events_as_the_composed_way_reads(text: str) -> None:
    built = yamlloader.build_fast(text)
    assert built is not None
    doc, problems = parse_yaml(text, Path("x.yml"), positions=True)
    assert problems == []
    assert repr(built[0]) == repr(doc.data)
    assert [type(k) for k in (built[0] or {})] == [type(k) for k in (doc.data or {})]


@pytest.mark.parametrize(
    "text",
    [
        "a: &x 1\nb: *x\n",
        "base: &b {m: 1}\nother:\n  <<: *b\n",
        "a: !!str 1\n",
        "a: !custom x\n",
        "a: 1\na: 2\n",
        "'true': 1\ntrue: 2\n",
        "a: .inf\n",
        "a: .nan\n",
        "a: " + "9" * 5000 + "\n",
        "a: 2024-01-01\n",
        'a: "\\ud800"\n',
        "--- 1\n--- 2\n",
        "? [a, b]\n: c\n",
        "x: " + "[" * (limits.MAX_YAML_DEPTH + 1) + "]" * (limits.MAX_YAML_DEPTH + 1),
        "a: b: c\n",
        "a: 1\nb: x\x00y\n",
    ],
    ids=[
        "alias",
        "merge key",
        "tag",
        "local tag",
        "duplicate",
        "duplicate by text",
        "inf",
        "nan",
        "long int",
        "date",
        "surrogate",
        "two documents",
        "list as key",
        "too deep",
        "syntax",
        "NUL",
    ],
)
def test_what_is_not_plain_data_is_left_to_the_composed_way(text: str) -> None:
    assert yamlloader.build_fast(text) is None


def test_the_node_bound_holds_when_built_from_events(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlloader, "MAX_YAML_NODES", 50)
    assert yamlloader.build_fast("".join(f"k{i}: v\n" for i in range(24))) is not None
    assert yamlloader.build_fast("a: [" + ", ".join("1" for _ in range(60)) + "]\n") is None


def test_a_large_file_keeps_its_diagnostics_and_positions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(document, "DEFER_POSITIONS", 100)
    text = "".join(f"k{i}: v{i}\n" for i in range(40))
    doc, problems = parse_yaml(text, Path("big.yml"))
    assert problems == [] and doc.data["k39"] == "v39"
    assert doc.values[("k39",)].line == 40  # placed from the text when first asked for
    doc, problems = parse_yaml(text + "k3: again\n", Path("big.yml"))
    assert [(p.line, p.key) for p in problems] == [(41, "k3")]
    assert "duplicate key 'k3' (first defined on line 4)" in problems[0].message
