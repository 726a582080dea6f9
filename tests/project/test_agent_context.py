"""oxy's built-in context of an agent's system_instructions (databases, tools, globals),
checked when the file loads: oxy's names validate, a typo is an error with "did you
mean", and what oxyeval cannot render yet is a warning, never an error."""

from __future__ import annotations

import pytest

from oxyeval.errors import LoadError
from oxyeval.project import load_agent, load_project, render

from ..conftest import MakeProject

CONFIG = """\
models:
  - name: m
    vendor: mock
    outputs: ["ok"]
databases:
  - name: local
    type: duckdb
    dataset: data
  - name: wh
    type: bigquery
    key_path: key.json
    datasets:
      sales: ["*"]
  - name: pg
    type: postgres
    host: localhost
    port: "5432"
    user: admin
    password_var: PG_PASSWORD
    database: shop
  - name: md
    type: motherduck
    token_var: MD_TOKEN
    schemas: {sales: [orders]}
"""

AGENT = """\
model: m
system_instructions: |
  {system}
tools:
  - name: q
    type: execute_sql
    database: local
  - name: retrieval
    type: retrieval
    src: ["data/*.csv"]
"""


def _load(make_project: MakeProject, system: str, files: dict[str, str] | None = None):
    root = make_project(
        CONFIG,
        {
            "data/orders.csv": "id\n1\n",
            "globals/tables.yml": "table_names: [orders]\n",
            "a.agent.yml": AGENT.format(system=system),
            **(files or {}),
        },
    )
    return load_agent(load_project(root), root / "a.agent.yml")


def test_oxys_context_validates_and_renders_stand_ins_at_load(make_project: MakeProject) -> None:
    agent = _load(
        make_project,
        "{{ databases.local.dialect }}/{{ databases.wh.dialect }}/{{ databases.pg.dialect }} "
        "{% with d = databases.local.datasets.duckdb %}[{{ d.dataset }}:{{ d.ddl }}]{% endwith %} "
        "{{ globals.tables.table_names | tojson }} {{ tools.agent_name }} {{ tools.prompt }}",
    )
    assert not [w for w in agent.warnings if "databases" in w.message]
    text = render(agent.system_instructions, agent.template_values(question="Q?"))
    assert text.strip() == 'duckdb/bigquery/postgres [duckdb:] ["orders"] a Q?'


@pytest.mark.parametrize(
    ("system", "message"),
    [
        ("{{ databases.lcoal.dialect }}", "no database 'lcoal'; did you mean 'local'?"),
        ("{{ databases.local.dialcet }}", "has no 'dialcet'; did you mean 'dialect'?"),
        (
            "{{ databases.local.datasets.duckbd.ddl }}",
            "no dataset 'duckbd'; did you mean 'duckdb'?",
        ),
        ("{{ databases.wh.datasets.sale.ddl }}", "no dataset 'sale'; did you mean 'sales'?"),
        ("{{ databases.local.datasets.duckdb.dll }}", "no 'dll'; did you mean 'ddl'?"),
        ("{{ tools.retrieve }}", "no tool 'retrieve'; did you mean 'retrieval'?"),
        ("{{ globals.tabels }}", "no globals file 'tabels'; did you mean 'tables'?"),
        ("{{ globals.tables.table_name }}", "no 'table_name'; did you mean 'table_names'?"),
        ("{{ databasez.local }}", "uses 'databasez'"),
    ],
)
def test_a_typo_in_oxys_context_is_an_error(
    make_project: MakeProject, system: str, message: str
) -> None:
    with pytest.raises(LoadError) as info:
        _load(make_project, system)
    errors = [d for d in info.value.diagnostics if d.severity == "error"]
    assert len(errors) == 1 and message in errors[0].message, errors
    assert errors[0].line == 3  # the template's line in the file


@pytest.mark.parametrize(
    ("system", "warning"),
    [
        ("{{ databases.md.datasets.sales.ddl }}", "not available for motherduck"),
        ("{{ databases.md.tables }}", "not available for motherduck"),
        ("{{ databases.local[0].dialect }}", "no longer as a list of datasets"),
        ("{{ dimensions.month }}", "semantic-layer context"),
        ("{{ tools.retrieval }}", "oxy renders nothing there"),
        ("{% for q in context.queries %}{{ q }}{% endfor %}", "oxy loops over nothing there"),
    ],
)
def test_what_oxyeval_cannot_render_yet_is_a_warning(
    make_project: MakeProject, system: str, warning: str
) -> None:
    agent = _load(make_project, system)
    assert any(warning in w.message for w in agent.warnings), agent.warnings


@pytest.mark.parametrize(
    "system", ["{{ databases.wh.datasets.sales.ddl }}", "{{ databases.pg.tables }}"]
)
def test_a_warehouses_ddl_is_read_at_run_time_without_a_warning(
    make_project: MakeProject, system: str
) -> None:
    agent = _load(make_project, system)
    assert not [w for w in agent.warnings if "ddl" in w.message.lower()], agent.warnings


def test_a_loop_over_an_undeclared_context_renders_empty_and_a_print_is_an_error(
    make_project: MakeProject,
) -> None:
    agent = _load(make_project, "[{% for q in context.queries %}{{ q }}{% endfor %}]")
    assert render(agent.system_instructions, agent.template_values()).strip() == "[]"
    with pytest.raises(LoadError, match="has no context 'queries'"):
        _load(make_project, "{{ context.queries }}")


def test_a_variable_named_like_oxys_context_gives_way_to_it(make_project: MakeProject) -> None:
    root = make_project(
        CONFIG,
        {
            "data/orders.csv": "id\n1\n",
            "a.agent.yml": "model: m\nsystem_instructions: '{{ tools.agent_name }}'\n"
            "variables:\n  tools: mine\n",
        },
    )
    agent = load_agent(load_project(root), root / "a.agent.yml")
    assert any("takes this variable's place" in w.message for w in agent.warnings)
    assert render(agent.system_instructions, agent.template_values()) == "a"


def test_a_globals_file_that_is_not_a_mapping_is_an_error(make_project: MakeProject) -> None:
    with pytest.raises(LoadError, match="a globals file is a mapping"):
        _load(make_project, "{{ globals.tables }}", {"globals/tables.yml": "- a\n- b\n"})


def test_the_semantic_layer_stops_a_run_not_a_check_at_load(make_project: MakeProject) -> None:
    agent = _load(make_project, "[{{ dimensions.month }}]")
    assert render(agent.system_instructions, agent.template_values()).strip() == "[]"
    with pytest.raises(LoadError, match="'dimensions' is oxy's semantic-layer context"):
        render(agent.system_instructions, agent.template_values(describe=lambda name: {}))
