"""Resource limits: YAML depth and aliases, file size, schema maxima, the template sandbox."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.errors import LoadError
from oxyeval.inputs import MAX_INT_DIGITS
from oxyeval.project import limits
from oxyeval.project.document import load_yaml, parse_yaml, path_problem
from oxyeval.project.schema import SCHEMA_FILES, load_schema, validate_document
from oxyeval.project.templates import TemplateRef, evaluate, render

from ..conftest import MakeProject

# -- YAML -----------------------------------------------------------------------------


def _parse(text: str) -> tuple[object, list[str]]:
    doc, problems = parse_yaml(text, Path("x.yml"))
    return doc.data, [p.format() for p in problems]


def test_nesting_at_the_limit_loads_and_one_more_level_does_not() -> None:
    depth = limits.MAX_YAML_DEPTH - 1  # the top-level mapping is the first level
    data, problems = _parse("x: " + "[" * depth + "1" + "]" * depth)
    assert problems == []
    inner = data["x"]  # type: ignore[index]
    for _ in range(depth - 1):
        inner = inner[0]
    assert inner == [1]
    _, problems = _parse("x: " + "[" * (depth + 1) + "1" + "]" * (depth + 1))
    assert len(problems) == 1
    assert f"nested more than {limits.MAX_YAML_DEPTH} levels" in problems[0]
    assert problems[0].startswith("error: x.yml:1:")


@pytest.mark.parametrize(
    "text",
    [
        "x: " + "[" * 5000 + "]" * 5000,
        "x: " + "{a: " * 5000 + "1" + "}" * 5000,
        "".join("  " * i + "a:\n" for i in range(300)),  # block mappings, by indentation
    ],
    ids=["flow lists", "flow mappings", "block mappings"],
)
def test_deep_nesting_is_an_error_with_a_line_not_a_recursion_error(text: str) -> None:
    _, problems = _parse(text)
    assert len(problems) == 1
    assert "levels deep" in problems[0]
    assert "x.yml:" in problems[0]


def test_alias_bomb_is_stopped_at_the_line_that_crosses_the_limit() -> None:
    text = 'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n'
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        text += f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n"
    _, problems = _parse(text)
    assert len(problems) == 1
    assert f"more than {limits.MAX_ALIAS_NODES:,} nodes" in problems[0]
    # 9 + 9*10 + 9*91 + ... : the aliases of line 6 (f) are the first to pass 100,000
    assert problems[0].startswith("error: x.yml:6:")


def test_aliases_that_expand_deeply_count_towards_the_depth() -> None:
    half = limits.MAX_YAML_DEPTH // 2 + 1
    text = f"a: &a {'[' * half}1{']' * half}\nb: {'[' * half}*a{']' * half}\n"
    _, problems = _parse(text)
    assert len(problems) == 1
    assert "alias *a nests the data" in problems[0]
    assert problems[0].startswith("error: x.yml:2:")


def test_ordinary_anchors_and_merge_keys_still_load() -> None:
    data, problems = _parse(
        "base: &base {model: m, n: 3}\none:\n  <<: *base\n  n: 4\ntwo: *base\nlist: [*base, *base]\n"
    )
    assert problems == []
    assert data == {
        "base": {"model": "m", "n": 3},
        "one": {"model": "m", "n": 4},
        "two": {"model": "m", "n": 3},
        "list": [{"model": "m", "n": 3}, {"model": "m", "n": 3}],
    }


@pytest.mark.parametrize("text", ["x: &a [*a]", "x: &a {b: *a}"])
def test_a_structure_that_contains_itself_is_an_error(text: str) -> None:
    _, problems = _parse(text)
    assert len(problems) == 1
    assert "used inside the node it names" in problems[0]


@pytest.mark.parametrize(
    "value",
    [
        "9" * 5000,  # past Python's own 4,300-digit limit
        "-" + "1" * 309,
        "0x" + "f" * 300,  # no decimal digits to count: refused by its value
        "1_" * 400 + "1",
    ],
    ids=["5000 digits", "309 digits", "hex", "underscores"],
)
def test_an_integer_past_a_floats_range_is_an_error_at_its_line(value: str) -> None:
    key = "7" * 400  # a key too (a simple key is at most 1,024 characters)
    data, problems = _parse(f"ok: 1\ninput:\n  n: {value}\n  {key}: key\n")
    assert len(problems) == 2
    assert all(f"more than {MAX_INT_DIGITS} digits" in p for p in problems), problems
    assert problems[0].startswith("error: x.yml:3:6") and "input.n" in problems[0]
    assert problems[1].startswith("error: x.yml:4:3")
    # the rest of the file is still read (the integer as the text it is)
    assert data["ok"] == 1 and data["input"]["n"] == value  # type: ignore[index]


def test_an_integer_of_308_digits_loads() -> None:
    data, problems = _parse(f"n: {'9' * 308}\nm: -0x{'f' * 255}\n")
    assert problems == []
    assert data["n"] == 10**308 - 1 and data["m"] == -(16**255 - 1)  # type: ignore[index]


@pytest.mark.parametrize(
    "value",
    ["1:30", "190:20:30", "-1:30.5", "1" + ":59" * 2000, "1" + ":59" * 2000 + ".5"],
    ids=["int", "hours", "float", "long int", "long float"],
)
def test_base_60_numbers_are_text_as_in_yaml_1_2(value: str) -> None:
    data, problems = _parse(f"a: {value}\n")
    assert problems == []
    assert data == {"a": value}


@pytest.mark.parametrize(
    ("text", "where"),
    [("a: 1\nb: x\x00y\n", "x.yml:2:5"), ('a: 1\n\nb: "\x07"\n', "x.yml:3:5")],
    ids=["NUL", "bell in quotes"],
)
def test_a_control_character_is_an_error_at_its_line(text: str, where: str) -> None:
    _, problems = _parse(text)
    assert len(problems) == 1
    assert problems[0].startswith(f"error: {where}: the character U+00"), problems[0]
    assert "not allowed in a YAML file" in problems[0]


def test_a_file_with_too_many_values_is_refused_where_it_passes_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("oxyeval.project.yamlloader.MAX_YAML_NODES", 50)
    data, problems = _parse("".join(f"k{i}: v\n" for i in range(24)))  # 1 + 48 nodes
    assert problems == [] and len(data) == 24  # type: ignore[arg-type]
    _, problems = _parse("a: [" + ", ".join("1" for _ in range(60)) + "]\n")
    assert len(problems) == 1
    assert "more than 50 values" in problems[0]
    assert problems[0].startswith("error: x.yml:1:")


@pytest.mark.parametrize(
    "value", ["9" * 5000, "1" + ":59" * 300 + ".5", "x\x00"], ids=["int", "base 60", "NUL"]
)
def test_commands_report_bad_numbers_as_bad_input(make_project: MakeProject, value: str) -> None:
    root = make_project(
        files={
            "s.prompt.yml": "name: s\nmodel: agent_model\ntemplate: hi\nsimilarity: lexical\n"
            "cases:\n"
            f"  - name: a\n    input: {{x: {value}}}\n"
        }
    )
    for args in (
        ["validate", str(root / "s.prompt.yml")],
        ["cases", "list", "--project", str(root)],
    ):
        result = CliRunner().invoke(app, args)
        if value.startswith("1:"):  # text, as oxy reads it
            assert result.exit_code == 0, result.stderr
            continue
        assert result.exit_code == 2, (args, result.stderr)
        assert "s.prompt.yml:7" in result.stderr
        assert "internal error" not in result.stderr and "Traceback" not in result.stderr


def test_files_over_the_size_limit_are_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = tmp_path / "big.agent.yml"
    big.write_text("# " + "x" * limits.MAX_FILE_BYTES + "\n")
    with pytest.raises(LoadError, match="larger than 5 MB"):
        load_yaml(big)
    monkeypatch.setattr(
        "oxyeval.project.document.MAX_FILE_BYTES", 1000
    )  # the edge, without parsing 5 MB
    edge = tmp_path / "edge.agent.yml"
    edge.write_text("a: 1\n#" + "x" * (1000 - 7) + "\n")
    assert edge.stat().st_size == 1000
    assert load_yaml(edge).data == {"a": 1}
    edge.write_text("a: 1\n#" + "x" * (1000 - 6) + "\n")
    with pytest.raises(LoadError, match="larger than"):
        load_yaml(edge)


def test_path_problem_names_symlink_loops_and_broken_links(tmp_path: Path) -> None:
    loop = tmp_path / "loop.agent.yml"
    loop.symlink_to(loop.name)
    broken = tmp_path / "broken.agent.yml"
    broken.symlink_to("gone.agent.yml")
    fine = tmp_path / "fine.agent.yml"
    fine.write_text("a: 1\n")
    assert path_problem(loop) == "symlink loop (too many levels of symbolic links)"
    assert path_problem(broken) == "file not found (broken symlink to 'gone.agent.yml')"
    assert path_problem(tmp_path / "none.yml") == "file not found"
    assert path_problem(tmp_path) == "is a directory, expected a YAML file"
    assert path_problem(fine) is None
    with pytest.raises(LoadError, match="symlink loop"):
        load_yaml(loop)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_device_is_not_read(tmp_path: Path) -> None:
    link = tmp_path / "zero.agent.yml"
    link.symlink_to("/dev/zero")
    with pytest.raises(LoadError, match="not a regular file"):
        load_yaml(link)


# -- schemas ----------------------------------------------------------------------------


def _find(schema: object, key: str) -> list[dict[str, object]]:
    """Every property schema named ``key`` anywhere in a schema."""
    found: list[dict[str, object]] = []
    if isinstance(schema, dict):
        for name, value in schema.items():
            if name == key and isinstance(value, dict) and "type" in value:
                found.append(value)
            found.extend(_find(value, key))
    elif isinstance(schema, list):
        for value in schema:
            found.extend(_find(value, key))
    return found


@pytest.mark.parametrize(
    ("kind", "key", "maximum"),
    [
        ("common", "n", limits.MAX_RUNS),
        ("common", "concurrency", limits.MAX_CONCURRENCY),
        ("workflow", "consistency_run", limits.MAX_CONSISTENCY_RUN),
        ("workflow", "concurrency", limits.MAX_CONCURRENCY),
        ("workflow", "retry", limits.MAX_RETRIES),
        ("config", "concurrency", limits.MAX_CONCURRENCY),
        ("config", "max_retries", limits.MAX_RETRIES),
        ("agent", "max_tool_calls", limits.MAX_TOOL_CALLS),
        ("agent", "max_tool_concurrency", limits.MAX_TOOL_CALLS),
        ("cases", "recent", limits.MAX_RECENT),
    ],
)
def test_schema_maxima_are_the_documented_limits(kind: str, key: str, maximum: int) -> None:
    found = _find(load_schema(kind), key)
    assert found, f"{key} not in {kind}"
    for prop in found:
        assert prop["type"] == "integer"
        assert prop["maximum"] == maximum


def test_model_timeout_has_a_maximum() -> None:
    found = _find(load_schema("config"), "timeout")
    # chat models, embedding models, and databases (per query): duckdb and the six warehouses
    assert len(found) == 9
    assert all(prop["maximum"] == limits.MAX_TIMEOUT_S for prop in found)


def test_loop_values_list_has_the_loop_limit() -> None:
    text = json.dumps(load_schema("workflow"))
    assert f'"maxItems": {limits.MAX_LOOP_VALUES}' in text


def _agent_doc(n: str) -> list[str]:
    doc, problems = parse_yaml(
        f"model: m\nsystem_instructions: hi\ntests:\n  - type: consistency\n    n: {n}\n",
        Path("a.agent.yml"),
    )
    assert problems == []
    return [d.format() for d in validate_document(doc, "agent") if d.severity == "error"]


@pytest.mark.parametrize(
    ("n", "message"),
    [
        ("1.0e+9", "expected an integer, got float 1000000000.0"),
        ("10.0", "expected an integer, got float 10.0"),
        ("true", "expected an integer, got boolean true"),
        ("1000000000", "must be at most 10000, got 1000000000"),
    ],
)
def test_counts_are_integers_within_bounds(n: str, message: str) -> None:
    errors = _agent_doc(n)
    assert len(errors) == 1, errors  # one message per value, not "wrong type" and "too big"
    assert errors[0].startswith("error: a.agent.yml:5:8: tests[0].n: " + message)


@pytest.mark.parametrize("value", [".nan", ".inf", "-.Inf", "1.0e+999"])
def test_numbers_must_be_finite(value: str) -> None:
    """In every file and under every key (a variable's default, a case's input too): the
    loader refuses a non-finite number at its line, before any schema sees it."""
    for text, line, column in (
        (f"model: m\nsystem_instructions: hi\ntemperature: {value}\n", 3, 14),
        (f"model: m\nvariables:\n  x: {{default: {{a: [1, {value}]}}}}\n", 3, 24),
    ):
        _, problems = parse_yaml(text, Path("a.agent.yml"))
        (problem,) = problems
        assert (problem.line, problem.column) == (line, column)
        assert f"{value} is not a finite number" in problem.message


def test_all_pairs_are_limited_but_ring_allows_more_runs(make_project: MakeProject) -> None:
    agent = "model: agent_model\nsystem_instructions: hi\ntests:\n  - type: consistency\n    n: 2000\n    task_description: q\n"
    root = make_project(files={"a.agent.yml": agent, "r.agent.yml": agent + "    pairing: ring\n"})
    result = CliRunner().invoke(app, ["validate", str(root / "a.agent.yml")])
    assert result.exit_code == 2
    assert "2000 runs with pairing: all make 1,999,000 pairs to judge" in result.stderr
    assert "a.agent.yml:5" in result.stderr
    result = CliRunner().invoke(app, ["validate", str(root / "r.agent.yml")])
    assert result.exit_code == 0, result.stderr


# -- templates --------------------------------------------------------------------------


def _render(source: str, **context: object) -> str:
    return render(TemplateRef(source), context)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("{{ ('x' * 1000000000) | length }}", "a repeated string would be 1,000,000,000"),
        ("{{ 1000000000 * 'x' }}", "a repeated string"),
        ("{{ [1] * 1000000000 }}", "a repeated list would have 1,000,000,000 items"),
        ("{{ 10 ** 100000000 }}", "an integer of about"),
        ("{{ range(1000000000) | list }}", "range(...) of 1,000,000,000 items"),
        (
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
            "add up to more than 1,000,000 items",
        ),
        ("{{ '%999999999s' % 'x' }}", "a %-formatted string"),
        ("{{ '%*s' % (999999999, 'x') }}", "a %-formatted string"),
        ("{{ '%999999999s' | format('x') }}", "a %-formatted string"),
        ("{{ '{:999999999}'.format('x') }}", "a formatted field"),
        ("{{ '{:>{}}'.format('x', 999999999) }}", "a formatted field"),
        ("{{ 'x'.center(999999999) }}", "the result of .center()"),
        ("{{ 'x' | center(999999999) }}", "center(width)"),
        ("{{ 'a\nb' | indent(999999999) }}", "indent(...)"),
        ("{% set s = 'x' * 100000 %}{{ s | replace('x', s) }}", "replace(...)"),
        ("{% set s = 'x' * 100000 %}{{ s.replace('x', s) }}", "the result of .replace()"),
        ("{% set s = 'x' * 100000 %}{{ ([s] * 400) | join }}", "join(...)"),
        ("{% set s = 'x' * 100000 %}{{ ''.join([s] * 400) }}", "the result of .join()"),
        ("{% set s = 'x' * 100000 %}{{ ([s] * 100000) | join }}", "a repeated list would be"),
        (
            "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
            "a ~ concatenation",
        ),
        (
            "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
            "a + concatenation",
        ),
        ("{% for i in range(100000) %}{{ 'x' * 100 }}{% endfor %}", "the rendered text"),
        (
            "{% macro m() %}{% for i in range(100000) %}{{ 'x' * 100 }}{% endfor %}{% endmacro %}{{ m() | length }}",
            "the rendered text",
        ),
        (
            "{% set b = 'x' * 4000000 %}{% for i in range(1000) %}{% set c = b ~ i %}{% endfor %}",
            "built or walked more than 50,000,000 characters",
        ),
        ("{{ lipsum(1000000) }}", "lipsum(...) is limited"),
        ("{{ [1] | batch(999999999, 0) | list }}", "batch(...) would have"),
        ("{{ {'a': 1} | tojson(indent=999999999) }}", "tojson(indent)"),
        ("{{ 'a\tb'.expandtabs(999999999) }}", "the result of .expandtabs()"),
        ("{{ ('a' * 1000).translate({97: 'x' * 100000}) }}", "the result of .translate()"),
        ("{{ ('a' * 1000).translate(['x' * 10000] * 98) }}", "the result of .translate()"),
    ],
)
def test_sandbox_limits(source: str, message: str) -> None:
    with pytest.raises(LoadError) as info:
        _render(source)
    text = str(info.value)
    assert "template exceeds a sandbox limit" in text
    assert message in text


def test_calls_are_counted_across_a_rendering(monkeypatch: pytest.MonkeyPatch) -> None:
    """2**40 macro calls that print nothing: no output limit would ever stop them."""
    monkeypatch.setattr("oxyeval.project.sandbox.MAX_TEMPLATE_CALLS", 2_000)
    source = "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}"
    assert _render(source + "{{ f(9) }}") == ""  # 1,023 calls
    with pytest.raises(LoadError, match="more than 2,000 calls in one rendering"):
        _render(source + "{{ f(40) }}")


def test_endless_recursion_and_mutation_are_errors_too() -> None:
    with pytest.raises(LoadError, match="recursion too deep"):
        _render("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}")
    with pytest.raises(LoadError, match="sandbox"):  # would loop forever over a growing list
        _render("{% for x in items %}{{ items.append(x) }}{% endfor %}", items=[1])
    with pytest.raises(LoadError, match="nested too deeply to parse"):
        _render("{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}")


def test_ordinary_templates_render_as_before() -> None:
    source = (
        "{{ 'abc' ~ 'def' }} {{ [1, 2] + [3] }} {{ 'a' + 'b' }} {{ 3 * 4 }} {{ 2 ** 10 }} "
        "{{ '%s-%03d' % ('a', 7) }} {{ 'x' | center(5) }}|{{ [1, 2, 3] | join(',') }} "
        "{{ [1, 2] | sum }} {{ [[1], [2]] | sum(start=[]) }} {{ '{:>4}'.format('x') }} "
        "{{ 'ab' * 2 }} {{ rows | map(attribute='a') | join('/') }} {{ 'a b' | replace(' ', '_') }}"
        "{% for r in rows %} {{ loop.index }}:{{ r.a | upper }}{% endfor %}"
    )
    out = _render(source, rows=[{"a": "x"}, {"a": "y"}])
    assert out == (
        "abcdef [1, 2, 3] ab 12 1024 a-007   x  |1,2,3 3 [1, 2]    x abab x/y a_b 1:X 2:Y"
    )


def test_a_large_result_table_renders_within_the_limit() -> None:
    rows = [{"region": f"region {i}", "total": i} for i in range(20_000)]
    out = _render("{% for r in rows %}{{ r.region ~ ': ' ~ r.total }}\n{% endfor %}", rows=rows)
    assert out.count("\n") == 20_000


def test_render_limit_can_be_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OXY_MAX_RENDER_CHARS", "1000")
    with pytest.raises(LoadError, match="limited to 1,000"):
        _render("{{ 'x' * 1001 }}")
    assert len(_render("{{ 'x' * 1000 }}")) == 1000
    monkeypatch.setenv("OXY_MAX_RENDER_CHARS", "not a number")
    assert limits.render_limit() == limits.MAX_RENDER_CHARS


def test_render_error_names_the_file_key_and_line() -> None:
    doc, _ = parse_yaml(
        "a: 1\ntemplate: |\n  fine\n  {{ 'x' * 1000000000 }}\n", Path("w.workflow.yml")
    )
    with pytest.raises(LoadError) as info:
        render(TemplateRef(doc.data["template"], doc, ("template",)), {})
    d = info.value.diagnostics[0]
    assert (d.file, d.line, d.key) == ("w.workflow.yml", 4, "template")


def test_expressions_have_the_same_limits() -> None:
    from jinja2.sandbox import SecurityError

    assert evaluate("range(3) | list", {}) == [0, 1, 2]
    with pytest.raises(SecurityError, match="range"):
        evaluate("range(1000000000) | list", {})


# -- commands ---------------------------------------------------------------------------

LOOP = """\
tasks:
  - name: l
    type: loop_sequential
    values: "{{ range(%d) | list }}"
    tasks: [{name: f, type: formatter, template: "{{ l.value }}"}]
