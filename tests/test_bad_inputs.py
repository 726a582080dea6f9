"""A corpus of bad project files, each run through the commands a user would run on it.

Every entry must end in a clear error: the expected exit code, the file (and line,
where there is one) on stderr, no traceback or "internal error" anywhere, and with
``--format json`` a stdout that parses as JSON. Each entry runs in-process (typer's
CliRunner, fast) in both formats; the entries in ``REAL_PROCESS`` also run as a real
``python -m oxyeval`` process, where a RecursionError or MemoryError could not hide.

To add a case, add one ``Bad(...)`` line to ``CORPUS``: an id, the files (name ->
text; ``bytes`` for binary content, ``Symlink(target)`` for a link; a ``config.yml``
entry replaces the default mock config), the commands to run on the first file
(``validate``, ``test``, ``run``, ``cases``), the substring stderr must contain
(``"a.agent.yml:5"``), and the exit code (default 2). ``target=`` names the file to
run on when it is not the first one; ``xfail="why"`` marks a known bug not fixed yet.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import typer.main
import typer.testing
from typer.testing import CliRunner

from oxyeval.cli._app import app

CONFIG = """\
models:
  - name: agent_model
    vendor: mock
    outputs: ["The total is 42."]
  - name: judge
    vendor: mock
    rules:
      - match: "."
        output: "Same facts.\\nAnswer: A"
