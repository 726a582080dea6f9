"""What a model endpoint sends never drives the terminal: an error body carrying escape
sequences (clear the screen, a hyperlink, a cursor move) reaches stderr's closing
``error:`` lines written out, never as the bytes a terminal would act on."""

from __future__ import annotations

from typer.testing import CliRunner

from oxyeval.cli._app import app

from ..conftest import MakeProject
from ..fakes import FakeResponse, FakeServer, openai_error

HOSTILE = "bad \x1b[2J\x1b]8;;http://evil.example\x07click\x1b]8;;\x07\x1b[10A moved"
PROMPT = """\
name: p
model: m
template: "{{ text }}"
similarity: lexical
cases:
  - {name: one, input: {text: hi}, expected_output: hello}
"""


def test_a_servers_escape_sequences_are_written_out_in_the_closing_lines(
    make_project: MakeProject,
) -> None:
    with FakeServer(lambda _request: FakeResponse(400, openai_error(HOSTILE))).start() as server:
        config = (
            "models:\n"
            f"  - {{name: m, vendor: openai, model_ref: gpt-test, api_url: '{server.url}',"
            " key_var: ESC_TEST_KEY, max_retries: 0}\n"
        )
        root = make_project(config, {"p.prompt.yml": PROMPT})
        result = CliRunner().invoke(
            app,
            ["cases", "run", str(root / "p.prompt.yml"), "--format", "json"],
            env={"ESC_TEST_KEY": "k" * 24},
        )
    assert result.exit_code == 3, result.stderr
    closing = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert closing, result.stderr
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr
    assert "\\x1b[2J" in result.stderr and "\\x1b]8;;http://evil.example\\x07" in result.stderr
