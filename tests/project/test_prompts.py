"""Prompt and cases files, versions, and accepting a baseline in place."""

from __future__ import annotations

from pathlib import Path

import pytest

from oxyeval.errors import LoadError
from oxyeval.project.config import load_project
from oxyeval.project.document import load_yaml
from oxyeval.project.prompts import collect_case_files, load_prompts, rewrite_expected_output

from ..conftest import MakeProject

CONFIG = """\
models:
  - name: m
    vendor: mock
    outputs: ["positive"]
  - name: other
    vendor: mock
    outputs: ["x"]
embeddings:
  - {name: small, vendor: mock}
"""
PROMPT = """\
name: sentiment
model: m
system: Label sentiment.
template: "Feedback: {{ text }}"
similarity: lexical
cases:
  - name: happy
    input: {text: "love it"}
    expected_output: positive
"""


def prompts(root: Path, *paths: str):
    project = load_project(root)
    return project, load_prompts(project, collect_case_files(project, list(paths)))


def test_prompt_and_cases_files_merge(make_project: MakeProject) -> None:
    root = make_project(
        CONFIG,
        {
            "p/sentiment.prompt.yml": PROMPT,
            "p/more.cases.yml": "prompt: p/sentiment.prompt.yml\ncases:\n  - {name: sad, input: {text: meh}, expected_output: negative}\n",
        },
    )
    _project, (prompt,) = prompts(root)
    assert prompt.id == "sentiment"
    assert [c.name for c in prompt.cases] == ["happy", "sad"]
    assert prompt.similarity == "lexical" and prompt.threshold == 0.8 and prompt.recent == 10


def test_version_content_changes_with_template_model_and_params(make_project: MakeProject) -> None:
    root = make_project(CONFIG, {"s.prompt.yml": PROMPT})
    project, (p1,) = prompts(root)
    base = p1.content(project)
    assert (
        base["template"] == "Feedback: {{ text }}" and base["model"] == "m" and base["params"] == {}
    )
    for change in ('template: "Text: {{ text }}"', "model: other", "temperature: 0.5"):
        key = change.split(":")[0]
        text = (
            "\n".join(line for line in PROMPT.splitlines() if not line.startswith(f"{key}:"))
            + f"\n{change}\n"
        )
        (root / "s.prompt.yml").write_text(text)
        _, (p2,) = prompts(root)
        assert p2.content(project) != base, change


def test_default_similarity_is_first_embedding_model(make_project: MakeProject) -> None:
    root = make_project(CONFIG, {"s.prompt.yml": PROMPT.replace("similarity: lexical\n", "")})
    _, (prompt,) = prompts(root)
    assert prompt.similarity == "small"


def test_no_embedding_model_and_no_lexical_is_an_error(make_project: MakeProject) -> None:
    root = make_project(
        CONFIG.split("embeddings:")[0],
        {"s.prompt.yml": PROMPT.replace("similarity: lexical\n", "")},
    )
    with pytest.raises(LoadError, match="set similarity: lexical"):
        prompts(root)


def test_load_errors_name_file_line_and_case(make_project: MakeProject) -> None:
    bad = PROMPT.replace("model: m", "model: mm").replace(
        "similarity: lexical", "similarity: smal"
    ) + ("  - name: happy\n    input: {txt: oops}\n")
    root = make_project(CONFIG, {"s.prompt.yml": bad})
    with pytest.raises(LoadError) as info:
        prompts(root)
    text = str(info.value)
    assert "s.prompt.yml:2:8: model: unknown model 'mm'; did you mean 'm'?" in text
    assert "unknown similarity 'smal'; did you mean 'small'?" in text
    assert "case name 'happy' is used twice" in text
    assert "case 'happy': template error: 'text' is undefined" in text


def test_cases_file_for_an_agent(make_project: MakeProject) -> None:
    root = make_project(
        CONFIG,
        {
            "a.agent.yml": "model: m\nsystem_instructions: Be brief.\n",
            "a.cases.yml": "agent: a.agent.yml\nsimilarity: lexical\ncases:\n  - {name: q1, input: {question: hi}, expected_output: positive}\n",
        },
    )
    project, (prompt,) = prompts(root)
    assert prompt.id == "agent:a.agent.yml" and prompt.kind == "agent"
    content = prompt.content(project)
    assert content["system"] == "Be brief." and content["template"] == "{{ question }}"


