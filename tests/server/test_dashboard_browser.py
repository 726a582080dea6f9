"""The dashboard in a real browser: Debian's headless chromium, driven by selenium through
Debian's chromedriver (never a downloaded browser or driver), against `oxy serve` on a
history written by the mock example commands.

The history: two `oxy cases run` of a two-case prompt, the second with the model's answer
to one case changed into hostile markup (so that case regresses between the two runs),
one `oxy ab run` over two branches, and two backdated executions so the trend charts have
three days. Without chromium, chromedriver or selenium the tests skip with the reason;
with OXY_REQUIRE_BROWSER=1 (CI) they fail instead, so a broken setup cannot hide.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
HOSTILE = '<img src=x onerror="document.body.dataset.pwned=1">'
CASE = "sentiment::positive"

CONFIG = """\
models:
  - name: classifier
    vendor: mock
    rules:
      - {match: "love", output: "positive"}
      - {match: ".", output: "negative"}
  - name: classifier-mini
    vendor: mock
    rules:
      - {match: "love", output: "positive"}
      - {match: ".", output: "neutral"}
  - name: judge
    vendor: mock
    rules:
      - {match: ".", output: "Same.\\nAnswer: A"}
"""
AGENT = """\
model: classifier
system_instructions: Label the feedback.
tests:
  - {type: consistency, name: labels, n: 2, task_description: I love it, model_ref: judge}
"""

PROMPT = """\
name: sentiment
model: classifier
template: "Feedback: {{ text }}"
similarity: lexical
threshold: 0.8
branches:
  - {name: current, model: classifier, control: true}
  - {name: mini, model: classifier-mini}
cases:
  - name: positive
    input: {text: I love it}
    expected_output: positive
  - name: negative
    input: {text: It broke}
    expected_output: negative