"""


def test_a_loop_over_too_many_values_exits_2_and_at_the_cap_runs(make_project: MakeProject) -> None:
    root = make_project(
        files={
            "big.workflow.yml": LOOP % (limits.MAX_LOOP_VALUES + 1),
            "ok.workflow.yml": LOOP % 3,
        }
    )
    result = CliRunner().invoke(app, ["run", str(root / "big.workflow.yml"), "--format", "json"])
    assert result.exit_code == 2, result.stderr
    assert "values has 10,001 items; a loop runs over at most 10,000" in result.stderr
    assert json.loads(result.stdout)["summary"]["exitCode"] == 2
    result = CliRunner().invoke(app, ["run", str(root / "ok.workflow.yml")])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.split() == ["0", "1", "2"]


def test_a_template_limit_in_a_workflow_test_exits_2(make_project: MakeProject) -> None:
    workflow = (
        "tasks:\n  - {name: f, type: formatter, template: \"{{ 'x' * 1000000000 }}\"}\n"
        "tests:\n  - {type: consistency, n: 2}\n"
    )
    root = make_project(files={"w.workflow.yml": workflow})
    result = CliRunner().invoke(app, ["test", str(root / "w.workflow.yml"), "--format", "json"])
    assert result.exit_code == 2, result.stderr
    assert "w.workflow.yml:2" in result.stderr
    assert json.loads(result.stdout)["exitCode"] == 2


def test_schema_help_lists_every_schema() -> None:
    result = CliRunner().invoke(app, ["schema", "--help"])
    kinds = list(SCHEMA_FILES)
    assert len(kinds) == 9
    shown = re.sub(r"-\s+", "-", " ".join(result.stdout.split()))  # wrapped at hyphens
    for kind in kinds:  # common too: agent, workflow and prompt $ref it
        assert kind in shown
        assert CliRunner().invoke(app, ["schema", kind]).exit_code == 0
    wrong = CliRunner().invoke(app, ["schema", "nope"])
    assert wrong.exit_code == 2
    assert "choose config, agent, workflow, prompt, cases, test, chattest-prompt" in wrong.stderr


def test_concurrency_flag_has_a_maximum(make_project: MakeProject) -> None:
    root = make_project(files={"w.workflow.yml": LOOP % 2})
    result = CliRunner().invoke(
        app, ["run", str(root / "w.workflow.yml"), "--concurrency", "1000000"]
    )
    assert result.exit_code == 2
    assert "1000000" in result.stderr
