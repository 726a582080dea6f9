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
