"""``tojson`` writes the engine's own values through a small protocol (attack report,
cosmetic: ``{{ q | tojson }}`` of an SQL result was "TypeError: Object of type SqlResult is
not JSON serializable").

The project stage cannot import the workflow's classes, so a value the engine puts into
templates says what it is as JSON through a ``_template_json()`` method (which templates
themselves cannot call); other mappings are written as mappings, anything else is an
error in the template author's words.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from oxyeval.errors import LoadError
from oxyeval.project.templates import TemplateRef, render


class Engine:
    """Stands for an engine value (an SQL result) with the protocol."""

    def __init__(self, rows: Any) -> None:
        self.rows = rows

    def _template_json(self) -> Any:
        return self.rows


class Outputs(Mapping[str, Any]):
    """A mapping that is not a dict (the engine's task outputs are one)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def _render(source: str, **context: object) -> str:
    return render(TemplateRef(source), context)


def test_engine_values_are_written_by_their_protocol_at_any_depth() -> None:
    q = Engine([{"b": 1, "a": "x<"}])
    out = Outputs({"q": q, "t": "done"})
    assert _render("{{ q | tojson }}", q=q) == '[{"a": "x\\u003c", "b": 1}]'
    assert _render("{{ {'k': [out]} | tojson }}", out=out) == (
        '{"k": [{"q": [{"a": "x\\u003c", "b": 1}], "t": "done"}]}'
    )
    assert _render("{{ q | tojson(1) }}", q=q) == '[\n {\n  "a": "x\\u003c",\n  "b": 1\n }\n]'


def test_the_protocol_is_not_reachable_from_templates() -> None:
    with pytest.raises(LoadError, match="unsafe"):
        _render("{{ q._template_json() }}", q=Engine([]))


def test_what_an_engine_value_writes_is_weighed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OXY_MAX_RENDER_CHARS", "10000")
    with pytest.raises(LoadError, match=r"tojson\(\.\.\.\) would be more than 10,000"):
        _render("{{ q | tojson }}", q=Engine([["x" * 1000] * 11]))


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("{{ namespace(a=1) | tojson }}", "tojson cannot write a namespace value"),
        ("{{ [lipsum] | tojson(2) }}", "tojson cannot write a function value"),
        ("{{ nope | tojson }}", "'nope' is undefined"),
    ],
)
def test_other_values_are_an_error_in_the_template_s_words(source: str, message: str) -> None:
    with pytest.raises(LoadError) as info:
        _render(source)
    assert message in str(info.value)
    assert "JSON serializable" not in str(info.value)
