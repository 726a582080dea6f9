"""A key that comes back in a model's answer never leaves the process.

The model here is a real OpenAI-compatible server on 127.0.0.1 whose answers echo the
Bearer token it received: the key is read from the environment variable config.yml
names (so it is registered as a real run registers it) and comes back in every answer.
Each sink is then read back raw: stdout and stderr of the real ``oxy`` process (pretty
and JSON, with --debug), export and cache files, the SQLite history file and its WAL,
and the YAML ``oxy cases accept`` rewrites.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import re
import sqlite3
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from oxyeval.providers import ChatMessage, ModelSpec
from oxyeval.redact import RedactingPieces, RedactingStream, redact, redact_data, register_secret

from .conftest import MakeProject
from .fakes import (
    FakeServer,
    RecordedRequest,
    fake_openai,
    last_user_text,
    openai_chat_response,
    openai_error,
    openai_tool_call_response,
    run_model,
)

KEY = "sk-oxy-secret-7f3a9c2e1b5d"
KEY_VAR = "OXY_SECRETS_TEST_KEY"

CONFIG = """\
models:
  - name: hosted
    vendor: openai
    model_ref: gpt-x
    api_url: {url}
    key_var: OXY_SECRETS_TEST_KEY
"""

AGENT = """\
model: hosted
system_instructions: Answer briefly.
tests:
  - type: consistency
    n: 2
    task_description: What is the total?
"""

WORKFLOW = """\
tasks:
  - name: ask
    type: agent
    agent_ref: agents/echo.agent.yml
    prompt: What is the total?
    cache: {enabled: true, path: cache/ask.txt}
    export: {format: txt, path: out/ask.txt}
  - name: followup
    type: agent
    agent_ref: agents/echo.agent.yml
    prompt: "Check this answer: {{ ask }}"
    consistency_run: 2
    export: {format: json, path: out/followup.json}
  - name: report
    type: formatter
    template: "{{ ask }} / {{ followup }}"
    export: {format: sql, path: out/report.sql}
"""

PROMPT = """\
name: echo
model: hosted
template: "Say {{ x }}"
similarity: lexical
cases:
  - name: known
    input: {x: hi}
    expected_output: The total is 42.
  - name: fresh
    input: {x: there}
