"""Secrets at every sink, round 2.

Each test drives the real ``oxy`` command (a ``python -m oxyeval`` process) against fake
servers on 127.0.0.1 and reads back every sink the run writes: stdout and stderr (pretty
and ``--format json``, which is the JSON document), the ``--junit`` file and the history
database's bytes (the SQLite file and its WAL). None may hold the secret, nor any
12-character piece of it: a key cut in two (item 9) is as leaked as a whole one.

8. A header from ``{env_var: AUTH_HDR}`` holding ``Bearer <token>`` (or ``Basic``): a
   server echoing the bare token (or the decoded password).
9. Server error text longer than what is shown, with a key straddling the cut (and a
   body the server cut itself, inside the key).
10. A PostgreSQL password in the history URL's query (``?password=``, ``?sslpassword=``),
    in its userinfo, and in libpq's keyword/value form.
11. ``api_url: http://alice:<password>@host/v1``: every error naming the URL.
12. A literal ``api_key:`` / ``Authorization`` in config.yml on a line that a diagnostic
    quotes (a schema error, a duplicate key, a YAML syntax error).

Second pass (the attack review of the fixes):

F4. A token written as a URL's user name (``http://TOKEN@host/v1``): the whole userinfo
    of a model's URL is masked and registered; a PostgreSQL URL's user stays readable.
F5. A URL password holding a raw ``/``, ``?``, ``#``, ``@`` or ``:``: masked as far as
    any library (httpx, urllib, SQLAlchemy) reads it, and never quoted in pieces.
F11. A literal key reached through a YAML alias (``api_key: *k``) or a merge key.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from .conftest import MakeProject
from .fakes import FakeServer, RecordedRequest, openai_error

AGENT = """\
model: hosted
system_instructions: Answer briefly.
tests:
  - type: consistency
    n: 2
    task_description: What is the total?
"""

#: A judge that never needs the network, so only the model under test reaches the server.
JUDGE = """\
  - name: judge
    vendor: mock
    rules:
      - match: "."
        output: "Same facts.\\nAnswer: A"
defaults:
  model: hosted
  judge_model: judge