"""


def _unavailable(reason: str) -> None:
    """Skip, or fail where CI promised a browser (a skip there would hide a broken setup)."""
    if os.environ.get("OXY_REQUIRE_BROWSER") == "1":
        pytest.fail(f"OXY_REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(reason)


def _oxy(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oxyeval", *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k not in ("OXY_DB", "OXY_SERVE_TOKEN")},
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("dash")
    (root / "prompts").mkdir()
    (root / "config.yml").write_text(CONFIG, encoding="utf-8")
    (root / "prompts" / "sentiment.prompt.yml").write_text(PROMPT, encoding="utf-8")
    first = _oxy(root, "cases", "run")
    assert first.returncode == 0, first.stdout + first.stderr
    hostile = json.dumps(HOSTILE)  # a YAML flow scalar in double quotes is JSON-compatible
    (root / "config.yml").write_text(
        CONFIG.replace('output: "positive"}', f"output: {hostile}}}", 1), encoding="utf-8"
    )
    second = _oxy(root, "cases", "run")
    assert second.returncode == 1, second.stdout + second.stderr  # the case now fails
    ab = _oxy(root, "ab", "run")
    assert ab.returncode == 0, ab.stdout + ab.stderr
    (root / "a.agent.yml").write_text(AGENT, encoding="utf-8")
    consistency = _oxy(root, "test", "a.agent.yml")
    assert consistency.returncode == 0, consistency.stdout + consistency.stderr

    from oxyeval.store import NewExecution, open_store

    with open_store(str(root / ".oxy" / "oxyeval.db")) as store:
        for days in (3, 2):
            day = datetime.now(timezone.utc) - timedelta(days=days)
            store.executions.record(
                NewExecution(
                    test_case_id=CASE,
                    status="passed",
                    prompt_version=1,
                    actual_output="positive",
                    score=1.0,
                    exact_match=True,
                    created_at=day.strftime("%Y-%m-%dT10:00:00.000Z"),
                )
            )
    return root


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _serving(project: Path, *options: str) -> Iterator[str]:
    """`oxy serve` on a free port of 127.0.0.1 until the block ends; yields its URL."""
    port = _free_port()
    log = project / f"serve-{port}.log"
    with log.open("w") as out:
        command = ["serve", "--project", str(project), "--port", str(port), *options]
        proc = subprocess.Popen(
            [sys.executable, "-m", "oxyeval", *command],
            cwd=project,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={k: v for k, v in os.environ.items() if k not in ("OXY_DB", "OXY_SERVE_TOKEN")},
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                text = log.read_text()
                if "No such command" in text:
                    _unavailable(f"`oxy serve` is not available: {text.strip()[-300:]}")
                pytest.fail(f"oxy serve exited {proc.returncode}: {text[-2000:]}")
            try:
                with urllib.request.urlopen(url + "/healthz", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except urllib.error.HTTPError:  # it answers (a token server refuses, 401)
                break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"oxy serve did not answer in 30 s: {log.read_text()[-2000:]}")
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:  # an open event stream holds uvicorn's graceful shutdown (up to 30 s)
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def server(project: Path) -> Iterator[str]:
    with _serving(project) as url:
        yield url


def gql(server: str, query: str, **variables: Any) -> dict[str, Any]:
    """The API's own answer, to hold the page's numbers against."""
    body = json.dumps({"query": query, "variables": variables}).encode()
    request = urllib.request.Request(
        server + "/graphql", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as resp:
        answer = json.loads(resp.read())
    assert not answer.get("errors"), answer["errors"]
    return answer["data"]


@pytest.fixture(scope="module")
def browser(server: str) -> Iterator[Any]:
    """Needs the server so it is closed first: its open event stream would hold the
    server's graceful shutdown."""
    if not (os.path.exists(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        _unavailable(f"no chromium at {CHROMIUM} (apt-get install chromium)")
    if not shutil.which(CHROMEDRIVER):
        _unavailable(f"no chromedriver at {CHROMEDRIVER} (apt-get install chromium-driver)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _unavailable("selenium is not installed (pip install -e '.[dev]')")
    os.environ["SE_OFFLINE"] = "true"  # selenium-manager must never download anything
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    options.add_argument("--window-size=1400,1000")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def _css(driver: Any, selector: str) -> list[Any]:
    return driver.find_elements("css selector", selector)


def wait_for(driver: Any, selector: str, timeout: float = 15) -> list[Any]:
    """The page's elements once it rendered; an error box on the page fails with its text."""
    deadline = time.monotonic() + timeout
    while True:
        busy = driver.execute_script("return document.getElementById('view').ariaBusy")
        if not busy:
            errors = _css(driver, ".error-box")
            if errors:
                pytest.fail(f"the page shows an error: {errors[0].text}")
            found = _css(driver, selector)
            if found:
                return found
        if time.monotonic() > deadline:
            pytest.fail(f"{selector} did not appear on {driver.current_url}")
        time.sleep(0.05)


def go(driver: Any, server: str, hash_: str, selector: str) -> list[Any]:
    driver.get(f"{server}/{hash_}")
    return wait_for(driver, selector)


def _severe_logs(driver: Any) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def test_cases_page_then_a_case_with_its_charts_and_numbers(browser: Any, server: str) -> None:
    api = gql(server, "{ testCases { id name passRate } }")["testCases"]
    rows = go(browser, server, "", "tr[data-case]")
    assert sorted(r.get_attribute("data-case") for r in rows) == sorted(c["id"] for c in api)

    browser.find_element("css selector", 'tr[data-case="sentiment::positive"] a').click()
    wait_for(browser, "#chart-pass-rate svg")
    stats = gql(
        server,
        "query($id: ID!) { testCaseStats(testCaseId: $id) "
        "{ totalRuns passRate avgScore trendData { date passRate avgScore } } }",
        id=CASE,
    )["testCaseStats"]
    days = [p for p in stats["trendData"] if p["passRate"] is not None]
    assert len(days) == 3  # two backdated days and today
    assert len(_css(browser, "#chart-pass-rate circle.pt")) == len(days)
    assert len(_css(browser, "#chart-avg-score circle.pt")) == len(
        [p for p in stats["trendData"] if p["avgScore"] is not None]
    )
    tooltips = [t.get_attribute("textContent") for t in _css(browser, "#chart-pass-rate title")]
    assert any(days[0]["date"] in t for t in tooltips)
    assert _css(browser, "#chart-pass-rate path.series")  # the line joining the points
    shown = browser.find_element("css selector", '[data-card="pass-rate"] .card-value').text
    assert shown == f"{stats['passRate']:.1f}%"
    runs = browser.find_element("css selector", '[data-card="total-runs"] .card-value').text
    assert runs == str(stats["totalRuns"])
    assert _css(browser, "tr.regression")  # the second run's execution, highlighted


def test_a_hostile_output_is_shown_as_text(browser: Any, server: str) -> None:
    go(browser, server, "#/case/sentiment%3A%3Apositive", "tr.regression")
    cells = [c.text for c in _css(browser, "tr.regression .diff-cell")]
    assert any(HOSTILE in text for text in cells), cells
    assert _css(browser, "tr.regression .diff-cell ins")  # the diff's inserted text
    assert _css(browser, "#view img") == []
    assert browser.execute_script("return document.body.dataset.pwned") is None


def test_ab_page_draws_a_bar_per_branch_and_names_the_winner(browser: Any, server: str) -> None:
    go(browser, server, "#/case/sentiment%3A%3Apositive", "#ab-link")
    browser.find_element("css selector", "#ab-link").click()
    bars = wait_for(browser, "#ab-charts rect.bar")
    data = gql(
        server,
        "query($id: ID!, $s: String) { testBranches(testCaseId: $id) { name isControl } "
        'runs(kind: "ab", subject: $s, limit: 1) { id } }',
        id=CASE,
        s=CASE,
    )
    branches = data["testBranches"]
    assert len(branches) == 2
    assert len(bars) == 3 * len(branches)  # quality, latency and cost
    # the winner is the server's ranking of the latest run (the one `oxy ab run` uses)
    ranked = gql(
        server,
        "query($id: ID!, $c: String) { abResult(testCaseId: $id, winnerCriteria: $c) "
        "{ runId criteria winner { branchName } } }",
        id=CASE,
        c=None,
    )["abResult"]
    assert ranked["runId"] == data["runs"][0]["id"]
    winner = browser.find_element("css selector", '[data-card="winner"] .card-value').text
    # The API's winner is its specification's (the branch ranked first); "none" only
    # when no branch ranked.
    assert winner == (ranked["winner"]["branchName"] if ranked["winner"] else "none")
    # what is known is named, what is not says so (the mock models have no price)
    sub = browser.find_element("css selector", '[data-card="winner"]').text
    if ranked["winner"]:
        assert "quality 1.00 · latency " in sub and "cost unknown (no price" in sub, sub
    assert "— —" not in sub
    control = next(b["name"] for b in branches if b["isControl"])
    # another criterion re-ranks the same run without a model call
    fastest = gql(
        server,
        "query($id: ID!, $c: String) { abResult(testCaseId: $id, winnerCriteria: $c) "
        "{ criteria winner { branchName } } }",
        id=CASE,
        c="fastest",
    )["abResult"]
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element("css selector", "#criteria")).select_by_value("fastest")
    deadline = time.monotonic() + 15
    card = "return [...document.querySelectorAll('[data-card=winner]')].map(e => e.textContent)"
    while "fastest" not in browser.current_url or not any(
        "fastest" in t.lower() for t in browser.execute_script(card)
    ):
        assert time.monotonic() < deadline, browser.current_url
        time.sleep(0.05)
    shown = wait_for(browser, '[data-card="winner"] .card-value')[0].text
    assert shown == (fastest["winner"]["branchName"] if fastest["winner"] else "none")
    assert any(f"{control} (control)" == t.text for t in _css(browser, ".bar-label"))


def test_runs_page_picks_two_runs_and_the_comparison_shows_the_regression(
    browser: Any, server: str
) -> None:
    runs = gql(server, '{ runs(kind: "cases") { id startedAt } }')["runs"]
    assert len(runs) == 2
    head, base = runs  # newest first
    go(browser, server, "#/runs", "input[data-run]")
    button = browser.find_element("css selector", "#compare-button")
    assert not button.is_enabled()
    for run in (head, base):
        browser.find_element("css selector", f'input[data-run="{run["id"]}"]').click()
    assert button.is_enabled()
    button.click()
    wait_for(browser, '[data-card="regressed"]')
    assert browser.current_url.endswith(f"#/compare/{base['id']}/{head['id']}")
    api = gql(
        server,
        "query($a: ID!, $b: ID!) { compareRuns(baseRunId: $a, headRunId: $b) "
        "{ regressed fixed changes { key change } } }",
        a=base["id"],
        b=head["id"],
    )["compareRuns"]
    assert api["regressed"] >= 1
    shown = browser.find_element("css selector", '[data-card="regressed"] .card-value').text
    assert shown == str(api["regressed"])
    rows = _css(browser, 'tr[data-change="regressed"]')
    keys = [c["key"] for c in api["changes"] if c["change"] == "regressed"]
    assert len(rows) == len(keys)
    assert rows[0].find_element("css selector", "td").text in keys
    assert any(HOSTILE in r.text for r in rows)  # the outputs, diffed, as text
    assert _css(browser, "#view img") == []


def test_runs_page_shows_every_kinds_counts_as_the_api_gives_them(
    browser: Any, server: str
) -> None:
    runs = gql(server, "{ runs(limit: 50) { id kind passed failed errors averageScore } }")["runs"]
    assert {r["kind"] for r in runs} == {"cases", "ab", "consistency"}
    ab = next(r for r in runs if r["kind"] == "ab")
    assert ab["passed"] + ab["failed"] + ab["errors"] == 2  # one per branch, each counted
    go(browser, server, "#/runs", "input[data-run]")
    for run in runs:
        box = browser.find_element("css selector", f'input[data-run="{run["id"]}"]')
        row = box.find_element("xpath", "./ancestor::tr")
        cells = {
            c.get_attribute("data-count"): c.text
            for c in row.find_elements("css selector", "td[data-count]")
        }
        score = run["averageScore"]
        if run["kind"] == "consistency":  # an accuracy, no pass/fail of its own
            assert (run["passed"], run["failed"], score) == (0, 0, 1.0)
            assert cells == {
                "passed-failed": "no pass/fail",
                "errors": "0",
                "averageScore": "100.0% accuracy",
            }
            continue
        shown = {
            "passed": str(run["passed"]),
            "failed": str(run["failed"]),
            "errors": str(run["errors"]),
            "averageScore": "—" if score is None else f"{score:.2f}",
        }
        assert cells == shown, run["kind"]


def test_every_page_renders_without_script_errors(browser: Any, server: str) -> None:
    browser.get_log("browser")  # drop what earlier tests left
    for hash_, selector in [
        ("#/consistency", ".empty, section.panel"),
        ("#/passfail", ".empty, section.panel"),
        ("#/sdk", ".empty, section.panel"),
        ("#/live", "#stream-state"),
        ("#/cases?prompt=sentiment", "tr[data-case]"),
    ]:
        go(browser, server, hash_, selector)
    assert _severe_logs(browser) == []


def test_with_a_token_the_page_sends_it_and_drops_it_from_the_address(
    browser: Any, project: Path
) -> None:
    token = "t0ken-for-the-dashboard-test"
    with _serving(project, "--token", token) as url:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url + "/graphql?query=%7BserverInfo%7Bversion%7D%7D", timeout=5)
        assert refused.value.code == 401  # so the rows below came with the token
        browser.get(f"{url}/?token={token}#/cases")
        rows = wait_for(browser, "tr[data-case]")
        assert len(rows) == 2
        assert token not in browser.current_url
        browser.get(f"{url}/?token={token}#/live")
        wait_for(browser, "#stream-state.ok")  # the event stream, read with the header too
        browser.get("about:blank")  # closes the stream, which would hold the shutdown


def test_an_empty_history_gets_an_empty_state_on_every_page(
    browser: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tmp_path_factory.mktemp("empty")
    (root / "config.yml").write_text(CONFIG, encoding="utf-8")
    pages = ["#/cases", "#/consistency", "#/passfail", "#/sdk", "#/runs", "#/live"]
    with _serving(root) as url:
        for hash_ in pages:
            go(browser, url, hash_, ".empty")
            assert browser.find_element("css selector", ".empty").text.startswith("No"), hash_
        assert "oxy cases run" in browser.find_element("css selector", "#view").text
        browser.get("about:blank")  # closes the event stream, which would hold the shutdown


def test_assets_are_small_and_need_no_network() -> None:
    folder = Path(__file__).resolve().parents[2] / "oxyeval" / "server" / "dashboard"
    files = {p.name: p.read_text("utf-8") for p in folder.iterdir() if p.is_file()}
    assert set(files) >= {"index.html", "app.js", "charts.js", "style.css"}
    assert sum(len(t.encode()) for t in files.values()) < 120_000
    for name, text in files.items():
        assert "http://" not in text.replace("http://www.w3.org/2000/svg", ""), name
        assert "https://" not in text, name
        assert ".innerHTML" not in text and "insertAdjacentHTML" not in text, name
    assert '<meta name="oxy-token" content="">' in files["index.html"]


def test_the_live_page_shows_a_run_started_through_the_api(browser: Any, server: str) -> None:
    # last in the file: it adds an A/B run the other tests' numbers do not expect
    go(browser, server, "#/live", "#stream-state")
    deadline = time.monotonic() + 15
    # the page redraws on every event: read its text in the page, not through held elements
    text_of = "return [...document.querySelectorAll(arguments[0])].map(e => e.textContent)"
    while not any("connected" in t for t in browser.execute_script(text_of, "#stream-state")):
        assert time.monotonic() < deadline, "the event stream did not connect"
        time.sleep(0.05)
    branches = gql(server, "query($id: ID!) { testBranches(testCaseId: $id) { id } }", id=CASE)
    ids = [b["id"] for b in branches["testBranches"]]
    ran = gql(
        server,
        "mutation($i: RunABTestInput!) { runABTest(input: $i) { runId winner { branchName } } }",
        i={"testCaseId": CASE, "branchIds": ids, "iterations": 2},
    )["runABTest"]
    assert ran["runId"]
    import re

    while True:  # the stream's progress, drawn from the events as they came, to the end
        shown = browser.execute_script(text_of, "[data-stream]")
        done = [re.search(r"(\d+)/(\d+) steps", t) for t in shown if "runABTest" in t]
        finished = any("completed" in t and CASE in t for t in shown)  # run_finished came
        if finished and any(
            m and m.group(1) == m.group(2) and int(m.group(1)) >= 2 * len(ids) for m in done
        ):
            break
        assert time.monotonic() < deadline + 15, shown
        time.sleep(0.05)