"""


class EchoKey:
    """Answers with the key it was sent (distinct answers, so the judge is called too);
    the judge prompt gets a verdict."""

    def __init__(self) -> None:
        self._count = itertools.count(1)
        self._lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> str:
        key = request.headers["authorization"].removeprefix("Bearer ")
        if "[Submission 1]" in last_user_text(request.body):
            return "Both give the same total.\nAnswer: A"
        with self._lock:
            n = next(self._count)
        return f'The total is 42 (answer {n}). Your key is {key}, quoted: "{key}".'


def _oxy(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oxyeval", *args],
        cwd=cwd,
        env={**os.environ, KEY_VAR: KEY, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=60,
    )


def _assert_clean(proc: subprocess.CompletedProcess[str], what: str) -> None:
    if "--debug" not in proc.args:  # --debug prints the traceback on purpose
        assert "Traceback" not in proc.stderr, f"{what}: {proc.stderr}"
    assert KEY not in proc.stdout, f"{what}: key on stdout:\n{proc.stdout}"
    assert KEY not in proc.stderr, f"{what}: key on stderr:\n{proc.stderr}"


def _bodies(requests: list[RecordedRequest]) -> bytes:
    return b"\n".join(r.raw for r in requests)


@pytest.fixture
def project(make_project: MakeProject):
    """A project on a key-echoing server: yields (root, server)."""
    with fake_openai(EchoKey(), api_key=KEY) as server:
        root = make_project(
            CONFIG.format(url=server.url),
            {
                "agents/echo.agent.yml": AGENT,
                "w.workflow.yml": WORKFLOW,
                "prompts/echo.prompt.yml": PROMPT,
            },
        )
        yield root, server


def test_the_server_really_echoes_the_key(project: tuple[Path, Any]) -> None:
    """Guards the other tests: without redaction the key would be in every answer."""
    import httpx

    _root, server = project
    response = httpx.post(
        f"{server.url}/chat/completions",
        headers={"Authorization": f"Bearer {KEY}"},
        json={"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}]},
    )
    assert KEY in response.text


def test_oxy_run_prints_and_writes_no_key(project: tuple[Path, Any]) -> None:
    root, server = project
    pretty = _oxy("run", "w.workflow.yml", "--debug", cwd=root)
    assert pretty.returncode == 0, pretty.stderr
    assert "The total is 42" in pretty.stdout and "***" in pretty.stdout
    _assert_clean(pretty, "oxy run (pretty, --debug)")

    as_json = _oxy("run", "w.workflow.yml", "--format", "json", cwd=root)
    assert as_json.returncode == 0, as_json.stderr
    doc = json.loads(as_json.stdout)
    assert "***" in doc["output"]
    _assert_clean(as_json, "oxy run --format json")

    written = {p: p.read_bytes() for p in [*root.glob("out/*"), *root.glob("cache/*")]}
    assert {p.name for p in written} == {"ask.txt", "followup.json", "report.sql"}
    for path, data in written.items():
        assert b"***" in data, path
        assert KEY.encode() not in data, f"key in {path}"

    agent = _oxy(
        "run", "agents/echo.agent.yml", "--question", "total?", "--format", "json", cwd=root
    )
    assert agent.returncode == 0, agent.stderr
    assert "***" in json.loads(agent.stdout)["output"]
    _assert_clean(agent, "oxy run agent --format json")
    agent_pretty = _oxy("run", "agents/echo.agent.yml", "--question", "total?", cwd=root)
    assert agent_pretty.returncode == 0 and "***" in agent_pretty.stdout
    _assert_clean(agent_pretty, "oxy run agent (pretty)")

    # The key stops where the answer enters: no later prompt (the follow-up task built
    # from the first answer, the judge comparing answers) ever carries it to a server.
    judged = [r for r in server.requests if "[Submission 1]" in last_user_text(r.body)]
    followups = [r for r in server.requests if "Check this answer" in last_user_text(r.body)]
    assert judged and followups
    assert "***" in last_user_text(followups[0].body)
    assert KEY.encode() not in _bodies(server.requests)


def test_a_key_in_an_old_cache_file_goes_no_further(project: tuple[Path, Any]) -> None:
    """A cache written before keys were scrubbed is scrubbed as it is read."""
    root, server = project
    (root / "cache").mkdir()
    (root / "cache/ask.txt").write_text(f"Cached answer with {KEY} inside.", "utf-8")
    proc = _oxy("run", "w.workflow.yml", "--format", "json", cwd=root)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["tasks"][0]["status"] == "cached"
    assert "Cached answer with *** inside." in doc["output"]
    _assert_clean(proc, "oxy run from a cache holding a key")
    assert KEY.encode() not in (root / "out/ask.txt").read_bytes()
    assert KEY.encode() not in _bodies(server.requests)  # nor into the follow-up prompt


def test_a_failed_call_echoing_the_key_prints_no_key(make_project: MakeProject) -> None:
    def refuse(request: RecordedRequest) -> Any:
        key = request.headers["authorization"].removeprefix("Bearer ")
        return (400, openai_error(f"model gpt-x is not available for key {key}"))

    with FakeServer(refuse, prefix="/v1") as server:
        root = make_project(CONFIG.format(url=server.url), {"agents/echo.agent.yml": AGENT})
        pretty = _oxy("run", "agents/echo.agent.yml", "--question", "q", "--debug", cwd=root)
        as_json = _oxy(
            "run", "agents/echo.agent.yml", "--question", "q", "--format", "json", cwd=root
        )
    assert pretty.returncode == as_json.returncode == 3
    assert "not available for key ***" in pretty.stderr
    assert "not available for key ***" in json.loads(as_json.stdout)["error"]
    _assert_clean(pretty, "failed call, pretty")
    _assert_clean(as_json, "failed call, JSON")


def test_oxy_test_still_redacts(project: tuple[Path, Any]) -> None:
    root, server = project
    for args in (("--format", "json"), ("--debug",)):
        proc = _oxy("test", "agents/echo.agent.yml", *args, cwd=root)
        assert proc.returncode == 0, proc.stderr
        _assert_clean(proc, f"oxy test {' '.join(args)}")
        if "json" in args:
            outputs = json.loads(proc.stdout)["tests"][0]["outputs"]
            assert len(outputs) == 2 and all("***" in o["text"] for o in outputs)
    assert KEY.encode() not in _bodies(server.requests)  # the judge never saw it either


def test_oxy_cases_history_and_accept_hold_no_key(project: tuple[Path, Any]) -> None:
    root, _server = project
    ran = _oxy("cases", "run", "--format", "json", cwd=root)
    assert ran.returncode == 1, ran.stderr  # "known" fails, "fresh" is pending
    executions = {e["name"]: e for e in json.loads(ran.stdout)["executions"]}
    assert "***" in executions["known"]["actualOutput"]
    assert "***" in executions["fresh"]["actualOutput"]
    _assert_clean(ran, "oxy cases run --format json")

    pretty = _oxy("cases", "run", cwd=root)
    assert "actual:" in pretty.stdout and "***" in pretty.stdout  # the failed case's output
    _assert_clean(pretty, "oxy cases run")

    reads = [
        ("cases", "list"),
        ("cases", "list", "--format", "json"),
        ("cases", "show", "known"),
        ("cases", "show", "known", "--format", "json"),
        ("history",),
        ("history", "--format", "json"),
    ]
    # At once, as CI jobs sharing a history file would: the store queues them.
    with ThreadPoolExecutor(len(reads)) as pool:
        procs = list(pool.map(lambda args: _oxy(*args, cwd=root), reads))
    for args, proc in zip(reads, procs, strict=True):
        assert proc.returncode == 0, proc.stderr
        _assert_clean(proc, "oxy " + " ".join(args))

    accepted = _oxy("cases", "accept", "fresh", cwd=root)
    assert accepted.returncode == 0, accepted.stderr
    _assert_clean(accepted, "oxy cases accept")
    yaml_text = (root / "prompts/echo.prompt.yml").read_text("utf-8")
    assert "Your key is ***" in yaml_text
    assert KEY not in yaml_text

    stored = list((root / ".oxy").glob("oxyeval.db*"))
    assert any(p.name == "oxyeval.db" for p in stored)
    everything = b"".join(p.read_bytes() for p in stored)
    assert b"Your key is ***" in everything  # the answers are stored, scrubbed
    assert KEY.encode() not in everything


def test_accept_scrubs_a_key_stored_by_an_older_version(project: tuple[Path, Any]) -> None:
    """A history written before keys were scrubbed: accept must not copy the key into YAML,
    even though this command never calls a model (the key is known from config.yml)."""
    root, _server = project
    assert _oxy("cases", "run", cwd=root).returncode == 1
    with sqlite3.connect(root / ".oxy/oxyeval.db") as db:
        db.execute("UPDATE executions SET actual_output = ?", (f"old answer {KEY}",))
    db.close()
    accepted = _oxy("cases", "accept", "known", cwd=root)
    assert accepted.returncode == 0, accepted.stderr
    _assert_clean(accepted, "oxy cases accept (old history)")
    yaml_text = (root / "prompts/echo.prompt.yml").read_text("utf-8")
    assert "old answer ***" in yaml_text
    assert KEY not in yaml_text


# ------------------------------------------------------------------ each layer alone


def test_model_generate_redacts_text_and_tool_arguments() -> None:
    """Where an answer enters: text and tool-call arguments are scrubbed before any use."""

    def answer(request: RecordedRequest) -> Any:
        key = request.headers["authorization"].removeprefix("Bearer ")
        return openai_tool_call_response(
            [("query", {"sql": f"SELECT '{key}'", "note": [key]})], text=f"calling with {key}"
        )

    with fake_openai(answer) as server:
        spec = ModelSpec("m", "openai", "gpt-x", key_var=KEY_VAR, api_url=server.url)
        completion = run_model(spec, [ChatMessage("user", "hi")], environ={KEY_VAR: KEY})
    assert completion.text == "calling with ***"
    assert completion.tool_calls[0].arguments == {"sql": "SELECT '***'", "note": ["***"]}


def test_model_generate_redacts_a_plain_answer() -> None:
    with fake_openai(lambda r: openai_chat_response(f"key={KEY}")) as server:
        spec = ModelSpec("m", "openai", "gpt-x", key_var=KEY_VAR, api_url=server.url)
        completion = run_model(spec, [ChatMessage("user", "hi")], environ={KEY_VAR: KEY})
    assert completion.text == "key=***"


def test_escaped_and_url_encoded_forms_are_scrubbed() -> None:
    odd = 'pa$$/wörd"key+1'
    register_secret(odd)
    assert redact(f"raw {odd}") == "raw ***"
    assert redact(json.dumps({"k": odd})) == '{"k": "***"}'
    assert redact(json.dumps({"k": odd}, ensure_ascii=False)) == '{"k": "***"}'
    assert redact("https://x.test/?k=pa%24%24%2Fw%C3%B6rd%22key%2B1") == "https://x.test/?k=***"
    register_secret("short")  # under the minimum length: never scrubbed
    assert redact("a short note") == "a short note"


def _escaped(key: str, case: str) -> str:
    """Every UTF-16 unit of ``key`` as JSON's ``\\uXXXX`` (a pair for an astral character)."""
    units = key.encode("utf-16-be")
    return "".join(
        f"\\u{int.from_bytes(units[i : i + 2], 'big'):04{case}}" for i in range(0, len(units), 2)
    )