"""


def _config(entry: str) -> str:
    return "models:\n" + entry + JUDGE


def pieces(secret: str, size: int = 12) -> set[str]:
    """The secret and every ``size``-character piece of it."""
    return {secret} | {secret[i : i + size] for i in range(len(secret) - size + 1)}


def assert_nowhere(secret: str, sinks: Mapping[str, str | bytes]) -> None:
    """No sink holds ``secret`` or a 12-character piece of it."""
    assert len(secret) >= 12, "a shorter secret would make the piece check vacuous"
    for where, data in sinks.items():
        blob = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
        found = sorted(p for p in pieces(secret) if p.encode() in blob)
        assert not found, f"{where} holds {found[:3]} of the secret:\n{blob[-2000:]!r}"


def oxy(*args: str, cwd: Path, env: Mapping[str, str] | None = None) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "oxyeval", *args],
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


def run_sinks(
    root: Path,
    args: tuple[str, ...],
    env: Mapping[str, str] | None = None,
    command: tuple[str, ...] = ("test",),
) -> tuple[dict[str, str | bytes], list[Any]]:
    """``oxy test ARGS`` (or another ``command``) twice at once, pretty (with --debug for
    ``oxy test``) and as JSON with a JUnit file; every sink they wrote, by name, and the
    two processes (pretty, json)."""
    junit = root / "report.xml"
    debug = ("--debug",) if command == ("test",) else ()
    runs = [
        (*command, *args, *debug),
        (*command, *args, "--format", "json", "--junit", str(junit)),
    ]
    with ThreadPoolExecutor(2) as pool:
        pretty, as_json = pool.map(lambda a: oxy(*a, cwd=root, env=env), runs)
    sinks: dict[str, str | bytes] = {
        "stdout (pretty)": pretty.stdout,
        "stderr (pretty)": pretty.stderr,
        "stdout (JSON)": as_json.stdout,
        "stderr (JSON run)": as_json.stderr,
    }
    if junit.exists():
        sinks["JUnit file"] = junit.read_bytes()
    for path in sorted((root / ".oxy").glob("oxyeval.db*")):
        sinks[f"history {path.name}"] = path.read_bytes()
    return sinks, [pretty, as_json]


def json_doc(proc: Any) -> dict[str, Any]:
    assert proc.stdout.strip(), proc.stderr
    return json.loads(proc.stdout)


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ------------------------------------------------------------------ item 8: header parts

TOKEN = "sk-hdr-" + "4d9a1c7e5b3f8a2d6c0e9b7f1a3d5c8e"


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.mark.parametrize(
    ("header", "secret", "echo"),
    [
        (f"Bearer {TOKEN}", TOKEN, lambda value: value.removeprefix("Bearer ")),
        (
            _basic("ci-bot", "pw-" + "77c1e0b94f2a6d3e8b5a"),
            "pw-77c1e0b94f2a6d3e8b5a",
            lambda value: base64.b64decode(value.split()[1]).decode().split(":", 1)[1],
        ),
    ],
    ids=["bearer", "basic"],
)
def test_the_token_of_an_auth_header_from_the_environment_is_scrubbed(
    make_project: MakeProject, header: str, secret: str, echo: Any
) -> None:
    def refuse(request: RecordedRequest) -> Any:
        bare = echo(request.headers["authorization"])
        return (401, openai_error(f"invalid credentials: {bare} is not a known token"))

    with FakeServer(refuse) as server:
        entry = (
            "  - name: hosted\n    vendor: openai\n    model_ref: gpt-x\n"
            f"    api_url: {server.url}\n    headers:\n      Authorization: {{env_var: AUTH_HDR}}\n"
        )
        root = make_project(_config(entry), {"agents/a.agent.yml": AGENT})
        sinks, (pretty, as_json) = run_sinks(root, ("agents/a.agent.yml",), {"AUTH_HDR": header})
    assert server.requests and server.requests[0].headers["authorization"] == header
    assert pretty.returncode == as_json.returncode == 3, pretty.stderr
    assert "invalid credentials: *** is not a known token" in pretty.stdout + pretty.stderr
    assert "JUnit file" in sinks and any(k.startswith("history") for k in sinks)
    assert_nowhere(secret, sinks)
    assert_nowhere(header, sinks)


# ------------------------------------------------------------------ item 9: redact, then cut

KEY = "sk-cut-" + "0123456789abcdef0123456789abcdef0123456789abcd"  # 53 characters
KEY_ENTRY = (
    "  - name: hosted\n    vendor: openai\n    model_ref: gpt-x\n    api_url: {url}\n"
    "    key_var: OXY_CUT_KEY\n    max_retries: 0\n"
)


def _straddling(key: str, cut: int) -> str:
    """Text whose ``cut``-th character falls inside ``key``, one character before its end."""
    head = "x" * (cut - len(key) + 1)
    return f"{head}{key} and then {'y' * 400}"


@pytest.mark.parametrize("form", ["error message", "malformed body", "cut by the server"])
def test_a_key_straddling_the_cut_leaves_no_piece(make_project: MakeProject, form: str) -> None:
    def answer(request: RecordedRequest) -> Any:
        key = request.headers["authorization"].removeprefix("Bearer ")
        if form == "error message":  # shown up to 300 characters
            return (400, openai_error(_straddling(key, 300)))
        if form == "malformed body":  # shown up to 200 characters
            return (200, _straddling(key, 200), {"Content-Type": "text/plain"})
        # The server cut its own message inside the key: the piece ends the text.
        return (400, openai_error(f"your key {key[:40]}"))

    with FakeServer(answer) as server:
        root = make_project(_config(KEY_ENTRY.format(url=server.url)), {"a.agent.yml": AGENT})
        sinks, (pretty, as_json) = run_sinks(root, ("a.agent.yml",), {"OXY_CUT_KEY": KEY})
    assert pretty.returncode == as_json.returncode == 3, pretty.stderr
    errors = " ".join(e["error"] for e in json_doc(as_json)["tests"][0]["failedRuns"])
    assert "***" in errors, errors
    if form != "cut by the server":
        assert "x***" in errors and "y" * 400 not in errors  # redacted, then cut
    assert_nowhere(KEY, sinks)


def test_clip_redacts_then_cuts_and_masks_pieces_at_the_edges() -> None:
    from oxyeval.redact import clip, register_secret

    register_secret(KEY)
    text = _straddling(KEY, 300)
    shown = clip(text, 300)
    assert "x*** and then yyy" in shown and shown.endswith("y...") and KEY[:12] not in shown
    assert clip(f"ends with {KEY[:20]}", 100) == "ends with ***"
    assert clip(f"{KEY[-20:]} starts it", 100) == "*** starts it"
    assert clip("abc *** def", 5) == "abc ..."  # never "abc **..."
    assert clip("klmnopqrst", 4, "... ({more} more)") == "klmn... (6 more)"
    assert clip("klmnopqrst", 8, total=True) == "klmno..."
    assert clip("short", 8, total=True) == "short"


# ------------------------------------------------------------------ item 10: PostgreSQL

PG_PASSWORD = "pg-" + "Qx7Rk2Vm9Lw4Zt8N"


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://bob@127.0.0.1:{port}/hist?password={pw}",
        "postgresql://bob@127.0.0.1:{port}/hist?sslmode=disable&sslpassword={pw}",
        "postgresql://bob:{pw}@127.0.0.1:{port}/hist",
        "postgres://bob@/hist?host=127.0.0.1&port={port}&password={pw}",
    ],
    ids=["password", "sslpassword", "userinfo", "host-in-query"],
)
def test_a_postgresql_password_in_the_url_is_never_shown(
    make_project: MakeProject, url: str
) -> None:
    """An unreachable server: the run goes on without history and says so, naming the
    database (warnings, JSON ``history[].db``), never its password."""
    db = url.format(port=free_port(), pw=PG_PASSWORD)
    root = make_project(None, {"agents/a.agent.yml": AGENT.replace("hosted", "agent_model")})
    (root / "config.yml").write_text(
        "models:\n  - name: agent_model\n    vendor: mock\n    outputs: ['The total is 42.']\n"
        + JUDGE.replace("hosted", "agent_model"),
        "utf-8",
    )
    sinks, (pretty, as_json) = run_sinks(root, ("agents/a.agent.yml", "--db", db))
    assert pretty.returncode == as_json.returncode == 0, pretty.stderr
    doc = json_doc(as_json)
    shown = doc["history"][0]["db"]
    assert "***" in shown and "bob" in shown and "hist" in shown, shown
    assert "history database" in pretty.stderr and "***" in pretty.stderr
    assert_nowhere(PG_PASSWORD, sinks)


def test_a_libpq_keyword_value_string_is_refused_masked(make_project: MakeProject) -> None:
    """``host=... password='x y'`` is not a file name: as one it would create a file named
    after the password. Refused (exit 2), masked, with OXY_DB as with --db."""
    secret = "two words " + PG_PASSWORD
    root = make_project(None, {"a.agent.yml": AGENT.replace("hosted", "agent_model")})
    (root / "config.yml").write_text(
        "models:\n  - name: agent_model\n    vendor: mock\n    outputs: ['The total is 42.']\n"
        + JUDGE.replace("hosted", "agent_model"),
        "utf-8",
    )
    dsn = f"host=127.0.0.1 port={free_port()} dbname=hist password='{secret}'"
    sinks, procs = run_sinks(root, ("a.agent.yml",), {"OXY_DB": dsn})
    assert [p.returncode for p in procs] == [2, 2], procs[0].stderr
    assert "password=***" in procs[0].stderr and "connection string" in procs[0].stderr
    assert "password=***" in json_doc(procs[1])["error"]
    assert {p.name for p in root.iterdir()} == {"a.agent.yml", "config.yml", "report.xml"}
    assert_nowhere(PG_PASSWORD, sinks)


def test_a_password_in_history_url_of_config_yml_is_refused_masked(
    make_project: MakeProject,
) -> None:
    """config.yml is shared: a password in its history URL, in the query as in the
    userinfo, is an error, and neither the error nor the quoted line shows it."""
    root = make_project(None, {"a.agent.yml": AGENT.replace("hosted", "agent_model")})
    (root / "config.yml").write_text(
        "models:\n  - name: agent_model\n    vendor: mock\n    outputs: ['The total is 42.']\n"
        + JUDGE.replace("hosted", "agent_model")
        + f"history: {{url: 'postgresql://bob@127.0.0.1:1/hist?password={PG_PASSWORD}'}}\n",
        "utf-8",
    )
    sinks, procs = run_sinks(root, ("a.agent.yml",))
    checked = oxy("validate", cwd=root)
    sinks["stdout (validate)"], sinks["stderr (validate)"] = checked.stdout, checked.stderr
    assert [p.returncode for p in procs] == [2, 2], procs[0].stderr
    assert checked.returncode == 2
    assert "history.url contains a password" in procs[0].stderr
    assert "password=***" in procs[0].stderr  # the quoted line, masked
    assert_nowhere(PG_PASSWORD, sinks)


def test_a_postgresql_password_is_registered_for_driver_messages() -> None:
    """Whatever psycopg or SQLAlchemy say (a connection string echoed back) is scrubbed:
    the password is registered when the location is resolved, in every form libpq takes."""
    from oxyeval.redact import redact
    from oxyeval.store import resolve_location

    for url in (
        f"postgresql://bob@h/db?password={PG_PASSWORD}",
        f"postgresql://bob@h/db?sslpassword={PG_PASSWORD}",
        f"postgresql://bob:{PG_PASSWORD}@h/db",
    ):
        location = resolve_location(url, environ={})
        assert PG_PASSWORD not in location.display
    assert redact(f"invalid connection option: password={PG_PASSWORD}") == (
        "invalid connection option: password=***"
    )


# ------------------------------------------------------------------ item 11: api_url userinfo

URL_PASSWORD = "url-" + "Hk3Pq8Wz5Ty1Mn6B"


def test_a_password_in_api_url_is_never_shown(make_project: MakeProject) -> None:
    """Every error naming the model's URL (a retried 503, a 404, a malformed answer, a
    redirect) shows its whole userinfo as ``***@``; httpx still sends the password (Basic
    auth)."""
    responses = iter(
        [
            (503, openai_error("busy"), {"Retry-After": "0"}),
            (404, openai_error("no such model")),
            (200, {"unexpected": True}),
            (302, "", {"Location": f"http://alice:{URL_PASSWORD}@127.0.0.1:1/v2/chat"}),
        ]
    )

    def answer(request: RecordedRequest) -> Any:
        try:
            return next(responses)
        except StopIteration:
            return (500, openai_error("down"))

    with FakeServer(answer) as server:
        url = server.url.replace("http://", f"http://alice:{URL_PASSWORD}@")
        entry = (
            "  - name: hosted\n    vendor: openai\n    model_ref: gpt-x\n"
            f"    api_url: {url}\n    max_retries: 1\n    concurrency: 1\n"
        )
        agent = AGENT.replace("n: 2", "n: 3")
        root = make_project(_config(entry), {"a.agent.yml": agent})
        sinks, (pretty, as_json) = run_sinks(root, ("a.agent.yml",))
        sent = server.requests
    basic = "Basic " + base64.b64encode(f"alice:{URL_PASSWORD}".encode()).decode()
    assert sent and sent[0].headers.get("authorization") == basic
    assert pretty.returncode == as_json.returncode == 3, pretty.stderr
    errors = " ".join(e["error"] for e in json_doc(as_json)["tests"][0]["failedRuns"])
    assert "http://***@127.0.0.1" in errors and "alice" not in errors, errors
    assert "retrying model 'hosted'" in pretty.stderr + as_json.stderr
    assert_nowhere(URL_PASSWORD, sinks)


def test_model_errors_mask_the_url_of_a_spec_built_in_code() -> None:
    """Specs made in code (not from config.yml) get the same rule when they are called."""
    from oxyeval.errors import ProviderError
    from oxyeval.providers import ChatMessage, ModelSpec

    from .fakes import run_model

    with FakeServer(lambda r: (500, openai_error("down"))) as server:
        url = server.url.replace("http://", f"http://alice:{URL_PASSWORD}@")
        spec = ModelSpec("m", "openai", "gpt-x", api_url=url, max_retries=0)
        with pytest.raises(ProviderError) as info:
            run_model(spec, [ChatMessage("user", "hi")], environ={})
    assert "http://***@127.0.0.1" in str(info.value)
    assert URL_PASSWORD not in str(info.value) and URL_PASSWORD not in repr(info.value.args)


# ------------------------------------------------------------------ item 12: literal secrets

LITERAL = "sk-lit-" + "9e8d7c6b5a4f3e2d1c0b"


@pytest.mark.parametrize(
    "entry",
    [
        # a schema error (an unknown key) on the line of a flow mapping holding the key
        "  - {{name: hosted, vendor: openai, model_ref: gpt-x, api_key: {s}, temprature: 1}}\n",
        # the header's own line, when another header on it is not a string
        "  - name: hosted\n    vendor: openai\n    model_ref: gpt-x\n"
        '    headers: {{Authorization: "Bearer {s}", X-Retries: [1, 2]}}\n',
        # a duplicate key on the key's line
        "  - name: hosted\n    vendor: openai\n    model_ref: gpt-x\n"
        "    api_key: {s}\n    api_key: {s}\n",
        # a YAML syntax error on the key's line, and an unclosed quote
        "  - name: hosted\n    vendor: openai\n    api_key: {s}: oops\n",
        '  - name: hosted\n    vendor: openai\n    api_key: "{s}\n',
        # a database of a type oxyeval does not run, with its password beside a typo
        "  - name: hosted\n    vendor: mock\n    outputs: [x]\n"
        "databases:\n  - {{name: wh, type: postgres, password: {s}, bogus: [}}\n",
    ],
    ids=["schema", "header", "duplicate", "syntax", "unclosed", "database"],
)
def test_a_literal_secret_on_a_quoted_line_is_scrubbed(
    make_project: MakeProject, entry: str, request: pytest.FixtureRequest
) -> None:
    root = make_project(_config(entry.format(s=LITERAL)), {"a.agent.yml": AGENT})
    sinks, quoted = _refused_everywhere(root)
    assert " | " in quoted, quoted  # a line was quoted...
    if "unclosed" not in request.node.name:  # (the parser stops on a later line)
        assert "***" in quoted, quoted  # ...the secret's, masked
    assert_nowhere(LITERAL, sinks)


def test_the_line_an_unclosed_quote_opens_on_is_scrubbed() -> None:
    """A quote left open runs into the next lines: the secret is what follows it on its
    own line, which is the line a diagnostic would quote."""
    from oxyeval.project.credentials import register_literal_secrets
    from oxyeval.redact import redact

    text = f'models:\n  - name: m\n    api_key: "{LITERAL}\n    vendor: openai\n'
    register_literal_secrets(text)
    assert redact(text.splitlines()[2]) == '    api_key: "***'


# ------------------------------------------------------------------ F4: a token as the user name

URL_TOKEN = "tok-" + "Vb7Hn2Qw9Er4Ty6Ui1"


def _echo_basic_user(request: RecordedRequest) -> Any:
    """Refuse, echoing the user name httpx sent as Basic auth (``TOKEN:``)."""
    header = request.headers.get("authorization", "")
    user = base64.b64decode(header.split()[1]).decode().split(":", 1)[0] if header else "?"
    return (401, openai_error(f"unknown user {user}"))


@pytest.mark.parametrize("kind", ["chat", "embedding", "unreachable"])
def test_a_token_written_as_the_user_name_of_api_url_is_never_shown(
    make_project: MakeProject, kind: str
) -> None:
    """``http://TOKEN@host/v1`` (httpx sends ``Basic TOKEN:``): the whole userinfo is the
    credential, masked in every message and registered, for chat and embedding models."""
    with FakeServer(_echo_basic_user) as server:
        port = free_port() if kind == "unreachable" else server.port
        url = f"http://{URL_TOKEN}@127.0.0.1:{port}/v1"
        if kind == "embedding":
            config = (
                "models:\n  - {name: m, vendor: mock, outputs: ['hi']}\n"
                f"embeddings:\n  - {{name: emb, vendor: openai, model_ref: e, api_url: '{url}', "
                "max_retries: 0}\n"
            )
            prompt = (
                "model: m\ntemplate: 'Say {{ word }}'\nsimilarity: emb\nthreshold: 0.5\n"
                "cases:\n  - {name: one, input: {word: hi}, expected_output: hello there}\n"
            )
            root = make_project(config, {"s.prompt.yml": prompt})
            sinks, procs = run_sinks(root, ("s.prompt.yml",), command=("cases", "run"))
        else:
            entry = (
                "  - name: hosted\n    vendor: openai\n    model_ref: gpt-x\n"
                f"    api_url: {url}\n    max_retries: 0\n"
            )
            root = make_project(_config(entry), {"a.agent.yml": AGENT})
            sinks, procs = run_sinks(root, ("a.agent.yml",))
        sent = server.requests
    assert [p.returncode for p in procs] == [3, 3], procs[0].stderr
    shown = procs[0].stdout + procs[0].stderr + procs[1].stdout
    assert "http://***@127.0.0.1" in shown, shown
    if kind != "unreachable":
        assert sent and sent[0].headers["authorization"].startswith("Basic ")
        assert "unknown user ***" in shown, shown
    assert_nowhere(URL_TOKEN, sinks)


# ------------------------------------------------------------------ F5: '/?#@:' in a password

#: Both halves are long enough that either one shown alone is a 12-character piece.
HALVES = ("Ab3De6Gh9Jk2", "Zq8Xc3Vb6Nm1Lk4J")
SEPARATORS = ["/", "?", "#", "@", ":", "%2F", "%40"]


def _password(sep: str) -> tuple[str, str]:
    """The password as written in the URL, and as the server gets it."""
    from urllib.parse import unquote

    written = HALVES[0] + sep + HALVES[1]
    return written, unquote(written)


@pytest.mark.parametrize("sep", SEPARATORS)
def test_a_history_password_holding_url_delimiters_is_never_shown(
    make_project: MakeProject, sep: str
) -> None:
    """``--db postgresql://bob:<password>@host/db`` with a raw delimiter in the password
    (SQLAlchemy takes ``/?#:`` into it; a raw ``@`` is refused as ambiguous), and the same
    URL in config.yml (refused: config.yml holds no passwords), quoted by validate."""
    written, sent = _password(sep)
    db = f"postgresql://bob:{written}@127.0.0.1:{free_port()}/hist"
    root = make_project(None, {"a.agent.yml": AGENT.replace("hosted", "agent_model")})
    config = (
        "models:\n  - name: agent_model\n    vendor: mock\n    outputs: ['The total is 42.']\n"
        + JUDGE.replace("hosted", "agent_model")
    )
    (root / "config.yml").write_text(config, "utf-8")
    sinks, (pretty, as_json) = run_sinks(root, ("a.agent.yml", "--db", db))
    listed = oxy("history", "--format", "json", cwd=root, env={"OXY_DB": db})
    sinks["stdout (history)"], sinks["stderr (history)"] = listed.stdout, listed.stderr
    (root / "config.yml").write_text(config + f"history: {{url: '{db}'}}\n", "utf-8")
    checked = oxy("validate", "--format", "json", cwd=root)
    sinks["stdout (validate)"], sinks["stderr (validate)"] = checked.stdout, checked.stderr
    assert "postgresql://bob:***@127.0.0.1:" in json_doc(listed)["error"], listed.stdout
    if sep == "@":  # SQLAlchemy would read the host from the password
        assert pretty.returncode == as_json.returncode == 2, pretty.stderr
        assert "percent-encode" in json_doc(as_json)["error"]
    else:
        assert pretty.returncode == as_json.returncode == 0, pretty.stderr
        shown = json_doc(as_json)["history"][0]["db"]
        assert shown.startswith("postgresql://bob:***@127.0.0.1:") and shown.endswith("/hist")
    assert checked.returncode == 2 and "config.yml" in checked.stdout + checked.stderr
    assert_nowhere(HALVES[0] + HALVES[1][0], sinks)  # the part before the delimiter...
    assert_nowhere(HALVES[1], sinks)  # ...the part after it
    assert_nowhere(written, sinks)
    assert_nowhere(sent, sinks)


def test_api_url_passwords_holding_url_delimiters_are_never_shown(
    make_project: MakeProject,
) -> None:
    """A model's ``api_url`` with a delimiter in its password. httpx ends the host at the
    first ``/?#``, so those URLs are refused at load (the quoted line masked, no "port"
    piece in the message); with ``@``, ``:`` or percent-encoded ones httpx sends the
    password, and a server echoing it shows ``***``."""
    models = "".join(
        f"  - {{name: m{i}, vendor: openai, model_ref: x, "
        f"api_url: 'http://alice:{_password(sep)[0]}@127.0.0.1:9/v1'}}\n"
        for i, sep in enumerate(SEPARATORS)
    )
    root = make_project("models:\n" + models, {"a.agent.yml": AGENT.replace("hosted", "m0")})
    sinks: dict[str, str | bytes] = {}
    procs = [oxy("validate", cwd=root), oxy("test", "a.agent.yml", "--format", "json", cwd=root)]
    for i, proc in enumerate(procs):
        sinks[f"stdout {i}"], sinks[f"stderr {i}"] = proc.stdout, proc.stderr
    assert [p.returncode for p in procs] == [2, 2], procs[0].stderr
    refused = procs[0].stdout + procs[0].stderr
    for i, sep in enumerate(SEPARATORS):
        assert (f"models[{i}].api_url" in refused) == (sep in "/?#"), refused
    assert "percent-encode" in refused and "http://***@127.0.0.1:9/v1" in refused, refused

    def refuse(request: RecordedRequest) -> Any:
        password = base64.b64decode(request.headers["authorization"].split()[1]).decode()
        return (401, openai_error(f"bad password {password.split(':', 1)[1]}"))

    with FakeServer(refuse) as server:
        usable = [sep for sep in SEPARATORS if sep not in "/?#"]
        models = "".join(
            f"  - {{name: m{i}, vendor: openai, model_ref: x, max_retries: 0, "
            f"api_url: 'http://alice:{_password(sep)[0]}@127.0.0.1:{server.port}/v1'}}\n"
            for i, sep in enumerate(usable)
        )
        agents = {f"a{i}.agent.yml": AGENT.replace("hosted", f"m{i}") for i in range(len(usable))}
        (root / "config.yml").write_text("models:\n" + models + JUDGE.split("defaults:")[0])
        for name, text in agents.items():
            (root / name).write_text(text)
        more, runs = run_sinks(root, tuple(agents))
        sent = [r.headers["authorization"] for r in server.requests]
    assert [p.returncode for p in runs] == [3, 3], runs[0].stderr
    assert "bad password ***" in runs[0].stdout + runs[0].stderr
    basics = {base64.b64decode(h.split()[1]).decode() for h in sent}
    assert {f"alice:{_password(sep)[1]}" for sep in usable} <= basics
    sinks.update(more)
    for sep in SEPARATORS:
        for password in _password(sep):
            assert_nowhere(password, sinks)
        assert_nowhere(HALVES[0] + HALVES[1][0], sinks)
        assert_nowhere(HALVES[1], sinks)


# ------------------------------------------------------------------ F11: keys through YAML aliases

ALIASED = "sk-alias-" + "5f4e3d2c1b0a9f8e7d6c"


@pytest.mark.parametrize(
    "config",
    [
        # the anchor's own line fails the schema and is quoted
        'defaults: &k "{s}"\nmodels:\n  - {{name: hosted, vendor: openai, model_ref: x, '
        "api_key: *k}}\n",
        # the anchor inside a list, the alias under a header
        "shared: &h ['Bearer {s}']\nmodels:\n  - name: hosted\n    vendor: openai\n"
        "    model_ref: x\n    headers: {{Authorization: *h}}\n",
        # a merge key brings the credential-named key in, its value a second alias
        'shared: &t "{s}"\nbase: &b {{api_key: *t, vendor: openai}}\nmodels:\n'
        "  - {{<<: *b, name: hosted, model_ref: x}}\n",
        # the anchor on a line an unclosed quote swallowed (read by eye)
        'models:\n  - name: hosted\n    vendor: openai\n    x: "\ndefaults: &k "{s}"\n'
        "    api_key: *k\n",
    ],
    ids=["scalar", "list", "merge", "swallowed"],
)
def test_a_literal_key_reached_through_an_alias_is_scrubbed(
    make_project: MakeProject, config: str
) -> None:
    root = make_project(config.format(s=ALIASED), {"a.agent.yml": AGENT})
    sinks, quoted = _refused_everywhere(root)
    assert " | " in quoted, quoted  # a line was quoted
    assert_nowhere(ALIASED, sinks)


def test_aliases_register_values_not_keys_and_stay_bounded() -> None:
    """An alias to a mapping under a credential key registers its values, not its keys
    (``vendor`` would vanish from every message); an alias bomb stays fast."""
    import time

    from oxyeval.project.credentials import register_literal_secrets
    from oxyeval.redact import redact

    register_literal_secrets(
        "a: &m {vendor: 'sk-alias-value-0123456789'}\nb: {api_key: *m}\nc: &n api_key\n"
        "d: {*n : sk-alias-by-key-9876543210}\n"
    )
    assert redact("vendor sk-alias-value-0123456789") == "vendor ***"
    assert redact("sk-alias-by-key-9876543210") == "***"
    # In a flow list left open, the scanner marks no key: the scalar before ':' is one.
    register_literal_secrets("models: [\ndefaults: &k 'sk-alias-open-flow-13579'\n  x: *k\n")
    assert redact("sk-alias-open-flow-13579") == "sk-alias-open-flow-13579"  # x: no credential
    register_literal_secrets("models: [\n  api_key: sk-alias-open-flow-24680\n")
    assert redact("sk-alias-open-flow-24680") == "***"
    bomb = "a: &a [x0, x1]\n" + "".join(
        f"b{i}: &b{i} [*{'a' if i == 0 else f'b{i - 1}'}, *{'a' if i == 0 else f'b{i - 1}'}]\n"
        for i in range(40)
    )
    started = time.monotonic()
    register_literal_secrets(bomb + "api_key: *b39\n")
    assert time.monotonic() - started < 5


@pytest.fixture(autouse=True)
def _no_oxy_db(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The runs here pick their history themselves."""
    monkeypatch.delenv("OXY_DB", raising=False)
    yield


