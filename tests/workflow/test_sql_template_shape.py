"""SQL templates overlay the sandbox's environment: the same compile-time checks of their
shape and the same rendering bounds apply to them."""

from __future__ import annotations

import pytest

from oxyeval.errors import LoadError
from oxyeval.workflow.sqltemplate import SqlTemplateRef, render_sql

from ..project.test_sandbox_shape import nested, problem


def test_sql_templates_too_deep_are_errors_at_their_line() -> None:
    found, line = problem(nested("SELECT 1 {% for i in x %}", "{% endfor %}", 25), SqlTemplateRef)
    assert "nested more than 20 deep" in found and line == 2 + 21
    assert "template syntax error" not in found  # a limit, said as one (as for any template)
    found, _ = problem("SELECT {{ " + "(" * 5000 + "1" + ")" * 5000 + " }}", SqlTemplateRef)
    assert "nested too deeply to parse" in found


def test_sql_templates_at_the_limit_render_with_bound_values() -> None:
    sql = nested("{% for i in x %}", "{% endfor %}", 20, "SELECT {{ i }}, {{ [i, i] | length }}")
    bound = render_sql(SqlTemplateRef(sql), {"x": [7]})
    assert bound.text.strip() == "SELECT $1, $2" and bound.params == (7, 2)


def test_sql_templates_have_the_rendering_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OXY_MAX_RENDER_CHARS", "1000")
    with pytest.raises(LoadError, match="a repeated list would be more than 10,000"):
        render_sql(SqlTemplateRef("SELECT {{ ['x' * 999] * 20 }}"), {})
    loop = "{% set r = range(100000) %}{% for i in r %}{% for j in r %}{% endfor %}{% endfor %}"
    with pytest.raises(LoadError, match="loop iterations"):
        render_sql(SqlTemplateRef("SELECT 1 " + loop), {})
