"""`--case NAME` with files given, for a case that exists but is not in those files: the
error says where the case is, never "did you mean" the very name it rejected."""

from __future__ import annotations

from pathlib import Path

import pytest

from oxyeval.errors import ConfigError
from oxyeval.store import open_store
from oxyeval.suites.cases.run import run_cases

from ..conftest import MakeProject
from .test_cases_run import CONFIG, PROMPT

MORE = """\
prompt: s.prompt.yml
cases:
  - {name: other, input: {text: "I love that"}, expected_output: positive}
"""


@pytest.fixture
def root(make_project: MakeProject) -> Path:
    project = make_project(CONFIG, {"s.prompt.yml": PROMPT, "more.cases.yml": MORE})
    run_cases(project_dir=str(project))  # the history, with every file's cases
    with open_store(project / ".oxy" / "oxyeval.db") as store:
        store.cases.create(
            "sentiment", "api case", {"text": "love"}, "positive", id="sentiment::api case"
        )
    return project


def test_an_api_case_is_said_to_need_a_whole_project_run(root: Path) -> None:
    for name in ("api case", "sentiment::api case"):  # by name or by full id
        with pytest.raises(ConfigError) as caught:
            run_cases([root / "s.prompt.yml"], cases=[name])
        message = str(caught.value)
        assert "did you mean" not in message
        assert message.startswith("test case 'sentiment::api case' is not in the given files")
        assert "created through the API" in message and "no file arguments" in message
    # As the message says: the whole project selects it.
    (result,) = run_cases(project_dir=str(root), cases=["api case"]).results
    assert result.name == "api case" and result.passed


def test_a_case_of_another_file_names_that_file(root: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        run_cases([root / "s.prompt.yml"], cases=["other"])
    assert str(caught.value) == (
        "test case 'sentiment::other' is not in the given files: it is declared in "
        "more.cases.yml; add that file to the arguments"
    )


def test_an_unknown_name_still_gets_a_suggestion_alongside(root: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        run_cases([root / "s.prompt.yml"], cases=["hapy", "api case"])
    first, second = str(caught.value).split("; test case ")
    assert first == "no test case named 'hapy' in the given files; did you mean 'happy'?"
    assert second.startswith("'sentiment::api case' is not in the given files")