def _percent(key: str, case: str) -> str:
    return "".join(f"%{b:02{case}}" for b in key.encode())


@pytest.mark.parametrize(
    "form",
    [
        _escaped(KEY, "x"),
        _escaped(KEY, "X"),
        _percent(KEY, "x"),
        _percent(KEY, "X"),
        _escaped("pa$$/wörd😀", "x"),  # an astral character: its UTF-16 surrogate pair
        _percent("pa$$/wörd😀", "X"),
    ],
    ids=["\\u lower", "\\u upper", "% lower", "% upper", "\\u pair", "% UTF-8"],
)
def test_a_key_escaped_whole_is_scrubbed(form: str) -> None:
    register_secret(KEY)
    register_secret("pa$$/wörd😀")
    assert redact(f'echo "{form}".') == 'echo "***".'
    decoded = json.loads(f'"{form}"') if form.startswith("\\u") else unquote(form)
    assert decoded in (KEY, "pa$$/wörd😀")  # the form really is the key


@pytest.mark.parametrize(
    "splitter",
    ["\x1b[31m", "\x1b[0m\x1b[1;38;5;196m", "\x1b]8;;http://x\x07", "\x1b(B", "\x00", "\u200b"],
    ids=["colour", "reset then 256 colours", "OSC link", "charset", "NUL", "zero-width space"],
)
def test_a_key_split_by_what_a_terminal_does_not_show_is_scrubbed(splitter: str) -> None:
    register_secret(KEY)
    text = f"\x1b[1mkey:\x1b[0m {KEY[:3]}{splitter}{KEY[3:]}\x1b[0m and \x1b[32mgreen\x1b[0m"
    assert redact(text) == "\x1b[1mkey:\x1b[0m ***\x1b[0m and \x1b[32mgreen\x1b[0m"
    assert redact("\x1b[32mno key here\x1b[0m") == "\x1b[32mno key here\x1b[0m"


