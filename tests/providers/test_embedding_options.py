"""config.yml's embedding options (batch_size, dims, task_type): settable, checked by the
schema, and sent in each vendor's own wire format to the fake servers."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from oxyeval.errors import LoadError
from oxyeval.project import load_project
from oxyeval.providers import Embedder, EmbeddingPool, ModelSpec
from oxyeval.providers.google import GoogleEmbeddingAPI
from oxyeval.providers.openai import OpenAIEmbeddingAPI
from tests.conftest import MOCK_CONFIG, MakeProject
from tests.fakes import SleepRecorder, fake_gemini_embeddings, fake_openai_embeddings, fake_vector

TEXTS = ["alpha", "beta", "gamma", "delta", "epsilon"]


def _config(embeddings: str) -> str:
    return MOCK_CONFIG + "embeddings:\n" + embeddings


def _embed(root: Path, name: str, texts: list[str]) -> list[list[float]]:
    """Embed through the path a run takes: the project's specs, an EmbeddingPool."""
    project = load_project(root)

    async def go() -> list[list[float]]:
        async with EmbeddingPool(project.embeddings, environ={}, sleep=SleepRecorder()) as pool:
            return await pool.get(name).embed(texts)

    return asyncio.run(go())


def _load_errors(make_project: MakeProject, embeddings: str) -> str:
    with pytest.raises(LoadError) as info:
        load_project(make_project(_config(embeddings)))
    return str(info.value)


# ------------------------------------------------------------------------------ on the wire


def test_openai_dims_and_batch_size_are_sent_as_dimensions_and_texts_per_request(
    make_project: MakeProject,
) -> None:
    with fake_openai_embeddings() as server:
        root = make_project(
            _config(
                f"  - {{name: small, vendor: openai, api_url: '{server.url}', "
                "dims: 4, batch_size: 2}\n"
            )
        )
        vectors = _embed(root, "small", TEXTS)
        bodies = [r.body for r in server.requests]
    assert sorted(b["input"] for b in bodies) == [
        ["alpha", "beta"],
        ["epsilon"],
        ["gamma", "delta"],
    ]
    for body in bodies:
        assert body["dimensions"] == 4
        assert body["model"] == "text-embedding-3-small"  # the vendor's default model
    assert vectors == [fake_vector(t, 4) for t in TEXTS]  # the server honoured the size


def test_ollama_dims_go_out_in_the_openai_compatible_form(make_project: MakeProject) -> None:
    with fake_openai_embeddings() as server:
        root = make_project(
            _config(
                f"  - {{name: local, vendor: ollama, model_ref: nomic-embed-text, "
                f"api_url: '{server.url}', dims: 3}}\n"
            )
        )
        vectors = _embed(root, "local", ["one text"])
        (request,) = server.requests
    assert request.body == {"model": "nomic-embed-text", "input": ["one text"], "dimensions": 3}
    assert vectors == [fake_vector("one text", 3)]


def test_gemini_task_type_and_dims_are_sent_per_text_and_batches_follow_batch_size(
    make_project: MakeProject,
) -> None:
    with fake_gemini_embeddings() as server:
        root = make_project(
            _config(
                f"  - {{name: gem, vendor: gemini, api_url: '{server.url}', api_key: k, "
                "task_type: CLUSTERING, dims: 5, batch_size: 3}\n"
            )
        )
        vectors = _embed(root, "gem", TEXTS)
        requests = server.requests
    assert {r.route for r in requests} == {"/v1beta/models/gemini-embedding-001:batchEmbedContents"}
    batches = sorted(len(r.body["requests"]) for r in requests)
    assert batches == [2, 3]
    for request in requests:
        for item in request.body["requests"]:
            assert item["taskType"] == "CLUSTERING"
            assert item["outputDimensionality"] == 5
            assert item["model"] == "models/gemini-embedding-001"
    assert vectors == [fake_vector(t, 5) for t in TEXTS]


def test_without_options_the_requests_are_as_before(make_project: MakeProject) -> None:
    with fake_openai_embeddings() as openai, fake_gemini_embeddings() as gemini:
        root = make_project(
            _config(
                f"  - {{name: o, vendor: openai, model_ref: e, api_url: '{openai.url}'}}\n"
                f"  - {{name: g, vendor: google, api_url: '{gemini.url}', api_key: k}}\n"
            )
        )
        _embed(root, "o", ["x"])
        _embed(root, "g", ["x"])
        (o_request,), (g_request,) = openai.requests, gemini.requests
    assert o_request.body == {"model": "e", "input": ["x"]}
    assert g_request.body["requests"] == [
        {
            "model": "models/gemini-embedding-001",
            "taskType": "SEMANTIC_SIMILARITY",
            "content": {"parts": [{"text": "x"}]},
        }
    ]


def test_mock_dims_from_config_set_the_vector_size(make_project: MakeProject) -> None:
    root = make_project(_config("  - {name: offline, vendor: mock, dims: 12}\n"))
    (vector,) = _embed(root, "offline", ["a few words"])
    assert len(vector) == 12


def test_options_reach_the_spec(make_project: MakeProject) -> None:
    project = load_project(
        make_project(
            _config(
                "  - {name: g, vendor: gemini, batch_size: 50, dims: 768, task_type: CLUSTERING}\n"
            )
        )
    )
    spec = project.embeddings["g"]
    assert spec.vendor == "google"  # the alias, resolved by the providers' registry
    assert spec.options == {"batch_size": 50, "dims": 768, "task_type": "CLUSTERING"}


# ------------------------------------------------------------------------------ checks


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("{name: e, vendor: openai, task_type: CLUSTERING}", "task_type is a Gemini option"),
        ("{name: e, vendor: google, batch_size: 101}", "batch_size: must be at most 100, got 101"),
        ("{name: e, vendor: openai, batch_size: 5000}", "must be at most 2048, got 5000"),
        ("{name: e, vendor: openai, batch_size: 0}", "batch_size: must be at least 1, got 0"),
        ("{name: e, vendor: mock, dims: 0}", "dims: must be at least 1, got 0"),
        ("{name: e, vendor: mock, dims: 2.5}", "dims: expected an integer"),
        ("{name: e, vendor: google, task_type: SIMILARITY}", "is not one of: SEMANTIC_SIMILARITY"),
    ],
)
def test_bad_options_are_load_errors_at_their_line(
    make_project: MakeProject, entry: str, expected: str
) -> None:
    text = _load_errors(make_project, f"  - {entry}\n")
    assert expected in text
    assert "config.yml:" in text  # file and line, as every load error


def test_a_batch_size_above_the_api_limit_set_in_code_is_cut_to_it() -> None:
    def embedder(cls: Any, batch_size: int) -> Embedder:
        spec = ModelSpec("e", cls.vendor, "m", options={"batch_size": batch_size})
        return Embedder(cls(spec, None))

    assert embedder(GoogleEmbeddingAPI, 500).batch_size == 100
    assert embedder(OpenAIEmbeddingAPI, 500).batch_size == 500
    assert embedder(OpenAIEmbeddingAPI, 5000).batch_size == 2048


def test_a_bad_option_set_in_code_is_a_config_error_not_a_bad_request() -> None:
    from oxyeval.errors import ConfigError

    spec = ModelSpec("e", "openai", "m", api_url="http://127.0.0.1:9/v1", options={"dims": "8"})
    pool = EmbeddingPool({"e": spec}, environ={})
    with pytest.raises(ConfigError, match="option dims must be a positive integer, got '8'"):
        pool.get("e")