"""


def agent(n: str = "3", system: str = "Be brief.", extra: str = "") -> str:
    """An agent file whose consistency test is on line 5 (``n:`` on line 5)."""
    return (
        f"model: agent_model\nsystem_instructions: {system}\ntests:\n"
        f"  - type: consistency\n    n: {n}\n    task_description: total?\n{extra}"
    )


def workflow(task: str, head: str = "") -> str:
    """A workflow whose (first) task starts on line 2 (plus the lines of ``head``)."""
    return f"{head}tasks:\n  - {task}\n"


def prompt(extra: str = "") -> str:
    return (
        "model: agent_model\ntemplate: 'Say {{ word }}'\nsimilarity: lexical\n"
        f"{extra}cases:\n  - name: one\n    input: {{word: hi}}\n    expected_output: hi\n"
    )


def deep_list(levels: int) -> str:
    return "[" * levels + "1" + "]" * levels


def deep_map(levels: int) -> str:
    return "{a: " * levels + "1" + "}" * levels


SHOP = "databases:\n  - {name: shop, type: duckdb, dataset: data}\n"
LOOPS_1E10 = "{% set r = range(100000) %}{% for i in r %}{% for j in r %}{% endfor %}{% endfor %}"
# c and d: a thousand references to one list of a thousand references to one list
SHARED = "{% set a = [0] * 1000 %}{% set b = [a] * 1000 %}{% set c = [b] * 1000 %}{% set d = [b] * 1000 %}"


def nested_tags(tag: str, levels: int) -> str:
    """``levels`` {% for %} or {% if %} blocks inside each other, on one line."""
    opening = "{% for i in x %}" if tag == "for" else "{% if x %}"
    return opening * levels + f"{{% end{tag} %}}" * levels


BOMB = 'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n"
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
)  # 9**9 = 387,420,489 strings once expanded; line 6 (f) crosses the alias limit


@dataclass(frozen=True)
class Symlink:
    target: str


@dataclass(frozen=True)
class Bad:
    id: str
    files: dict[str, str | bytes | Symlink]
    commands: str  # space-separated: validate test run cases
    where: str  # stderr must contain this (file:line)
    code: int = 2
    xfail: str | None = None
    args: tuple[str, ...] = field(default_factory=tuple)  # extra arguments for run/test
    target: str = ""  # the file the commands take (default: the first file but config.yml)


CORPUS: list[Bad] = [
    # -- counts: integers only, with maxima ---------------------------------------------
    Bad("n float 1.0e+9", {"a.agent.yml": agent("1.0e+9")}, "validate test run", "a.agent.yml:5"),
    Bad("n 1000000000", {"a.agent.yml": agent("1000000000")}, "validate test run", "a.agent.yml:5"),
    Bad("n negative", {"a.agent.yml": agent("-3")}, "validate test", "a.agent.yml:5"),
    Bad("n a string", {"a.agent.yml": agent("ten")}, "validate test", "a.agent.yml:5"),
    Bad("n a boolean", {"a.agent.yml": agent("true")}, "validate test", "a.agent.yml:5"),
    Bad("n NaN", {"a.agent.yml": agent(".nan")}, "validate test", "a.agent.yml:5"),
    Bad("n 5000 all pairs", {"a.agent.yml": agent("5000")}, "validate test", "a.agent.yml:5"),
    Bad("n 99 digits", {"a.agent.yml": agent("9" * 99)}, "validate test", "a.agent.yml:5"),
    Bad(
        "test concurrency 10**6",
        {"a.agent.yml": agent(extra="    concurrency: 1000000\n")},
        "validate test",
        "a.agent.yml:7",
    ),
    Bad(
        "max_tool_calls 10**9",
        {"a.agent.yml": "model: agent_model\nsystem_instructions: hi\nmax_tool_calls: 1e9\n"},
        "validate run",
        "a.agent.yml:3",
    ),
    Bad(
        "temperature NaN",
        {"a.agent.yml": "model: agent_model\nsystem_instructions: hi\ntemperature: .nan\n"},
        "validate test run",
        "a.agent.yml:3",
    ),
    Bad(
        "consistency_run 1.0e+9",
        {
            "w.workflow.yml": workflow(
                "{name: t, type: agent, agent_ref: a.agent.yml, prompt: hi, consistency_run: 1.0e+9}"
            ),
            "a.agent.yml": "model: agent_model\nsystem_instructions: hi\n",
        },
        "validate run",
        "w.workflow.yml:2",
    ),
    Bad(
        "consistency_run 100000",
        {
            "w.workflow.yml": workflow(
                "{name: t, type: agent, agent_ref: a.agent.yml, prompt: hi, consistency_run: 100000}"
            ),
            "a.agent.yml": "model: agent_model\nsystem_instructions: hi\n",
        },
        "validate run",
        "w.workflow.yml:2",
    ),
    Bad(
        "loop concurrency 10**6",
        {
            "w.workflow.yml": workflow(
                "{name: l, type: loop_sequential, values: [1], concurrency: 1000000, "
                "tasks: [{name: f, type: formatter, template: x}]}"
            )
        },
        "validate run",
        "w.workflow.yml:2",
    ),
    Bad(
        "loop over 10,001 literal values",
        {
            "w.workflow.yml": workflow(
                "{name: l, type: loop_sequential, values: ["
                + ", ".join(["1"] * 10_001)
                + "], tasks: [{name: f, type: formatter, template: x}]}"
            )
        },
        "validate",
        "w.workflow.yml:2",
    ),
    Bad(
        "loop over 20,000 rendered values",
        {
            "w.workflow.yml": workflow(
                "{name: l, type: loop_sequential, values: '{{ range(20000) | list }}', "
                "tasks: [{name: f, type: formatter, template: x}]}"
            )
        },
        "run",
        "values has 20,000 items",
    ),
    Bad(
        "task retry 1000",
        {
            "w.workflow.yml": workflow(
                "{name: t, type: agent, agent_ref: a.agent.yml, prompt: hi, retry: 1000}"
            ),
            "a.agent.yml": "model: agent_model\nsystem_instructions: hi\n",
        },
        "validate run",
        "w.workflow.yml:2",
    ),
    Bad(
        "model concurrency 10**9",
        {
            "config.yml": CONFIG.replace(
                "    vendor: mock\n", "    vendor: mock\n    concurrency: 1000000000\n", 1
            ),
            "a.agent.yml": agent(),
        },
        "validate test",
        "config.yml:4",
    ),
    Bad(
        "mock latency of 30 years",
        {
            "config.yml": CONFIG.replace(
                "    vendor: mock\n", "    vendor: mock\n    latency_ms: 1.0e+12\n", 1
            ),
            "a.agent.yml": agent(),
        },
        "validate test",
        "config.yml:4",
    ),
    Bad(
        "prompt recent 10**6",
        {"p.prompt.yml": prompt("recent: 1000000\n")},
        "validate cases",
        "p.prompt.yml:4",
    ),
    # -- YAML that is too deep or expands too far -----------------------------------
    Bad(
        "5,000 nested lists",
        {"a.agent.yml": agent() + "x: " + deep_list(5000)},
        "validate test run",
        "a.agent.yml:7",
    ),
    Bad(
        "5,000 nested mappings",
        {"a.agent.yml": agent() + "x: " + deep_map(5000)},
        "validate test run",
        "a.agent.yml:7",
    ),
    Bad(
        "deep workflow",
        {
            "w.workflow.yml": workflow(
                "{name: f, type: formatter, template: x}", "v: " + deep_list(5000) + "\n"
            )
        },
        "validate run",
        "w.workflow.yml:1",
    ),
    Bad(
        "deep prompt file",
        {"p.prompt.yml": prompt("x: " + deep_map(5000) + "\n")},
        "validate cases",
        "p.prompt.yml:4",
    ),
    Bad(
        "deep config.yml",
        {"config.yml": CONFIG + "x: " + deep_list(5000) + "\n", "a.agent.yml": agent()},
        "validate test",
        "config.yml:10",
    ),
    Bad(
        "alias bomb in variables",
        {
            "a.agent.yml": "model: agent_model\nsystem_instructions: '{{ i }}'\nvariables:\n"
            + "".join("  " + line + "\n" for line in BOMB.splitlines())
        },
        "validate test run",
        "a.agent.yml:9",
    ),
    Bad(
        "recursive alias",
        {"a.agent.yml": agent() + "x: &a [*a]\n"},
        "validate test",
        "a.agent.yml:7",
    ),
    Bad(
        "deeply nested --vars file",
        {
            "w.workflow.yml": workflow(
                "{name: f, type: formatter, template: x}", "variables: {v: 1}\n"
            ),
            "vars.yml": "v: " + deep_list(5000),
        },
        "run",
        "vars.yml:1",
        args=("--vars", "vars.yml"),
    ),
    # -- templates over the sandbox's limits ------------------------------------------
    Bad(
        "string times a billion (agent)",
        {"a.agent.yml": agent(system="\"{{ ('x' * 1000000000) | length }}\"")},
        "test run",
        "a.agent.yml:2",
    ),
    Bad(
        "string times a billion (workflow)",
        {
            "w.workflow.yml": workflow(
                "{name: f, type: formatter, template: \"{{ ('x' * 1000000000) | length }}\"}"
            )
        },
        "run",
        "w.workflow.yml:2",
    ),
    Bad(
        "range of a billion",
        {
            "w.workflow.yml": workflow(
                "{name: f, type: formatter, template: '{{ range(1000000000) | list | length }}'}"
            )
        },
        "run",
        "w.workflow.yml:2",
    ),
    Bad(
        "padding of a billion",
        {
            "w.workflow.yml": workflow(
                "{name: f, type: formatter, template: \"{{ '%999999999s' | format('x') }}\"}"
            )
        },
        "run",
        "w.workflow.yml:2",
    ),
    Bad(
        "doubling in a loop",
        {
            "w.workflow.yml": workflow(
                "{name: f, type: formatter, template: \"{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}\"}"
            )
        },
        "run",
        "w.workflow.yml:2",
    ),
    Bad(
        "macro without end",
        {
            "w.workflow.yml": workflow(
                "{name: f, type: formatter, template: '{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}'}"
            )
        },
        "run",
        "w.workflow.yml:2",
    ),
    # -- broken files ---------------------------------------------------------------------
    Bad(
        "unclosed bracket",
        {"a.agent.yml": "model: agent_model\nsystem_instructions: [hi\n"},
        "validate test run",
        "a.agent.yml:2",
    ),
    Bad(
        "tab indentation",
        {"a.agent.yml": "model: agent_model\ntests:\n\t- type: consistency\n"},
        "validate test",
        "a.agent.yml:3",
    ),
    Bad(
        "duplicate key",
        {"a.agent.yml": "model: agent_model\nsystem_instructions: hi\nmodel: judge\n"},
        "validate test run",
        "a.agent.yml:3",
    ),
    Bad("empty file", {"a.agent.yml": ""}, "validate test run", "a.agent.yml"),
    Bad("only a comment", {"a.agent.yml": "# nothing here\n"}, "validate test", "a.agent.yml"),
    Bad(
        "a list, not a mapping",
        {"a.agent.yml": "- model: agent_model\n"},
        "validate test run",
        "a.agent.yml",
    ),
    Bad(
        "Latin-1 bytes",
        {"a.agent.yml": "model: agent_model\nsystem_instructions: caf\xe9\n".encode("latin-1")},
        "validate test run",
        "not UTF-8",
    ),
    Bad(
        "binary file",
        {"a.agent.yml": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00"},
        "validate test run",
        "a.agent.yml",
    ),
    Bad(
        "6 MB file",
        {"a.agent.yml": agent() + "# " + "x" * 6_000_000 + "\n"},
        "validate test",
        "larger than 5 MB",
    ),
    Bad(
        "missing file", {}, "validate test run", "a.agent.yml: file not found", target="a.agent.yml"
    ),
    Bad(
        "symlink loop",
        {"a.agent.yml": Symlink("a.agent.yml")},
        "validate test run cases",
        "a.agent.yml: symlink loop",
    ),
    Bad(
        "broken symlink",
        {"a.agent.yml": Symlink("gone.agent.yml")},
        "validate test run",
        "broken symlink",
    ),
    Bad(
        "a directory",
        {"a.agent.yml/x": "x"},
        "validate test run",
        "a.agent.yml",
        target="a.agent.yml",
    ),
    # -- wrong content --------------------------------------------------------------------
    Bad(
        "unknown model",
        {"a.agent.yml": "model: gpt-9\nsystem_instructions: hi\n"},
        "validate test run",
        "a.agent.yml:1",
    ),
    Bad(
        "unknown judge",
        {"a.agent.yml": agent(extra="    model_ref: judgee\n")},
        "validate test",
        "a.agent.yml:7",
    ),
    Bad(
        "misspelt key",
        {"a.agent.yml": "model: agent_model\nsystem_instruction: hi\n"},
        "validate test run",
        "a.agent.yml:2",
    ),
    Bad(
        "tests not a list",
        {"a.agent.yml": "model: agent_model\nsystem_instructions: hi\ntests: 5\n"},
        "validate test",
        "a.agent.yml:3",
    ),
    Bad(
        "template syntax error",
        {"a.agent.yml": agent(system="'Hi {{ name'")},
        "validate test run",
        "a.agent.yml:2",
    ),
    Bad(
        "undefined variable",
        {"a.agent.yml": agent(system="'Hi {{ nmae }}'")},
        "test run",
        "a.agent.yml:2",
    ),
    Bad(
        "template reaching internals",
        {"a.agent.yml": agent(system="\"{{ ''.__class__.__mro__ }}\"")},
        "test run",
        "a.agent.yml:2",
    ),
    Bad(
        "broken config.yml",
        {"config.yml": "models:\n  - name: x\n    vendor: [mock\n", "a.agent.yml": agent()},
        "validate test run",
        "config.yml:3",
    ),
    Bad(
        "empty config.yml",
        {"config.yml": "", "a.agent.yml": agent()},
        "validate test run",
        "config.yml",
    ),
    Bad(
        "unknown task type",
        {"w.workflow.yml": workflow("{name: f, type: formater, template: x}")},
        "validate run",
        "w.workflow.yml:2",
    ),
    Bad(
        "duplicate task names",
        {
            "w.workflow.yml": "tasks:\n  - {name: f, type: formatter, template: x}\n  - {name: f, type: formatter, template: y}\n"
        },
        "validate run",
        "w.workflow.yml:3",
    ),
    Bad(
        "prompt with no template",
        {"p.prompt.yml": "model: agent_model\ncases: []\n"},
        "validate cases",
        "p.prompt.yml:1",
    ),
    Bad("n infinite", {"a.agent.yml": agent("1e400")}, "validate test", "a.agent.yml:5"),
    Bad(
        "score NaN",
        {"a.agent.yml": agent(extra="    scores: {A: .nan, B: 0}\n")},
        "validate test",
        "a.agent.yml:7",
    ),
    Bad(
        "threshold NaN",
        {"p.prompt.yml": prompt("threshold: .nan\n")},
        "validate cases",
        "p.prompt.yml:4",
    ),
    Bad(
        "infinite timeout",
        {
            "config.yml": CONFIG.replace(
                "    vendor: mock\n", "    vendor: mock\n    timeout: .inf\n", 1
            ),
            "a.agent.yml": agent(),
        },
        "validate test run",
        "config.yml:4",
    ),
    Bad(
        "deep cases file",
        {
            "c.cases.yml": "prompt: p.prompt.yml\ncases:\n  - name: x\n    input: "
            + deep_map(5000)
            + "\n",
            "p.prompt.yml": prompt(),
        },
        "validate cases",
        "c.cases.yml:4",
    ),
    Bad(
        "cases file agent outside the project",
        {"c.cases.yml": "agent: ../../outside.agent.yml\ncases:\n  - name: x\n    input: {}\n"},
        "validate cases",
        "c.cases.yml:1",
    ),
    Bad(
        "cases file prompt outside the project",
        {"c.cases.yml": "prompt: /etc/passwd\ncases:\n  - name: x\n    input: {}\n"},
        "validate cases",
        "c.cases.yml:1",
    ),
    Bad(
        "deep sub-workflow",
        {
            "w.workflow.yml": workflow("{name: s, type: workflow, src: sub.workflow.yml}"),
            "sub.workflow.yml": "tasks: " + deep_list(5000) + "\n",
        },
        "run",
        "sub.workflow.yml:1",
    ),
    Bad(
        "deep --var value",
        {
            "w.workflow.yml": workflow(
                "{name: f, type: formatter, template: '{{ v }}'}",
                "variables:\n  v: {type: array, default: []}\n",
            )
        },
        "run",
        "variable 'v'",
        args=("--var", "v=" + deep_list(5000)),
    ),
    Bad(
        "SQL file not UTF-8",
        {
            "w.workflow.yml": workflow(
                "{name: q, type: execute_sql, database: shop, sql_file: q.sql}"
            ),
            "config.yml": CONFIG + "databases:\n  - {name: shop, type: duckdb, dataset: data}\n",
            "data/t.csv": "a\n1\n",
            "q.sql": b"SELECT 1 -- caf\xe9\n",
        },
        "validate run",
        "q.sql",
    ),
    # == Hardening round 2: one section per area, entries appended at its end ==
    #
    # -- round 2: the SQL sandbox --------------------------------------------------------
    Bad(
        "EXPLAIN ANALYZE of a COPY on a read-only database",
        {
            "w.workflow.yml": workflow(
                "{name: q, type: execute_sql, database: shop, "
                "sql_query: \"EXPLAIN ANALYZE COPY (SELECT 1) TO 'orders.csv'\"}"
            ),
            "config.yml": CONFIG + SHOP,
            "data/orders.csv": "a\n1\n",
        },
        "validate run",
        "w.workflow.yml:2",
    ),
    Bad(
        "IMPORT DATABASE",
        {
            "w.workflow.yml": workflow(
                "{name: q, type: execute_sql, database: shop, sql_query: \"IMPORT DATABASE 'x'\"}"
            ),
            "config.yml": CONFIG + SHOP,
            "data/orders.csv": "a\n1\n",
        },
        "validate run",
        "w.workflow.yml:2",
    ),
    Bad(
        "dataset folder missing",
        {
            "w.workflow.yml": workflow("{name: f, type: formatter, template: x}"),
            "config.yml": CONFIG + SHOP,
        },
        "validate run",
        "config.yml:11",
    ),
    Bad(
        "SQL names a file the dataset does not have",
        {
            "w.workflow.yml": workflow(
                "{name: q, type: execute_sql, database: shop, sql_query: 'SELECT * FROM citys.csv'}"
            ),
            "config.yml": CONFIG + SHOP,
            "data/cities.csv": "a\n1\n",
        },
        "validate run",
        "w.workflow.yml:2",
    ),
    Bad(
        "SQLite file as a DuckDB database",
        {
            "w.workflow.yml": workflow("{name: f, type: formatter, template: x}"),
            "config.yml": CONFIG + "databases:\n  - {name: shop, type: duckdb, path: shop.db}\n",
            "shop.db": b"SQLite format 3\x00" + bytes(100),
        },
        "validate run",
        "config.yml:11",
    ),
    Bad(
        "3,000 nested parentheses in SQL",
        {
            "w.workflow.yml": workflow(
                "{name: q, type: execute_sql, database: shop, "
                f"sql_query: 'SELECT {'(' * 3000}1{')' * 3000}'}}"
            ),
            "config.yml": CONFIG + SHOP,
            "data/orders.csv": "a\n1\n",
        },
        "validate run",
        "w.workflow.yml:2",
    ),
    #
    # -- round 2: secrets ----------------------------------------------------------------
    Bad(
        "literal api_key on a line with a schema error",
        {
            "a.agent.yml": agent(),
            "config.yml": CONFIG.replace(
                '  - name: agent_model\n    vendor: mock\n    outputs: ["The total is 42."]\n',
                "  - {name: agent_model, vendor: mock, outputs: [x], "
                "api_key: sk-lit-0a1b2c3d4e5f6a7b, temprature: 1}\n",
            ),
        },
        "validate test",
        "config.yml:2",
    ),
    Bad(
        "history url with a password in its query",
        {
            "a.agent.yml": agent(),
            "config.yml": CONFIG + "history: {url: 'postgresql://bob@h/db?password=pw-0a1b2c'}\n",
        },
        "validate",  # (oxy test here would use the harness's OXY_DB)
        "config.yml:10",
        target="config.yml",
    ),
    Bad(
        "a libpq connection string as --db",
        {"a.agent.yml": agent()},
        "test",
        "connection string",
        args=("--db", "host=127.0.0.1 dbname=h password='a b c'"),
    ),
    Bad(
        "a libpq connection string as history url",
        {
            "a.agent.yml": agent(),
            "config.yml": CONFIG + "history: {url: 'host=h dbname=d password=pw-0a1b2c'}\n",
        },
        "validate",  # (oxy test here would use the harness's OXY_DB)
        "config.yml:10",
        target="config.yml",
    ),
    Bad(
        "api_url password with a raw slash",
        {
            "a.agent.yml": agent(),
            "config.yml": CONFIG
            + "  - {name: hosted, vendor: openai, model_ref: x, "
            + "api_url: 'http://alice:pw/sk-0a1b2c3d4e5f@127.0.0.1:9/v1'}\n",
        },
        "validate test",
        "config.yml:10",
    ),
    Bad(
        "history url password with a raw slash",
        {
            "a.agent.yml": agent(),
            "config.yml": CONFIG + "history: {url: 'postgresql://bob:pa/ss-0a1b2c@h/db'}\n",
        },
        "validate",  # (oxy test here would use the harness's OXY_DB)
        "config.yml:10",
        target="config.yml",
    ),
    Bad(
        "--db password with a raw @",
        {"a.agent.yml": agent()},
        "test",
        "percent-encode",
        args=("--db", "postgresql://bob:pa@ss-0a1b2c@127.0.0.1:1/db"),
    ),
    Bad(
        "literal key through a YAML alias, anchor line quoted",
        {
            "a.agent.yml": agent(),
            "config.yml": 'defaults: &k "sk-alias-0a1b2c3d4e5f"\n'
            + CONFIG
            + "  - {name: hosted, vendor: openai, model_ref: x, api_key: *k}\n",
        },
        "validate test",
        "config.yml:1",
    ),
    #
    # -- round 2: template CPU and memory ------------------------------------------------
    #
    Bad(
        "ten billion loop iterations (formatter)",
        {"w.workflow.yml": workflow("{name: f, type: formatter, template: '" + LOOPS_1E10 + "'}")},
        "run",
        "w.workflow.yml:2",
    ),
    Bad(
        "ten billion loop iterations (system_instructions)",
        {"a.agent.yml": agent(system="'" + LOOPS_1E10 + "'")},
        "test run",
        "a.agent.yml:2",
    ),
    Bad(
        "a million characters a hundred thousand times",
        {
            "w.workflow.yml": workflow(
                "{name: f, type: formatter, template: "
                "\"{% set s='x'*1000000 %}{% set a=[s]*100000 %}{{ a }}\"}"
            )
        },
        "run",
        "w.workflow.yml:2",
    ),
    Bad(
        "comparing shared nested lists",
        {
            "w.workflow.yml": workflow(
                f"{{name: f, type: formatter, template: '{SHARED} {{{{ c == d }}}}'}}"
            )
        },
        "run",
        "w.workflow.yml:2",
    ),
    Bad(
        "shared nested lists as a string",
        {
            "w.workflow.yml": workflow(
                f"{{name: f, type: formatter, template: '{SHARED} {{{{ c | string }}}}'}}"
            )
        },
        "run",
        "w.workflow.yml:2",
    ),
    Bad(
        "25 nested for (formatter)",
        {
            "w.workflow.yml": workflow(
                f"{{name: f, type: formatter, template: '{nested_tags('for', 25)}'}}"
            )
        },
        "validate run",
        "w.workflow.yml:2",
    ),
    Bad(
        "150 nested if (system_instructions)",
        {"a.agent.yml": agent(system="'" + nested_tags("if", 150) + "'")},
        "validate test run",
        "a.agent.yml:2",
    ),
    Bad(
        "25 nested for (prompt template)",
        {"p.prompt.yml": prompt().replace("'Say {{ word }}'", "'" + nested_tags("for", 25) + "'")},
        "validate cases",
        "p.prompt.yml:2",
    ),
    Bad(
        "25 nested for (sql_query)",
        {
            "w.workflow.yml": workflow(
                "{name: q, type: execute_sql, database: shop, sql_query: 'SELECT 1 "
                + nested_tags("for", 25)
                + "'}"
            ),
            "config.yml": CONFIG + "databases:\n  - {name: shop, type: duckdb, dataset: data}\n",
            "data/t.csv": "a\n1\n",
        },
        "validate run",
        "w.workflow.yml:2",
    ),
    Bad(
        "501 elif",
        {
            "w.workflow.yml": workflow(
                "{name: f, type: formatter, template: '{% if a %}"
                + "{% elif a %}" * 501
                + "{% endif %}'}"
            )
        },
        "validate run",
        "w.workflow.yml:2",
    ),
    Bad(
        "expression 5000 additions deep",
        {"a.agent.yml": agent(system="'{{ " + " + ".join(["a"] * 5000) + " }}'")},
        "validate test",
        "a.agent.yml:2",
    ),
    Bad(
        "a literal of 30000 items",
        {"a.agent.yml": agent(system="'{{ [" + ", ".join(["1"] * 30000) + "] | length }}'")},
        "validate test",
        "a.agent.yml:2",
    ),
    Bad(
        "to_bytes of a billion bytes",
        {
            "w.workflow.yml": workflow(
                "{name: f, type: formatter, template: \"{{ (1).to_bytes(10**9, 'big') }}\"}"
            )
        },
        "run",
        "w.workflow.yml:2",
    ),
    Bad(
        "a string of five million characters sorted",
        {
            "w.workflow.yml": workflow(
                "{name: f, type: formatter, template: \"{{ ('x' * 5000000) | sort | length }}\"}"
            )
        },
        "run",
        "w.workflow.yml:2",
    ),
    Bad(
        "round to -100,000,000 digits",
        {"a.agent.yml": agent(system="'{{ 5 | round(-100000000) }}'")},
        "test run",
        "a.agent.yml:2",
    ),
    Bad(
        "punycode of 2,000,000 characters",
        {
            "a.agent.yml": agent(
                system="\"{{ ('xn--' ~ 'a' * 2000000).encode().decode('idna') | length }}\""
            )
        },
        "test",
        "a.agent.yml:2",
    ),
    Bad(
        "an integer of four million bits from hex digits",
        {"a.agent.yml": agent(system="\"{{ (('f' * 1000000) | int(base=16)) // 7 }}\"")},
        "test",
        "a.agent.yml:2",
    ),
    #
    # -- round 2: values, schemas and patterns -------------------------------------------
    #
    Bad(
        "backtracking pattern and a 40-character --var",
        {
            "w.workflow.yml": workflow(
                "{name: f, type: formatter, template: '{{ v }}'}",
                'variables:\n  v: {type: string, pattern: "(a+)+$", default: aaa}\n',
            )
        },
        "run",
        "variable 'v'",
        args=("--var", "v=" + "a" * 40 + "!"),
    ),
    Bad(
        "variable schema maximum 1e999",
        {
            "w.workflow.yml": workflow(
                "{name: f, type: formatter, template: '{{ v }}'}",
                "variables:\n  v: {type: number, maximum: 1e999, default: 1}\n",
            )
        },
        "validate run",
        "w.workflow.yml:2",
    ),
    Bad(
        "variable schema pattern that is not a regex",
        {
            "w.workflow.yml": workflow(
                "{name: f, type: formatter, template: '{{ v }}'}",
                'variables:\n  v: {type: string, pattern: "[", default: x}\n',
            )
        },
        "validate run",
        "w.workflow.yml:2",
    ),
    Bad(
        "variable schema pattern with a lookahead (not RE2)",
        {"a.agent.yml": agent(extra="variables:\n  v: {type: string, pattern: '(?=x)x'}\n")},
        "validate test run",
        "a.agent.yml:8",
    ),
    Bad(
        "variable schema recursive $ref",
        {
            "w.workflow.yml": workflow(
                "{name: f, type: formatter, template: '{{ v }}'}",
                'variables:\n  v: {type: object, $ref: "#", default: {}}\n',
            )
        },
        "validate run",
        "w.workflow.yml:2",
    ),
    Bad(
        "variable schema $ref cycle through allOf",
        {
            "w.workflow.yml": workflow(
                "{name: f, type: formatter, template: '{{ v }}'}",
                "variables:\n  v:\n    $defs: {t: {allOf: [{$ref: '#/$defs/t'}]}}\n"
                "    properties: {q: {$ref: '#/$defs/t'}}\n",
            )
        },
        "validate run",
        "w.workflow.yml:3",
    ),
    Bad(
        "variable schema $ref to a URL (never fetched)",
        {
            "w.workflow.yml": workflow(
                "{name: f, type: formatter, template: '{{ v }}'}",
                "variables:\n  v: {$ref: 'http://127.0.0.1:9/s.json', default: 1}\n",
            )
        },
        "validate run",
        "w.workflow.yml:2",
    ),
    Bad(
        "mock rule with a backreference (not RE2)",
        {
            "config.yml": CONFIG + "  - name: m2\n    vendor: mock\n    rules:\n"
            "      - {match: '(a)\\1', output: x}\n",
            "a.agent.yml": agent(),
        },
        "validate test",
        "config.yml:13",
    ),
    Bad(
        "--var 1e999 for a number",
        {
            "w.workflow.yml": workflow(
                "{name: f, type: formatter, template: '{{ n }}'}",
                "variables:\n  n: {type: number, default: 1}\n",
            )
        },
        "run",
        "variable 'n'",
        args=("--var", "n=1e999"),
    ),
    Bad(
        "--var NaN for a list",
        {
            "w.workflow.yml": workflow(
                "{name: f, type: formatter, template: '{{ n }}'}",
                "variables:\n  n: {type: array, default: []}\n",
            )
        },
        "run",
        "variable 'n'",
        args=("--var", "n=[1, NaN]"),
    ),
    Bad(
        "--vars file with an infinite number",
        {
            "w.workflow.yml": workflow(
                "{name: f, type: formatter, template: '{{ n }}'}",
                "variables:\n  n: {type: object, default: {}}\n",
            ),
            "v.yml": "n:\n  a: 1.0e+999\n",
        },
        "run",
        "v.yml:2",
        args=("--vars", "v.yml"),
    ),
    Bad(
        "variable default .inf",
        {
            "w.workflow.yml": workflow(
                "{name: f, type: formatter, template: '{{ n }}'}",
                "variables:\n  n: {type: object, default: {a: .inf}}\n",
            )
        },
        "validate run",
        "w.workflow.yml:2",
    ),
    Bad(
        "cases input .nan",
        {
            "c.cases.yml": "prompt: p.prompt.yml\ncases:\n  - name: x\n    input: {word: .nan}\n",
            "p.prompt.yml": prompt(),
        },
        "validate cases",
        "c.cases.yml:4",
    ),
    Bad(
        "--var bytes that are not UTF-8 (a warning, the run goes on)",
        {
            "w.workflow.yml": workflow(
                "{name: f, type: formatter, template: '{{ n }}'}",
                "variables:\n  n: {type: string, default: x}\n",
            )
        },
        "run",
        "--var 'n': 2 invalid character(s)",
        code=0,
        args=("--var", "n=\udcff\udcfe"),  # what Python makes of argv bytes ff fe
    ),
    Bad(
        "--vars file with a lone surrogate (a warning, the run goes on)",
        {
            "w.workflow.yml": workflow(
                "{name: f, type: formatter, template: '{{ n }}'}",
                "variables:\n  n: {type: string, default: x}\n",
            ),
            "v.json": '{"n": "Sales rose \\ud800"}\n',
        },
        "run",
        "v.json:1: 1 invalid character(s)",
        code=0,
        args=("--vars", "v.json"),
    ),
    #
    # -- round 2: history, judge prompts and what validate lets through ------------------
    #
    Bad(
        "history url in the home folder",
        {
            "a.agent.yml": agent(),
            "config.yml": CONFIG + "history:\n  url: ~/.ssh/authorized_keys\n",
        },
        "validate test run",
        "config.yml:11",
    ),
    Bad(
        "history url leaves the project",
        {"a.agent.yml": agent(), "config.yml": CONFIG + "history:\n  url: ../h.db\n"},
        "validate test",
        "config.yml:11",
    ),
    Bad(
        "history url sqlite:// outside the project",
        {"a.agent.yml": agent(), "config.yml": CONFIG + "history:\n  url: sqlite:////tmp/h.db\n"},
        "validate test",
        "config.yml:11",
    ),
    Bad(
        "judge prompt without the answers (agent test)",
        {"a.agent.yml": agent(extra="    prompt: 'Same facts? Answer: A or B'\n")},
        "validate test",
        "a.agent.yml:7",
    ),
    Bad(
        "consistency_prompt without the answers (workflow)",
        {
            "w.workflow.yml": workflow(
                "{name: t, type: agent, agent_ref: a.agent.yml, prompt: hi, consistency_run: 2}",
                "consistency_prompt: 'Same facts? Answer: A or B'\n",
            ),
            "a.agent.yml": "model: agent_model\nsystem_instructions: hi\n",
        },
        "validate run",
        "w.workflow.yml:1",
    ),
    Bad(
        "consistency_prompt without the answers (task)",
        {
            "w.workflow.yml": workflow(
                "{name: t, type: agent, agent_ref: a.agent.yml, prompt: hi, consistency_run: 2,"
                " consistency_prompt: 'Only {{ submission_2 }}: A or B?'}"
            ),
            "a.agent.yml": "model: agent_model\nsystem_instructions: hi\n",
        },
        "validate run",
        "w.workflow.yml:2",
    ),
    Bad(
        "undefined variable in system_instructions",
        {"a.agent.yml": agent(system="'Answer for {{ compny }}.'")},
        "validate test run",
        "a.agent.yml:2",
    ),
    Bad(
        "context glob matching no file",
        {
            "a.agent.yml": agent(system="'{{ context.notes }}'")
            + "context:\n  - {name: notes, type: file, src: notes/*.md}\n"
        },
        "validate test run",
        "a.agent.yml:8",
    ),
    Bad(
        "formatter reads a task its loop does not have",
        {
            "w.workflow.yml": workflow(
                "{name: per_region, type: loop_sequential, values: [a, b], tasks: "
                "[{name: line, type: formatter, template: '{{ per_region.value }}'}]}\n"
                "  - {name: report, type: formatter, template: "
                "'{% for i in per_region %}{{ i.blurp }}{% endfor %}'}"
            )
        },
        "validate run",
        "w.workflow.yml:3",
    ),
    Bad(
        "task_ref into a loop's output",
        {
            "w.workflow.yml": workflow(
                "{name: per_region, type: loop_sequential, values: [a], tasks: "
                "[{name: line, type: formatter, template: x}]}",
            )
            + "tests:\n  - {type: consistency, n: 2, task_ref: per_region.line}\n"
        },
        "validate test",
        "w.workflow.yml:4",
    ),
    Bad(
        "header value with CR LF",
        {
            "a.agent.yml": agent(),
            "config.yml": CONFIG.replace(
                "    vendor: mock\n", '    vendor: mock\n    headers: {X-Trace: "a\\r\\nX: b"}\n', 1
            ),
        },
        "validate test run",
        "config.yml:4",
    ),
    Bad(
        "api_url not a URL",
        {
            "a.agent.yml": agent(),
            "config.yml": CONFIG + "  - {name: local, vendor: openai, model_ref: m, "
            "api_url: 'http://[::1'}\n",
        },
        "validate test run",
        "config.yml:10",
    ),
    #
]

REAL_PROCESS = [
    "n float 1.0e+9",
    "5,000 nested lists",
    "alias bomb in variables",
    "string times a billion (workflow)",
    "symlink loop",
    # round 2: SQL
    "3,000 nested parentheses in SQL",
    #
    # round 2: secrets
    "literal api_key on a line with a schema error",
    "api_url password with a raw slash",
    #
    # round 2: templates
    "ten billion loop iterations (formatter)",
    "a million characters a hundred thousand times",
    "150 nested if (system_instructions)",
    "a string of five million characters sorted",
    #
    # round 2: values
    "backtracking pattern and a 40-character --var",
    "variable schema recursive $ref",
    # round 2: history and validate
    "history url in the home folder",
    "formatter reads a task its loop does not have",
    "header value with CR LF",
    #
]


def _write(root: Path, entry: Bad) -> Path:
    """Write the entry's files (over the default config.yml); return the file to run on."""
    for name, content in {"config.yml": CONFIG, **entry.files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Symlink):
            path.symlink_to(content.target)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return Path(entry.target or next(n for n in entry.files if n != "config.yml"))


