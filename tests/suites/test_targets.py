"""Targets (agent, prompt version, workflow task) and the RunContext they share."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from oxyeval.errors import LoadError
from oxyeval.project.agents import load_agent
from oxyeval.project.config import load_project
from oxyeval.project.templates import TemplateRef
from oxyeval.providers._base import ChatMessage, GenerateParams
from oxyeval.suites.targets import AgentTarget, PromptTarget, WorkflowTarget
from oxyeval.workflow.compile import compile_workflow
from oxyeval.workflow.context import RunContext, RunContexts
from oxyeval.workflow.spec import load_workflow

from ..conftest import MakeProject
from ..fakes import fake_openai, fake_openai_embeddings

CONFIG = """\
models:
  - name: gpt
    vendor: openai
    model_ref: gpt-test
    api_url: {url}
    key_var: TEST_KEY
embeddings:
  - name: emb
    vendor: openai
    model_ref: emb-test
    api_url: {emb_url}
    key_var: TEST_KEY
databases:
  - {{name: shop, type: duckdb, dataset: data}}
"""

ENV = {"TEST_KEY": "sk-test-targets-123456"}


@pytest.fixture(autouse=True)
def _dataset_folder(tmp_path: Path) -> None:
    """config.yml's database names a dataset folder, which must exist to load."""
    (tmp_path / "data").mkdir(exist_ok=True)


def test_prompt_target_renders_inputs_and_sends_its_params(make_project: MakeProject) -> None:
    with fake_openai("the answer") as server:
        root = make_project(CONFIG.format(url=server.url, emb_url=server.url))
        project = load_project(root)

        async def go() -> str:
            async with RunContext(project, environ=ENV) as context:
                target = PromptTarget(
                    context,
                    "gpt",
                    TemplateRef("Classify: {{ text }}"),
                    TemplateRef("You label {{ kind }}."),
                    GenerateParams(temperature=0.25, max_tokens=33),
                )
                assert target.max_tokens == 33 and target.model == "gpt"
                completion = await target.complete({"text": "great film", "kind": "reviews"})
                with pytest.raises(LoadError, match="'kind' is undefined"):
                    await target.complete({"text": "no kind given"})
                return completion.text

        assert asyncio.run(go()) == "the answer"
        (request,) = server.requests  # the call that did not fit its template was never sent
    body = request.body
    assert body["messages"] == [
        {"role": "system", "content": "You label reviews."},
        {"role": "user", "content": "Classify: great film"},
    ]
    assert body["temperature"] == 0.25 and body["max_tokens"] == 33


def test_agent_target_asks_the_question_its_template_makes(make_project: MakeProject) -> None:
    with fake_openai() as server:  # echoes the last user message
        root = make_project(
            CONFIG.format(url=server.url, emb_url=server.url),
            {"a.agent.yml": "model: gpt\nsystem_instructions: Be brief.\n"},
        )
        project = load_project(root)
        agent = load_agent(project, root / "a.agent.yml")

        async def go() -> tuple[str, str]:
            async with RunContext(project, environ=ENV) as context:
                plain = await AgentTarget(context, agent).complete({"question": "How many?"})
                framed = AgentTarget(context, agent, TemplateRef("Q: {{ q }}?"))
                assert framed.runner is context.agent(agent)  # one runner per agent file
                return plain.text, (await framed.complete({"q": "Which"})).text

        assert asyncio.run(go()) == ("How many?", "Q: Which?")
    systems = [r.body["messages"][0] for r in server.requests]
    assert systems == [{"role": "system", "content": "Be brief."}] * 2


def test_workflow_target_returns_the_task_output_for_its_inputs(make_project: MakeProject) -> None:
    root = make_project(
        CONFIG.format(url="http://127.0.0.1:9/v1", emb_url="http://127.0.0.1:9/v1"),
        {
            "w.workflow.yml": """\
            variables:
              who: {type: string, default: world}
            tasks:
              - {name: hello, type: formatter, template: "hello {{ who }}"}
              - {name: shout, type: formatter, template: "{{ hello | upper }}"}
            """,
        },
    )
    project = load_project(root)
    plan = compile_workflow(load_workflow(project, root / "w.workflow.yml"))

    async def go() -> list[str]:
        async with RunContext(project, environ=ENV) as context:
            last = WorkflowTarget(context, plan)
            first = WorkflowTarget(context, plan, "hello")
            assert last.model == "workflow" and last.models == ()
            return [
                (await last.complete()).text,
                (await last.complete({"who": "oxy"})).text,
                (await first.complete({"who": "oxy"})).text,
            ]

    assert asyncio.run(go()) == ["HELLO WORLD", "HELLO OXY", "hello oxy"]


def test_a_context_shares_one_client_and_closes_everything(make_project: MakeProject) -> None:
    with fake_openai("x") as chat, fake_openai_embeddings() as emb:
        root = make_project(CONFIG.format(url=chat.url, emb_url=emb.url))
        (Path(root) / "data").mkdir(exist_ok=True)
        (Path(root) / "data" / "t.csv").write_text("a\n1\n", encoding="utf-8")
        project = load_project(root)

        async def go() -> None:
            context = RunContext(project, environ=ENV)
            await context.models.get("gpt").generate([ChatMessage("user", "hi")], GenerateParams())
            embedder = context.embeddings.get("emb")
            assert await embedder.similarity("a b", "a b") == pytest.approx(1.0)
            # Chat and embedding calls go over one HTTP client, under one limit per endpoint.
            client = context.models.client
            assert context.embeddings._client is client
            assert context.databases is context.engine.sql  # one set of DuckDB connections
            rows = await context.databases.query("shop", "SELECT a FROM 't.csv'")
            assert rows.column("a") == [1]
            worker = context.databases._workers["shop"]._proc  # the database's worker process
            assert worker is not None and worker.poll() is None
            await context.aclose()
            assert client.is_closed
            assert context.databases._workers == {} and worker.poll() is not None

        asyncio.run(go())


def test_run_contexts_give_one_context_per_project(make_project: MakeProject) -> None:
    root = make_project(CONFIG.format(url="http://127.0.0.1:9/v1", emb_url="http://127.0.0.1:9/v1"))
    project = load_project(root)
    again = load_project(root)

    async def go() -> None:
        async with RunContexts(environ=ENV) as contexts:
            assert contexts.get(project) is contexts.get(again)

    asyncio.run(go())


def test_specs_can_be_built_in_code_without_files(make_project: MakeProject) -> None:
    """The SDK builds agents and tests in Python: no YAML file, no positions."""
    from oxyeval.project.agents import Agent
    from oxyeval.project.tests import JudgeSpec, TestSpec

    root = make_project(
        "models:\n  - {name: m, vendor: mock, rules: [{match: 'capital', output: Paris}]}\n"
    )
    project = load_project(root)
    agent = Agent("geo", "m", "You know {{ topic }}.", variables={"topic": "geography"})
    spec = TestSpec(name="capital", task_description="The capital?", judges=[JudgeSpec(None, "m")])
    assert spec.file is None and spec.n == 10 and spec.judges[0].scores == {"A": 1.0, "B": 0.0}

    async def go() -> str:
        async with RunContext(project) as context:
            target = AgentTarget(context, agent)
            target.check()
            assert target.runner.system_prompt() == "You know geography."
            return (await target.complete({"question": "What is the capital?"})).text

    assert asyncio.run(go()) == "Paris"
    assert agent.display == "agent 'geo'"
