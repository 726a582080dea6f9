from __future__ import annotations

from pathlib import Path

import pytest

from oxyeval.errors import LoadError
from oxyeval.project.document import parse_yaml
from oxyeval.project.templates import TemplateRef, referenced_names, render


def test_renders_variables() -> None:
    assert render(TemplateRef("Hi {{ name }}!"), {"name": "Ada"}) == "Hi Ada!"


def test_undefined_variable_points_at_file_line() -> None:
    doc, _ = parse_yaml("a: 1\nsys: |\n  line one\n  {{ nmae }}\n", Path("x.agent.yml"))
    ref = TemplateRef(doc.data["sys"], doc, ("sys",))
    with pytest.raises(LoadError) as info:
        render(ref, {"name": "x"})
    d = info.value.diagnostics[0]
    assert (d.file, d.line, d.key) == ("x.agent.yml", 4, "sys")
    assert "'nmae' is undefined" in d.message
    assert "variables available here: name" in d.message


def test_sandbox_blocks_python_internals() -> None:
    with pytest.raises(LoadError, match="sandbox"):
        render(TemplateRef("{{ ''.__class__.__mro__[1].__subclasses__() }}"), {})


def test_referenced_names() -> None:
    ref = TemplateRef("{{ a }} {% for x in b %}{{ x }}{{ c.d }}{% endfor %}")
    assert referenced_names(ref) == {"a", "b", "c"}


# A template of text and ``{{ name }}`` prints only is filled without the sandbox when its
# values are text: the result must be the sandbox's, byte for byte, and anything else
# (another type, a missing name, a limit) must still go through the sandbox's checks.
PLAIN_FORMS = [
    ("Classify: {{ text }}", {"text": "good item"}),
    ("A {{- text -}} B\n", {"text": " x "}),
    ("{# note #}{{ a }}{% raw %}{{ b }}{% endraw %}\n\n", {"a": "1"}),
    ("{{ a }}{{ a }} {{ b }}", {"a": "é", "b": "{{ not a template }}"}),
    ("line\n  {{ q }}\n", {"q": "two\nlines"}),
    ("Say {{ n }} and {{ f }}, {{ g }}", {"n": -12, "f": 0.1, "g": float("nan")}),
]


@pytest.mark.parametrize(("source", "values"), PLAIN_FORMS)
def test_plain_template_renders_as_the_sandbox_does(source: str, values: dict) -> None:
    from oxyeval.project.templates import environment

    ref = TemplateRef(source)
    assert render(ref, values) == environment().from_string(source).render(values)
    assert ref._plain, "this form is filled without the sandbox"


@pytest.mark.parametrize(
    ("source", "values", "expected"),
    [
        ("{{ b }} items", {"b": True}, "True items"),  # not text: printed by Jinja
        ("{{ n }}", {"n": 10**400}, "1" + "0" * 400),
        ("{{ xs }}", {"xs": ["a"]}, "['a']"),
        ("{{ text | upper }}", {"text": "a"}, "A"),  # not plain
        ("{{ self }}", {"self": "mine"}, None),  # bound by Jinja, never the value
    ],
)
def test_other_templates_and_values_go_through_the_sandbox(
    source: str, values: dict, expected: str | None
) -> None:
    out = render(TemplateRef(source), values)
    assert out == expected if expected is not None else out != "mine"


def test_plain_template_missing_name_and_limit_are_the_sandbox_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ref = TemplateRef("Hi {{ name }}")
    with pytest.raises(LoadError, match="'name' is undefined"):
        render(ref, {"nmae": "x"})
    monkeypatch.setenv("OXY_MAX_RENDER_CHARS", "10")
    assert render(ref, {"name": "x" * 7}) == "Hi " + "x" * 7
    with pytest.raises(LoadError, match="limited to 10"):
        render(ref, {"name": "x" * 8})