def _argv(command: str, target: Path, entry: Bad, fmt: str) -> list[str]:
    fmt_args = ["--format", fmt]
    if command == "cases":
        return ["cases", "run", str(target), *fmt_args]
    if command == "run":
        extra = ["--question", "hi"] if target.name.endswith(".agent.yml") else []
        return ["run", str(target), *extra, *entry.args, *fmt_args]
    if command == "test":
        return ["test", str(target), *entry.args, *fmt_args]
    return ["validate", str(target), *fmt_args]


def _params() -> list[object]:
    out = []
    for entry in CORPUS:
        marks = [pytest.mark.xfail(reason=entry.xfail, strict=True)] if entry.xfail else []
        for command in entry.commands.split():
            for fmt in ("pretty", "json"):
                out.append(
                    pytest.param(entry, command, fmt, id=f"{entry.id}-{command}-{fmt}", marks=marks)
                )
    return out


def _check(entry: Bad, fmt: str, code: int, stdout: str, stderr: str) -> None:
    shown = f"exit {code}\n--- stderr:\n{stderr[:3000]}\n--- stdout:\n{stdout[:3000]}"
    assert code == entry.code, shown
    assert entry.where in stderr, shown
    for text in (stdout, stderr):
        assert "Traceback" not in text, shown
        assert "internal error" not in text, shown
    if fmt == "json":
        document = json.loads(stdout)  # exactly one JSON document, nothing else
        assert isinstance(document, dict), shown


