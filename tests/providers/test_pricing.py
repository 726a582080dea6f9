"""Prices: config.yml's pricing: over the dated built-in table, and the cost on answers."""

from __future__ import annotations

import asyncio

import pytest

from oxyeval.errors import LoadError
from oxyeval.project.config import load_project
from oxyeval.providers import (
    BUILTIN_PRICES,
    PRICES_DATE,
    ChatMessage,
    Completion,
    ModelPool,
    ModelSpec,
    Price,
    cost_of,
    price_for,
)

from ..conftest import MakeProject

HI = [ChatMessage("user", "how are you today")]


def test_a_config_price_beats_the_built_in_one() -> None:
    assert price_for("gpt-4o-mini") == BUILTIN_PRICES["gpt-4o-mini"]
    mine = {"gpt-4o-mini": Price(1.0, 2.0)}
    assert price_for("gpt-4o-mini", mine) == Price(1.0, 2.0)
    # a dated id is the model it names; the config's price still wins over the table's
    assert price_for("gpt-4o-mini-2024-07-18", mine) == Price(1.0, 2.0)
    assert price_for("claude-sonnet-4-5-20250929") == BUILTIN_PRICES["claude-sonnet-4-5"]
    assert price_for("models/gemini-2.5-flash") == BUILTIN_PRICES["gemini-2.5-flash"]


def test_an_unknown_model_has_no_price_and_no_cost() -> None:
    assert price_for("my-local-llama") is None
    assert price_for("") is None
    assert cost_of(None, 10, 10) is None
    assert cost_of(Price(1.0, 2.0), None, 10) is None  # unknown tokens: unknown cost
    assert cost_of(Price(1.0, 2.0), 1_000_000, 500_000) == pytest.approx(2.0)
    assert cost_of(Price(0.0, 0.0), 10, 10) == 0.0  # a free model is 0, on purpose


def test_the_built_in_table_is_dated() -> None:
    import datetime

    assert datetime.date.fromisoformat(PRICES_DATE).year >= 2025
    assert all(p.input >= 0 and p.output >= 0 for p in BUILTIN_PRICES.values())


def _answer(spec: ModelSpec) -> Completion:
    async def go() -> Completion:
        async with ModelPool({spec.name: spec}) as pool:
            return await pool.get(spec.name).generate(HI)

    return asyncio.run(go())


def test_every_answer_carries_its_cost_or_none() -> None:
    script = {"outputs": ["fine thanks"]}
    priced = ModelSpec("m", "mock", model_ref="cheap", options=script, price=Price(2.0, 4.0))
    answer = _answer(priced)  # the mock counts words: 4 in, 2 out
    assert answer.cost == pytest.approx((4 * 2.0 + 2 * 4.0) / 1e6)
    unpriced = ModelSpec("m", "mock", model_ref="unheard-of", options=script)
    assert _answer(unpriced).cost is None
    built_in = ModelSpec("m", "mock", model_ref="gpt-4o-mini", options=script)
    assert _answer(built_in).cost == pytest.approx((4 * 0.15 + 2 * 0.60) / 1e6)


def test_config_pricing_reaches_the_project_and_its_models(make_project: MakeProject) -> None:
    root = make_project(
        "models:\n"
        "  - {name: a, vendor: mock, model_ref: gpt-4o-mini, outputs: [x]}\n"
        "  - {name: b, vendor: mock, model_ref: gpt-4o, outputs: [x]}\n"
        "  - {name: c, vendor: mock, outputs: [x]}\n"
        "pricing:\n"
        "  gpt-4o-mini: {input: 1, output: 2.5}\n"
        "  branch-model: {input: 0, output: 0}\n"
    )
    project = load_project(root)
    assert project.pricing == {"gpt-4o-mini": Price(1.0, 2.5), "branch-model": Price(0.0, 0.0)}
    assert project.models["a"].price == Price(1.0, 2.5)  # config beats the built-in
    assert project.models["b"].price == BUILTIN_PRICES["gpt-4o"]
    assert project.models["c"].price is None


@pytest.mark.parametrize(
    ("entry", "line", "words"),
    [
        ("  gpt-4o: {input: -1, output: 2}\n", 4, "at least 0"),
        ("  gpt-4o: {input: 1}\n", 4, "output"),
        ("  gpt-4o: {input: 1, output: cheap}\n", 4, "number"),
        ("  gpt-4o: {input: 1, output: 2, cached: 0.5}\n", 4, "cached"),
        ("  gpt-4o: 3\n", 4, "mapping"),
    ],
)
def test_bad_pricing_names_file_line_and_key(
    make_project: MakeProject, entry: str, line: int, words: str
) -> None:
    root = make_project("models:\n  - {name: m, vendor: mock, outputs: [x]}\npricing:\n" + entry)
    with pytest.raises(LoadError) as info:
        load_project(root)
    assert info.value.exit_code == 2
    (diagnostic,) = info.value.diagnostics
    assert diagnostic.line == line
    assert "pricing.gpt-4o" in str(info.value) and "config.yml" in str(info.value)
    assert words in f"{diagnostic.key} {diagnostic.message}"
