"""A template too deeply nested or too large to compile is bad input with a line,
found when its file loads: never Python's SyntaxError, IndentationError,
RecursionError or MemoryError as an internal error, never a minute of compiling."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from oxyeval.errors import LoadError
from oxyeval.project import limits, template_shape
from oxyeval.project.document import parse_yaml
from oxyeval.project.templates import TemplateRef, referenced_names, render, template_diagnostics


def nested(open_tag: str, close_tag: str, levels: int, inner: str = "x") -> str:
    """``levels`` blocks inside each other, one per line (the n-th opens on line n)."""
    return "".join(f"{open_tag}\n" for _ in range(levels)) + inner + close_tag * levels


def problem(source: str, cls: type[TemplateRef] = TemplateRef) -> tuple[str, int | None]:
    """The one diagnostic of a template in a file, as (message, file line)."""
    text = "a: 1\ntemplate: |\n" + "".join(f"  {line}\n" for line in source.split("\n"))
    doc, _ = parse_yaml(text, Path("w.workflow.yml"))
    started = time.monotonic()
    (d,) = template_diagnostics(cls(doc.data["template"], doc, ("template",)))
    assert time.monotonic() - started < 5
    assert (d.file, d.key) == ("w.workflow.yml", "template")
    return d.message, d.line


FOR = "{% for i in x %}", "{% endfor %}"
IF = "{% if x %}", "{% endif %}"


@pytest.mark.parametrize(
    ("source", "message", "template_line"),
    [
        (nested(*FOR, 25), "template blocks nested more than 20 deep", 21),
        (nested(*IF, 150), "template blocks nested more than 20 deep", 21),
        (nested("{% macro m() %}", "{% endmacro %}", 21), "nested more than 20 deep", 21),
        (nested(*IF, 2000), "template nested too deeply to parse", None),
        (
            "{% if a %}" + "{% elif a %}\n" * 501 + "{% endif %}",
            "more than 500 {% elif %} branches",
            501,
        ),
        ("\n{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}", "nested too deeply to parse", 2),
        ("\n{{ " + " + ".join(["a"] * 5000) + " }}", "expression nested more than 50", 2),
        ("\n{{ a" + " | upper" * 51 + " }}", "expression nested more than 50", 2),
        ("\n{{ " + " and ".join(["a"] * 60) + " }}", "expression nested more than 50", 2),
        ("{{ [" + ", ".join(["1"] * 30000) + "] }}", "more than 50,000 names, values", 1),
        ("x\n" + "{{ a }}" * 20000, "template too large to compile", 2),
    ],
    ids=[
        "25 nested for",
        "150 nested if",
        "21 nested macros",
        "2000 nested if",
        "501 elif",
        "5000 parentheses",
        "5000 additions",
        "51 filters",
        "60 ands",
        "a huge literal",
        "20000 prints",
    ],
)
def test_too_deep_or_too_large_templates_are_errors_at_their_line(
    source: str, message: str, template_line: int | None
) -> None:
    found, line = problem(source)
    assert message in found
    assert "syntax error" not in found  # it is not one: the template is too complex
    if template_line is not None:
        assert line == 2 + template_line  # the template starts on line 3 of the file


def test_at_the_limits_templates_compile_and_render() -> None:
    deep = nested(*FOR, 20, "{{ i }}")
    assert render(TemplateRef(deep), {"x": [1]}) == "\n" * 20 + "1"
    elifs = (
        "{% if a == 0 %}zero"
        + "".join(f"{{% elif a == {n} %}}{n}" for n in range(1, 501))
        + "{% endif %}"
    )
    assert render(TemplateRef(elifs), {"a": 500}) == "500"
    chain = "{{ a" + " | trim" * 49 + " }}"
    assert render(TemplateRef(chain), {"a": " b "}) == "b"


def test_referenced_names_of_a_template_too_deep_are_none_not_a_crash() -> None:
    assert referenced_names(TemplateRef(nested(*FOR, 25))) == set()


def test_what_python_still_refuses_is_a_template_error_with_a_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past our checks (here lifted), Python's compiler refuses the code Jinja generated:
    the same kind of error, at the template line Jinja's map gives."""
    monkeypatch.setattr(template_shape, "MAX_TEMPLATE_NESTING", 1_000)
    found, line = problem(nested(*FOR, 25))
    assert "template too complex to compile (too many statically nested blocks)" in found
    assert line is not None and 3 <= line <= 2 + 25
    with pytest.raises(LoadError, match="too complex to compile"):
        render(TemplateRef(nested(*IF, 150)), {"x": 1})


def test_the_limits_are_documented() -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "reference" / "errors-and-limits.md"
    readme = page.read_text("utf-8")
    for value in (
        limits.MAX_TEMPLATE_NESTING,
        limits.MAX_TEMPLATE_ELIFS,
        limits.MAX_TEMPLATE_EXPRESSION_DEPTH,
        limits.MAX_TEMPLATE_TOKENS,
        limits.MAX_TEMPLATE_ITERATIONS,
    ):
        assert f"{value:,}" in readme
    assert "OXY_RENDER_TIMEOUT" in readme and f"{limits.RENDER_TIMEOUT_S:g} s" in readme