@pytest.mark.parametrize("key", ["agent", "prompt"])
def test_cases_file_cannot_load_a_file_outside_the_project(
    make_project: MakeProject, key: str
) -> None:
    root = make_project(CONFIG, {"p/x.cases.yml": ""})
    # A real agent/prompt file one folder above the project: loadable, but not ours.
    outside = root.parent / f"outside.{key}.yml"
    outside.write_text("model: m\nsystem_instructions: hi\n", encoding="utf-8")
    (root / "p/x.cases.yml").write_text(
        f"{key}: ../{outside.name}\nsimilarity: lexical\ncases:\n  - {{name: q, input: {{}}}}\n",
        encoding="utf-8",
    )
    with pytest.raises(LoadError) as info:
        prompts(root)
    assert (
        f"x.cases.yml:1:{len(key) + 3}: {key}: {key} path '../{outside.name}' leaves the project"
        in str(info.value)
    )


def test_cases_file_needs_exactly_one_target(make_project: MakeProject) -> None:
    root = make_project(CONFIG, {"x.cases.yml": "cases: []\n"})
    with pytest.raises(LoadError, match="give exactly one of prompt"):
        prompts(root)


REWRITE = """\
# Sentiment cases: comments must survive
name: sentiment
template: "Feedback: {{ text }}"
similarity: lexical
cases:
  # first case
  - name: plain
    input: {text: "love it"}
    expected_output: positive   # trailing comment

  - name: block
    input:
      text: x
    expected_output: |
      line one
      line two

  - name: missing
    description: no baseline yet
    input: {text: meh}
  - {name: flow, input: {text: y}, expected_output: old}
# end
"""


@pytest.mark.parametrize(
    ("name", "output"),
    [
        ("plain", "negative"),
        ("plain", "two\nlines"),
        ("block", "new one\nnew two\nnew three\n"),
        ("block", "single"),
        ("missing", "neutral"),
        ("missing", "a: tricky # value"),
        ("flow", "new"),
        ("plain", "yes"),
    ],
)
def test_accept_rewrites_one_value_and_keeps_comments(
    tmp_path: Path, name: str, output: str
) -> None:
    (tmp_path / "config.yml").write_text(CONFIG)
    path = tmp_path / "s.prompt.yml"
    path.write_text(REWRITE)
    project = load_project(tmp_path)
    (prompt,) = load_prompts(project, [path])
    case = next(c for c in prompt.cases if c.name == name)
    rewrite_expected_output(case, output)
    text = path.read_text()
    for comment in (
        "# Sentiment cases: comments must survive",
        "# first case",
        "# trailing comment",
        "# end",
    ):
        assert comment in text
    data = load_yaml(path).data
    by_name = {c["name"]: c for c in data["cases"]}
    assert by_name[name]["expected_output"] == output
    originals = {"plain": "positive", "block": "line one\nline two\n", "flow": "old"}
    for other, value in originals.items():
        if other != name:
            assert by_name[other]["expected_output"] == value
    # Nothing else moved: the lines outside the edited case are unchanged.
    before, after = REWRITE.splitlines(), text.splitlines()
    assert before[:5] == after[:5] and before[-1] == after[-1]


@pytest.mark.parametrize("output", ["new one\nnew two\n", "new one\nnew two", "single"])
def test_accept_keeps_a_block_header_s_comment(tmp_path: Path, output: str) -> None:
    """``expected_output: |   # keep me`` keeps its comment, and its
    block style whenever the new value can be one."""
    (tmp_path / "config.yml").write_text(CONFIG)
    path = tmp_path / "s.prompt.yml"
    path.write_text(REWRITE.replace("expected_output: |\n", "expected_output: |   # keep me\n"))
    (prompt,) = load_prompts(load_project(tmp_path), [path])
    rewrite_expected_output(next(c for c in prompt.cases if c.name == "block"), output)
    text = path.read_text()
    assert "# keep me" in text
    if "\n" in output.rstrip("\n"):
        assert "expected_output: |" in text and "   # keep me" in text
    by_name = {c["name"]: c for c in load_yaml(path).data["cases"]}
    assert by_name["block"]["expected_output"] == output
