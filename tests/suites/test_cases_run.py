"""Test cases end to end: scoring, history, regressions, versions, interruption."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest

from oxyeval.errors import ConfigError
from oxyeval.store import open_store
from oxyeval.suites.cases.run import run_cases, run_cases_async

from ..conftest import MakeProject
from ..fakes import fake_openai_embeddings, fake_vector

CONFIG = """\
models:
  - name: m
    vendor: mock
    rules:
      - {match: "^OLD", output: "from the old template"}
      - {match: "explode", error: "backend down"}
      - {match: "love", output: "positive"}
      - {match: "hate", output: "Negative"}
      - {match: ".", output: "neutral"}
"""
PROMPT = """\
name: sentiment
model: m
template: "Feedback: {{ text }}"
similarity: lexical
cases:
  - {name: happy, input: {text: "I love it"}, expected_output: positive}
  - {name: sad, input: {text: "I hate it"}, expected_output: negative}
  - {name: meh, input: {text: "It is a thing"}, expected_output: negative}
"""


@pytest.fixture
def root(make_project: MakeProject) -> Path:
    return make_project(CONFIG, {"s.prompt.yml": PROMPT})


def by_name(run):
    return {r.name: r for r in run.results}


def test_scores_are_computed_and_stored(root: Path) -> None:
    run = run_cases([root / "s.prompt.yml"])
    r = by_name(run)
    assert r["happy"].passed and r["happy"].exact_match and r["happy"].score == 1.0
    assert r["sad"].passed and not r["sad"].exact_match  # "Negative" vs "negative": lexical 1.0
    assert r["sad"].similarity_method == "lexical"
    assert not r["meh"].passed and r["meh"].score is not None and r["meh"].score < 0.8
    assert r["meh"].length_diff == len("neutral") - len("negative")
    assert [o["op"] for o in r["meh"].output_diff] == ["delete", "insert"]
    assert run.db == root / ".oxy" / "oxyeval.db"
    with open_store(run.db) as store:
        case = store.cases.get("sentiment::meh")
        assert case.total_runs == 1 and case.pass_rate == 0.0 and case.last_passed is False
        (execution,) = store.executions.list("sentiment::meh", 10, 0)
        assert execution.actual_output == "neutral" and execution.prompt_version == 1
        assert execution.status == "failed" and execution.finish_reason == "stop"


def test_regressions_across_runs(root: Path) -> None:
    for _ in range(3):
        assert not any(r.is_regression for r in run_cases([root / "s.prompt.yml"]).results)
    config = (
        (root / "config.yml")
        .read_text()
        .replace('output: "positive"', 'output: "It is positive, clearly and without doubt."')
    )
    (root / "config.yml").write_text(config)
    happy = by_name(run_cases([root / "s.prompt.yml"]))["happy"]
    assert not happy.passed
    assert happy.regression_types == ["FAILED", "SCORE_DROP", "LENGTH_CHANGE"]
    assert happy.regression_type == "FAILED"
    with open_store(root / ".oxy" / "oxyeval.db") as store:
        stats = store.stats.case_stats("sentiment::happy")
        assert stats.total_runs == 4 and stats.pass_rate == 75.0
        assert stats.regressions[0].regression_type == "FAILED"


def test_prompt_edits_make_versions_and_old_versions_rerun(root: Path) -> None:
    assert run_cases([root / "s.prompt.yml"]).versions == {"sentiment": 1}
    (root / "s.prompt.yml").write_text(PROMPT.replace("Feedback: {{ text }}", "OLD? {{ text }}"))
    run = run_cases([root / "s.prompt.yml"])
    assert run.versions == {"sentiment": 2}
    assert by_name(run)["happy"].actual_output == "from the old template"
    (root / "s.prompt.yml").write_text(PROMPT)  # back to v1's content: no new version
    assert run_cases([root / "s.prompt.yml"]).versions == {"sentiment": 1}
    again = run_cases([root / "s.prompt.yml"], version=2, cases=["happy"])
    assert again.versions == {"sentiment": 2}
    assert [r.actual_output for r in again.results] == ["from the old template"]
    with pytest.raises(ConfigError, match="has no version 9; versions: 1, 2"):
        run_cases([root / "s.prompt.yml"], version=9)


def test_unknown_case_name_suggests(root: Path) -> None:
    with pytest.raises(
        ConfigError, match="no test case named 'hapy' in the given files; did you mean 'happy'"
    ):
        run_cases([root / "s.prompt.yml"], cases=["hapy"])


def test_provider_errors_are_stored_as_errors_not_failures(make_project: MakeProject) -> None:
    root = make_project(
        CONFIG,
        {"s.prompt.yml": PROMPT + "  - {name: boom, input: {text: explode}, expected_output: x}\n"},
    )
    run = run_cases([root / "s.prompt.yml"])
    boom = by_name(run)["boom"]
    assert boom.error is not None and "backend down" in boom.error
    with open_store(run.db) as store:
        assert store.cases.get("sentiment::boom").total_runs == 0  # not a failed case
        (stored,) = store.executions.list("sentiment::boom")
        assert stored.status == "error" and "backend down" in (stored.error or "")
        assert stored.actual_output is None and stored.id == boom.execution_id
        (last,) = store.runs.list(1)
        assert last.status == "failed" and last.errors == 1 and last.done == 4


def test_interrupted_batch_keeps_finished_executions(make_project: MakeProject) -> None:
    slow = CONFIG.replace("    rules:", "    latency_ms: 150\n    rules:")
    root = make_project(slow, {"s.prompt.yml": PROMPT})

    async def go() -> None:
        first_done = asyncio.Event()
        task = asyncio.ensure_future(
            run_cases_async(
                [root / "s.prompt.yml"], concurrency=1, on_result=lambda _r: first_done.set()
            )
        )
        await first_done.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    with open_store(root / ".oxy" / "oxyeval.db") as store:
        (run,) = store.runs.list(5)
        assert run.status == "interrupted"
        assert run.done == 1 and run.total == 3
        ran = [c for c in store.cases.list() if c.total_runs == 1]
        assert len(ran) == 1


def test_cases_created_through_the_api_run_too(root: Path) -> None:
    run_cases([root / "s.prompt.yml"])
    with open_store(root / ".oxy" / "oxyeval.db") as store:
        store.cases.create(
            "sentiment", "api case", {"text": "love"}, "positive", id="sentiment::api case"
        )
    assert "api case" not in by_name(run_cases([root / "s.prompt.yml"]))  # files: what they declare
    run = run_cases(project_dir=str(root))  # the whole project: API cases too
    assert by_name(run)["api case"].passed


def test_removed_yaml_cases_leave_the_suite_but_keep_history(root: Path) -> None:
    run_cases([root / "s.prompt.yml"])
    (root / "s.prompt.yml").write_text(
        PROMPT.replace(
            '  - {name: meh, input: {text: "It is a thing"}, expected_output: negative}\n', ""
        )
    )
    run = run_cases([root / "s.prompt.yml"])
    assert sorted(by_name(run)) == ["happy", "sad"]
    with open_store(run.db) as store:
        gone = store.cases.get("sentiment::meh", include_deleted=True)
        assert gone.deleted_at is not None and gone.total_runs == 1


def test_semantic_score_from_an_embeddings_server(make_project: MakeProject) -> None:
    with fake_openai_embeddings(dims=8) as server:
        config = (
            CONFIG
            + f"embeddings:\n  - {{name: emb, vendor: openai, model_ref: e-small, api_url: '{server.url}'}}\n"
        )
        root = make_project(
            config, {"s.prompt.yml": PROMPT.replace("similarity: lexical", "similarity: emb")}
        )
        run = run_cases([root / "s.prompt.yml"], cases=["meh"])
        bodies = [r.body for r in server.requests]
    (meh,) = run.results
    u, v = fake_vector("neutral", 8), fake_vector("negative", 8)
    cosine = sum(a * b for a, b in zip(u, v, strict=True)) / (math.hypot(*u) * math.hypot(*v))
    assert meh.semantic_score == pytest.approx(cosine)
    assert meh.similarity_method == "embedding:emb (e-small)"
    assert bodies and bodies[0]["model"] == "e-small"


def test_selection_by_full_id_dedupes_and_rejects_unknown(make_project: MakeProject) -> None:
    root = make_project(
        CONFIG,
        {
            "s.prompt.yml": PROMPT
            + '  - {name: "a::b", input: {text: love}, expected_output: positive}\n'
        },
    )
    run = run_cases([root / "s.prompt.yml"], cases=["happy", "sentiment::happy", "happy", "a::b"])
    assert sorted(r.name for r in run.results) == ["a::b", "happy"]
    with pytest.raises(ConfigError, match="no test case named 'typo::happy'"):
        run_cases([root / "s.prompt.yml"], cases=["typo::happy"])


def test_cases_of_a_deleted_cases_file_leave_the_suite(make_project: MakeProject) -> None:
    extra = "prompt: s.prompt.yml\ncases:\n  - {name: extra, input: {text: love}, expected_output: positive}\n"
    root = make_project(CONFIG, {"s.prompt.yml": PROMPT, "more.cases.yml": extra})
    assert "extra" in by_name(run_cases(project_dir=str(root)))
    only_more = run_cases([root / "more.cases.yml"])
    assert [r.name for r in only_more.results] == ["extra"]  # a file runs what it declares
    (root / "more.cases.yml").unlink()
    assert "extra" not in by_name(run_cases(project_dir=str(root)))


def test_new_baseline_and_new_similarity_start_a_fresh_history(root: Path) -> None:
    for _ in range(3):
        run_cases([root / "s.prompt.yml"], cases=["meh"])
    # Accept the current output: the next run is compared only with runs against "neutral".
    (root / "s.prompt.yml").write_text(
        PROMPT.replace("expected_output: negative}\n", "expected_output: neutral}\n", 1).replace(
            '{name: meh, input: {text: "It is a thing"}, expected_output: negative}',
            '{name: meh, input: {text: "It is a thing"}, expected_output: neutral}',
        )
    )
    (meh,) = run_cases([root / "s.prompt.yml"], cases=["meh"]).results
    assert meh.passed and not meh.is_regression


def test_missing_expected_output_is_pending_not_failed(make_project: MakeProject) -> None:
    root = make_project(CONFIG, {"s.prompt.yml": PROMPT + "  - {name: new, input: {text: love}}\n"})
    run = run_cases([root / "s.prompt.yml"], cases=["new"])
    (new,) = run.results
    assert new.pending and not run.failed and new.actual_output == "positive"
    with open_store(run.db) as store:
        case = store.cases.get("sentiment::new")
        assert case.total_runs == 0 and case.pass_rate is None  # not counted as a failure
        (pending,) = store.executions.list("sentiment::new", 1, 0)
        assert pending.actual_output == "positive" and pending.status == "pending"
        assert pending.error is None  # pending is a status, not an error message


def test_a_file_declaring_a_name_an_api_case_has_says_where(root: Path) -> None:
    """Names are unique per prompt in the store: a file that declares the name of a case
    made through the API (under another id) is told where, and which case has it."""
    run_cases([root / "s.prompt.yml"])
    db = root / ".oxy" / "oxyeval.db"
    with open_store(db) as store:
        store.cases.create("sentiment", "other", {"text": "x"}, id="sentiment::api")
    text = (root / "s.prompt.yml").read_text(encoding="utf-8")
    (root / "s.prompt.yml").write_text(text.replace("name: meh", "name: other"), "utf-8")
    with pytest.raises(ConfigError) as caught:
        run_cases([root / "s.prompt.yml"])
    message = str(caught.value)
    assert (
        "s.prompt.yml:" in message
        and "(case 'other')" in message
        and "id 'sentiment::api'" in message
    )
    with open_store(db) as store:
        assert [c.id for c in store.cases.list("sentiment") if c.name == "other"] == [
            "sentiment::api"
        ]


def test_each_case_is_reported_with_its_own_outcome_when_cases_finish_out_of_order(
    make_project: MakeProject,
) -> None:
    import io
    import json

    from oxyeval.report import case_run_json, write_json

    config = """\
models:
  - {name: slow, vendor: mock, latency_ms: 300, outputs: [wrong]}
  - {name: quick, vendor: mock, outputs: [right]}
"""
    first = "name: a\nmodel: slow\nsimilarity: lexical\ntemplate: '{{ q }}'\ncases:\n  - {name: x, input: {q: one}, expected_output: right}\n"
    second = "name: b\nmodel: quick\nsimilarity: lexical\ntemplate: '{{ q }}'\ncases:\n  - {name: y, input: {q: two}, expected_output: right}\n"
    root = make_project(config, {"a.prompt.yml": first, "b.prompt.yml": second})
    run = run_cases(project_dir=str(root))  # b::y passes at once, a::x fails later
    out = io.StringIO()
    write_json(case_run_json(run, run.decision), out)
    doc = json.loads(out.getvalue())
    assert [(r["subject"], r["outcome"]) for r in doc["results"]] == [
        ("a::x", "failed"),
        ("b::y", "passed"),
    ]
    assert [e["testCaseId"] for e in doc["executions"]] == ["a::x", "b::y"]
