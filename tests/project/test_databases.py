"""config.yml's warehouse databases: their keys are
checked as oxy checks them, and a file that names one is valid."""

from __future__ import annotations

import pytest

from oxyeval.errors import LoadError
from oxyeval.project import load_agent, load_project

from ..conftest import MakeProject

CONFIG = """\
models:
  - name: m
    vendor: mock
    outputs: ["ok"]
databases:
"""


def test_a_warehouse_takes_oxys_keys_and_a_tool_on_it_validates(make_project: MakeProject) -> None:
    # port as a string (oxy's files) or a number.
    config = CONFIG + (
        "  - {name: pg, type: postgres, host: localhost, port: '5432', user: admin,"
        " password_var: PG_PASSWORD, database: shop}\n"
        "  - {name: my, type: mysql, port: 3306, password: pw-literal}\n"
        "  - {name: bq, type: bigquery, key_path: key.json, datasets: {sales: ['*']}}\n"
    )
    tool = "{name: q, type: execute_sql, database: bq}"
    agent = f"model: m\nsystem_instructions: hi\ntools:\n  - {tool}\n"
    root = make_project(config, {"a.agent.yml": agent})
    project = load_project(root)
    assert project.databases["my"]["port"] == 3306
    assert not load_agent(project, root / "a.agent.yml").warnings


def test_a_warehouses_unknown_or_missing_key_is_an_error(make_project: MakeProject) -> None:
    config = CONFIG + (
        "  - {name: sf, type: snowflake, account: a, username: u, warehouse: w, database: d,"
        " rol: r}\n  - {name: sf2, type: snowflake, account: a, username: u, warehouse: w}\n"
    )
    with pytest.raises(LoadError) as info:
        load_project(make_project(config))
    messages = [d.message for d in info.value.diagnostics]
    assert any("unknown key 'rol'; did you mean 'role'?" in m for m in messages), messages
    assert any("missing required key 'database'" in m for m in messages), messages
    assert len(messages) == 2, messages