@functools.cache
def _command() -> object:
    return typer.main.get_command(app)


@pytest.mark.parametrize(("entry", "command", "fmt"), _params())
def test_bad_input(
    entry: Bad, command: str, fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = _write(tmp_path, entry)
    monkeypatch.chdir(tmp_path)
    if hasattr(typer.testing, "_get_command"):  # build the click command once, not 300 times
        monkeypatch.setattr(typer.testing, "_get_command", lambda _app: _command())
    monkeypatch.setenv("OXY_DB", str(tmp_path / ".oxy" / "history.db"))
    result = CliRunner().invoke(app, _argv(command, target, entry, fmt))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"uncaught {type(result.exception).__name__}: {result.exception}")
    _check(entry, fmt, result.exit_code, result.stdout, result.stderr)


def test_corpus_is_large_and_ids_unique() -> None:
    ids = [e.id for e in CORPUS]
    assert len(ids) == len(set(ids))
    assert len(CORPUS) >= 30
    assert set(REAL_PROCESS) <= set(ids)


def test_the_corpus_builders_are_valid_without_a_defect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each entry fails because of its one defect, not because the files around it are bad."""
    good = Bad(
        "good",
        {
            "a.agent.yml": agent(),
            "w.workflow.yml": workflow("{name: f, type: formatter, template: x}"),
            "p.prompt.yml": prompt(),
        },
        "",
        "",
    )
    _write(tmp_path, good)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    for argv in (
        ["validate", "."],
        ["test", "a.agent.yml"],
        ["run", "a.agent.yml", "--question", "hi"],
        ["run", "w.workflow.yml"],
    ):
        result = runner.invoke(app, argv)
        assert result.exit_code == 0, (argv, result.stderr)


@pytest.mark.parametrize("entry_id", REAL_PROCESS)
def test_bad_input_in_a_real_process(entry_id: str, tmp_path: Path) -> None:
    """The same as test_bad_input, through ``python -m oxyeval`` and its JSON wrapper."""
    entry = next(e for e in CORPUS if e.id == entry_id)
    target = _write(tmp_path, entry)
    command = entry.commands.split()[-1]
    proc = subprocess.run(
        [sys.executable, "-m", "oxyeval", *_argv(command, target, entry, "json")],
        cwd=tmp_path,
        env={**os.environ, "OXY_DB": str(tmp_path / ".oxy" / "history.db")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    _check(entry, "json", proc.returncode, proc.stdout, proc.stderr)