def _refused_everywhere(root: Path) -> tuple[dict[str, str], str]:
    """Every sink of ``oxy test``/``run`` and both forms of ``oxy validate`` on a project
    they must all refuse as bad input (exit 2), and what they quoted of config.yml."""
    sinks, procs = run_sinks(root, ("a.agent.yml",))
    checked = [oxy("validate", cwd=root), oxy("validate", "--format", "json", cwd=root)]
    for i, proc in enumerate(checked):
        sinks[f"stdout (validate {i})"], sinks[f"stderr (validate {i})"] = proc.stdout, proc.stderr
    assert [p.returncode for p in (*procs, *checked)] == [2, 2, 2, 2], procs[0].stderr
    return sinks, procs[0].stderr + checked[0].stdout + checked[0].stderr


# ------------------------------------------------------------- a key in api_url's query

QUERY_KEY = "azfn-" + "Q7r2Lk9Vx4Zp1Hs8Dm3N"


def test_a_key_in_the_query_of_api_url_is_never_shown(make_project: MakeProject) -> None:
    """Azure Functions and signed URLs carry their key as a query parameter
    (``.../api/chat?code=KEY``): a server that refuses it quotes the URL, and the key
    must show as ``***`` there, in the retry warnings, the report and the history."""

    def answer(request: RecordedRequest) -> Any:
        return (404, openai_error(f"no function at {request.path}"))

    with FakeServer(answer) as server:
        entry = (
            "  - name: hosted\n    vendor: openai\n    model_ref: gpt-x\n"
            f"    api_url: '{server.url}/api?code={QUERY_KEY}'\n    max_retries: 0\n"
        )
        root = make_project(_config(entry), {"a.agent.yml": AGENT})
        sinks, (pretty, as_json) = run_sinks(root, ("a.agent.yml",))
        sent = server.requests
    assert sent and QUERY_KEY in sent[0].path  # the key is sent, as written
    assert pretty.returncode == as_json.returncode == 3, pretty.stderr
    errors = " ".join(e["error"] for e in json_doc(as_json)["tests"][0]["failedRuns"])
    assert "code=***" in errors, errors
    assert_nowhere(QUERY_KEY, sinks)