def test_a_streamed_key_split_by_a_colour_code_across_pieces_is_scrubbed() -> None:
    register_secret(KEY)
    out: list[str] = []
    pieces = RedactingPieces(out.append)
    for piece in ["answer: ", KEY[:4], "\x1b[3", "1m", KEY[4:10], "\x1b[0m", KEY[10:], " done"]:
        pieces.write(piece)
    pieces.flush()
    shown = re.sub(r"\x1b\[[0-9;]*m", "", "".join(out))
    assert shown == "answer: *** done", out
    assert not any(KEY[:6] in piece or KEY[-6:] in piece for piece in out)


def test_redact_data_scrubs_keys_and_nested_values() -> None:
    register_secret(KEY)
    data = {KEY: [f"x {KEY}", ("t", KEY), 3, None], "n": {"deep": KEY}}
    assert redact_data(data) == {"***": ["x ***", ["t", "***"], 3, None], "n": {"deep": "***"}}


def test_json_writer_console_and_streams_redact(capsys: pytest.CaptureFixture[str]) -> None:
    from oxyeval.cli.console import stderr_console, stdout_console
    from oxyeval.report import write_json

    register_secret(KEY)
    out = io.StringIO()
    write_json({"output": f"the key {KEY}"}, out)
    assert json.loads(out.getvalue()) == {"output": "the key ***"}
    stdout_console().print(f"out {KEY}", markup=False)
    stderr_console().print(f"err {KEY}", markup=False)
    captured = capsys.readouterr()
    assert "out ***" in captured.out and "err ***" in captured.err
    assert KEY not in captured.out + captured.err
    sink = io.StringIO()
    RedactingStream(sink).write(f"line {KEY}\n")
    assert sink.getvalue() == "line ***\n"


