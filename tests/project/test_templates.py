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
