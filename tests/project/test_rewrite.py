"""Writing an accepted baseline back never writes outside the project, and writers of one
file take turns.

The attacks: a project that ships the old fixed temporary name (``X.prompt.yml.oxy-tmp``)
as a link to a file of the user's, or whose prompt file becomes such a link between the
run and the accept. The victim's content and mode must be unchanged afterwards.
"""

from __future__ import annotations

import os
import stat
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from oxyeval.errors import ConfigError, LoadError
from oxyeval.project.config import load_project
from oxyeval.project.document import load_yaml
from oxyeval.project.prompts import load_prompts, rewrite_expected_output

from ..conftest import VICTIM_TEXT, MakeProject
from ..suites.test_cases_run import CONFIG, PROMPT


def _case(root: Path, name: str, file: str = "s.prompt.yml"):
    (prompt,) = load_prompts(load_project(root), [root / file])
    return next(c for c in prompt.cases if c.name == name)


def _expected(path: Path) -> dict[str, str]:
    return {c["name"]: c["expected_output"] for c in load_yaml(path).data["cases"]}


def _untouched(victim: Path) -> None:
    assert victim.read_text(encoding="utf-8") == VICTIM_TEXT
    assert stat.S_IMODE(victim.stat().st_mode) == 0o600


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".oxy-tmp"))


def test_a_planted_temporary_link_is_never_written_through(
    make_project: MakeProject, victim: Path
) -> None:
    root = make_project(CONFIG, {"s.prompt.yml": PROMPT})
    (root / "s.prompt.yml").chmod(0o644)
    planted = root / "s.prompt.yml.oxy-tmp"
    planted.symlink_to(victim)
    rewrite_expected_output(_case(root, "meh"), "echo owned >> ~/.bashrc")
    _untouched(victim)
    assert planted.is_symlink() and planted.resolve() == victim  # left as it was
    assert _expected(root / "s.prompt.yml")["meh"] == "echo owned >> ~/.bashrc"
    assert stat.S_IMODE((root / "s.prompt.yml").stat().st_mode) == 0o644
    assert not (root / "s.prompt.yml").is_symlink()
    assert _leftovers(root) == ["s.prompt.yml.oxy-tmp"]  # only the planted one


def test_a_file_that_became_a_link_out_is_refused(make_project: MakeProject, victim: Path) -> None:
    """Loaded while it was the project's own file, swapped for a link before the accept
    (a checkout of another branch, under a running server)."""
    root = make_project(CONFIG, {"s.prompt.yml": PROMPT})
    case = _case(root, "meh")
    (root / "s.prompt.yml").unlink()
    (root / "s.prompt.yml").symlink_to(victim)
    with pytest.raises(LoadError, match="is a link that leaves the project folder"):
        rewrite_expected_output(case, "anything")
    _untouched(victim)
    assert (root / "s.prompt.yml").is_symlink()


def test_a_link_inside_the_project_is_written_through(make_project: MakeProject) -> None:
    """The link's target is the project's file: it gets the value, and the link stays."""
    root = make_project(CONFIG, {"shared/s.prompt.yml": PROMPT})
    (root / "s.prompt.yml").symlink_to(Path("shared") / "s.prompt.yml")
    rewrite_expected_output(_case(root, "meh"), "neutral")
    assert (root / "s.prompt.yml").is_symlink()
    assert _expected(root / "shared" / "s.prompt.yml")["meh"] == "neutral"
    assert _leftovers(root) == _leftovers(root / "shared") == []


def test_a_lone_surrogate_is_a_clear_error_and_leaves_nothing(make_project: MakeProject) -> None:
    root = make_project(CONFIG, {"s.prompt.yml": PROMPT})
    with pytest.raises(ConfigError, match=r"lone UTF-16 surrogate.*the file is unchanged"):
        rewrite_expected_output(_case(root, "meh"), "bad \ud800 text")
    assert (root / "s.prompt.yml").read_text(encoding="utf-8") == PROMPT
    assert _leftovers(root) == []


def test_writers_of_one_file_take_turns(make_project: MakeProject) -> None:
    """Three threads, each setting another case of one file: none loses its change."""
    root = make_project(CONFIG, {"s.prompt.yml": PROMPT})
    cases = [_case(root, name) for name in ("happy", "sad", "meh")]
    start = threading.Barrier(len(cases))

    def accept(case) -> None:
        start.wait()
        for round in range(5):
            rewrite_expected_output(case, f"{case.name} {round}")

    with ThreadPoolExecutor(len(cases)) as pool:
        list(pool.map(accept, cases))
    assert _expected(root / "s.prompt.yml") == {"happy": "happy 4", "sad": "sad 4", "meh": "meh 4"}


@pytest.mark.skipif(not hasattr(os, "O_DIRECTORY"), reason="needs flock on a folder")
def test_a_writer_in_another_process_is_waited_for(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process's turn is the folder's flock (a descriptor of its own stands for
    that process here); with no time left to wait, the accept refuses and writes nothing."""
    import fcntl

    root = make_project(CONFIG, {"s.prompt.yml": PROMPT})
    case = _case(root, "meh")
    monkeypatch.setattr("oxyeval.project.rewrite.LOCK_WAIT_S", 0.0)
    other = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(other, fcntl.LOCK_EX)
        with pytest.raises(ConfigError, match="another oxyeval process has been writing"):
            rewrite_expected_output(case, "neutral")
        assert (root / "s.prompt.yml").read_text(encoding="utf-8") == PROMPT
    finally:
        os.close(other)
    rewrite_expected_output(case, "neutral")  # its turn came
    assert _expected(root / "s.prompt.yml")["meh"] == "neutral"