def test_export_and_cache_writer_redacts(tmp_path: Path) -> None:
    from oxyeval.workflow.files import write_output
    from oxyeval.workflow.sql import SqlResult

    register_secret(KEY)
    write_output(tmp_path / "a.txt", f"text {KEY}", None)
    write_output(tmp_path / "b.json", {"v": KEY}, "json")
    write_output(tmp_path / "c.csv", SqlResult(["k"], [(KEY,)]), "csv")
    for name in ("a.txt", "b.json", "c.csv"):
        data = (tmp_path / name).read_text("utf-8")
        assert "***" in data and KEY not in data, name
    assert json.loads((tmp_path / "b.json").read_text("utf-8")) == {"v": "***"}


def test_store_never_writes_a_key(tmp_path: Path) -> None:
    """The store's own write path, for callers that hand it raw text (bulk imports)."""
    from oxyeval.store import NewExecution, open_store

    register_secret(KEY)
    path = tmp_path / "h.db"
    with open_store(path) as store:
        store.prompts.upsert("p", "p")
        store.cases.upsert("p::c", "p", "c", {}, "expected")
        store.executions.record(
            NewExecution(
                test_case_id="p::c",
                status="error",
                actual_output=f"answer {KEY}",
                output_diff=[{"op": "insert", "text": f"answer {KEY}"}],
                prompt_version=1,
                error=f"failed with {KEY}",
            )
        )
        stored = store.executions.list("p::c", 1, 0)[0]
        data = b"".join(p.read_bytes() for p in tmp_path.glob("h.db*"))
    assert stored.actual_output == "answer ***"
    assert stored.error == "failed with ***"
    assert stored.output_diff == [{"op": "insert", "text": "answer ***"}]
    assert KEY.encode() not in data


def test_whatever_a_command_prints_is_scrubbed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The last line of defence: a command prints only through the CLI's streams, which
    scrub a secret that nobody scrubbed before printing it (plain text, a console, a raw
    stream write, an uncaught error and its JSON document)."""
    import typer

    import oxyeval.cli._app as cli
    from oxyeval.cli.console import echo, stderr_console, stdout_console, streams

    register_secret(KEY)
    leaky = typer.Typer()

    @leaky.command("talk")
    def talk() -> None:
        echo(f"echo {KEY}")
        stdout_console().print(f"console {KEY}", markup=False)
        stderr_console().print(f"stderr {KEY}", markup=False)
        streams().stderr.write(f"raw {KEY}\n")

    @leaky.command("crash")
    def crash(format: str = typer.Option("pretty", "--format")) -> None:
        raise RuntimeError(f"bug near {KEY}")

    monkeypatch.setattr(cli, "app", leaky)
    with pytest.raises(SystemExit) as info:
        cli.main(["talk"])
    captured = capsys.readouterr()
    assert info.value.code == 0
    assert captured.out == "echo ***\nconsole ***\n"
    assert captured.err == "stderr ***\nraw ***\n"

    with pytest.raises(SystemExit) as info:
        cli.main(["crash", "--format", "json"])
    captured = capsys.readouterr()
    assert info.value.code == 3
    assert "internal error: RuntimeError: bug near ***" in captured.err
    assert json.loads(captured.out)["error"].startswith(
        "internal error: RuntimeError: bug near ***"
    )
    assert KEY not in captured.out + captured.err


def test_a_secret_in_a_bad_command_line_value_is_scrubbed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Click echoes a bad value back in its usage error: that goes through the same
    streams, on stderr and in the JSON document."""
    from oxyeval.cli import main

    register_secret(KEY)
    with pytest.raises(SystemExit) as info:
        main(["test", "x.agent.yml", "--format", "json", "--min-accuracy", KEY])
    captured = capsys.readouterr()
    assert info.value.code == 2
    assert "Invalid value for '--min-accuracy': '***'" in captured.err
    assert "'***' is not a valid float" in json.loads(captured.out)["error"]
    assert KEY not in captured.out + captured.err


def test_a_secret_scope_forgets_the_keys_first_registered_inside() -> None:
    from oxyeval.redact import redact, secret_scope

    register_secret("sk-known-before-the-scope")
    with secret_scope():
        register_secret("sk-only-inside-the-scope")
        register_secret("sk-known-before-the-scope")  # already known: stays known after
        assert redact("a sk-only-inside-the-scope b") == "a *** b"
    assert redact("a sk-only-inside-the-scope b") == "a sk-only-inside-the-scope b"
    assert redact("a sk-known-before-the-scope b") == "a *** b"


def test_overlapping_scopes_never_unmask_a_key_the_other_still_uses() -> None:
    """Two evaluations served at once (a server), both with the same key: the one that
    ends first must not make the key readable in what the other prints next."""
    import asyncio

    from oxyeval.redact import redact, secret_scope

    key = "sk-shared-by-two-runs-1234"

    async def both() -> tuple[str, str]:
        entered = [asyncio.Event(), asyncio.Event()]
        fast_registered, slow_registered, fast_done = (asyncio.Event() for _ in range(3))

        async def fast() -> str:
            with secret_scope():
                entered[0].set()
                await entered[1].wait()  # both scopes are open before any key is known
                register_secret(key)
                fast_registered.set()
                await slow_registered.wait()  # the other run uses the key too now
                shown = redact(key)
            fast_done.set()
            return shown

        async def slow() -> str:
            with secret_scope():
                entered[1].set()
                await fast_registered.wait()
                register_secret(key)  # already scrubbed: the same key, the other scope's
                register_secret("sk-only-slow-0000")
                slow_registered.set()
                await fast_done.wait()  # the fast scope has closed
                return redact(f"{key} sk-only-slow-0000")

        return await asyncio.gather(fast(), slow())

    fast_shown, slow_shown = asyncio.run(both())
    assert fast_shown == "***" and slow_shown == "*** ***"  # the fast exit kept the key
    assert redact(key) == key  # both closed: forgotten
    assert redact("sk-only-slow-0000") == "sk-only-slow-0000"


def test_a_scope_follows_work_handed_to_threads() -> None:
    import asyncio

    from oxyeval.redact import redact, secret_scope

    async def run() -> str:
        with secret_scope():
            await asyncio.to_thread(register_secret, "sk-from-a-worker-5555")
            return redact("sk-from-a-worker-5555")

    assert asyncio.run(run()) == "***"
    assert redact("sk-from-a-worker-5555") == "sk-from-a-worker-5555"  # the scope owned it
