"""Rendering work is bounded: loop iterations in all, a deadline per
rendering, and a stop request (the CLI's first SIGINT/SIGTERM) ends a rendering in progress.

Each test keeps its limits small so that it finishes well within a second.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from oxyeval import _tasks
from oxyeval.errors import LoadError
from oxyeval.project import limits
from oxyeval.project.document import parse_yaml
from oxyeval.project.templates import TemplateRef, evaluate, render

# Four million iterations that each read loop.index: several seconds of work if nothing
# stops it, well inside the iteration limit, printing nothing.
SLOW = (
    "{% set l = range(2000) | list %}"
    "{% for i in l %}{% for j in l %}{% if loop.index < 0 %}x{% endif %}{% endfor %}{% endfor %}"
)


def _render(source: str, **context: object) -> str:
    return render(TemplateRef(source), context)


def _limit_error(source: str, **context: object) -> str:
    with pytest.raises(LoadError) as info:
        _render(source, **context)
    text = str(info.value)
    assert "template exceeds a sandbox limit" in text
    return text


@pytest.mark.parametrize(
    "source",
    [
        # the loop, where one range() of 100,000 is iterated 10**10 times
        "{% set r = range(100000) %}{% for i in r %}{% for j in r %}{% endfor %}{% endfor %}",
        "{% set r = range(100000) | list %}{% for i in r %}{% for j in r %}{% endfor %}{% endfor %}",
        # a loop's filter runs for every item, also those it skips
        "{% set r = range(100000) | list %}{% for i in r %}{% for j in r if false %}"
        "{% endfor %}{% endfor %}",
    ],
    ids=["one range", "a list", "a filtered loop"],
)
def test_ten_billion_empty_iterations_stop_at_the_iteration_limit(source: str) -> None:
    started = time.monotonic()
    text = _limit_error(source)
    assert f"more than {limits.MAX_TEMPLATE_ITERATIONS:,} loop iterations" in text
    assert time.monotonic() - started < 5  # 5,000,000 iterations counted in C: ~0.2 s


def test_iterations_add_up_across_loops_macros_and_recursive_loops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(limits, "MAX_TEMPLATE_ITERATIONS", 3_000)
    items = list(range(1_000))
    three = "{% for i in items %}{% endfor %}" * 3
    assert _render(three, items=items) == ""  # exactly at the limit
    assert "more than 3,000 loop iterations" in _limit_error(three * 2, items=items)
    macro = "{% macro m() %}{% for i in items %}{% endfor %}{% endmacro %}"
    assert "more than 3,000" in _limit_error(macro + "{{ m() }}" * 4, items=items)
    # recursive loops iterate what loop(...) is given: counted too
    tree = [{"c": [{"c": []}] * 999}] * 4
    recursive = "{% for n in tree recursive %}{{ loop(n.c) }}{% endfor %}"
    assert "more than 3,000" in _limit_error(recursive, tree=tree)


def test_loops_behave_as_before() -> None:
    source = (
        "{% for i in items %}{{ loop.index }}/{{ loop.length }}/{{ loop.revindex }}"
        "{{ '.' if loop.last }} {% endfor %}|"
        "{% for i in gen %}{{ loop.length }}{% endfor %}|"
        "{% for k, v in d | dictsort %}{{ k }}={{ v }},{% endfor %}|"
        "{% for i in items if i > 1 %}{{ i }}{% else %}none{% endfor %}|"
        "{% for i in [] %}x{% else %}empty{% endfor %}|"
        "{% for n in tree recursive %}{{ n.v }}({{ loop(n.c) }}){% endfor %}"
    )
    out = _render(
        source,
        items=[1, 2, 3],
        gen=(x for x in "ab"),
        d={"b": 2, "a": 1},
        tree=[{"v": 1, "c": [{"v": 2, "c": []}]}],
    )
    assert out == "1/3/3 2/3/2 3/3/1. |22|a=1,b=2,|23|empty|1(2())"


def test_a_rendering_past_its_deadline_is_an_error_at_its_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OXY_RENDER_TIMEOUT", "0.2")
    text = "a: 1\ntemplate: |\n  start\n  " + SLOW + "\n"
    doc, _ = parse_yaml(text, Path("w.workflow.yml"))
    started = time.monotonic()
    with pytest.raises(LoadError) as info:
        render(TemplateRef(doc.data["template"], doc, ("template",)), {})
    assert time.monotonic() - started < 5
    (d,) = info.value.diagnostics
    assert (d.file, d.line, d.key) == ("w.workflow.yml", 4, "template")
    assert "rendering took more than 0.2 s" in d.message
    assert "OXY_RENDER_TIMEOUT" in d.message


def test_the_deadline_also_stops_calls_without_loops(monkeypatch: pytest.MonkeyPatch) -> None:
    """A macro that calls itself twice per level: 131,071 calls, no loop at all."""
    monkeypatch.setenv("OXY_RENDER_TIMEOUT", "0.05")
    source = "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}"
    assert "rendering took more than 0.05 s" in _limit_error(source + "{{ f(16) }}")


def test_expressions_have_the_deadline_too(monkeypatch: pytest.MonkeyPatch) -> None:
    from jinja2.sandbox import SecurityError

    monkeypatch.setenv("OXY_RENDER_TIMEOUT", "0.05")
    assert evaluate("range(3) | list", {}) == [0, 1, 2]
    with pytest.raises(SecurityError, match=r"rendering took more than 0\.05 s"):
        evaluate("f(16)", {"f": _macro_via_template()})


def _macro_via_template() -> object:
    from oxyeval.project.templates import environment

    module = (
        environment()
        .from_string(
            "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}"
        )
        .module
    )
    return module.f  # type: ignore[attr-defined]


@pytest.mark.parametrize(("raw", "seconds"), [("2.5", 2.5), ("0", 30.0), ("-1", 30.0), ("x", 30.0)])
def test_the_deadline_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, raw: str, seconds: float
) -> None:
    monkeypatch.setenv("OXY_RENDER_TIMEOUT", raw)
    assert limits.render_timeout() == seconds
    monkeypatch.setenv("OXY_RENDER_TIMEOUT", "inf")
    assert limits.render_timeout() == limits.RENDER_TIMEOUT_S


def test_a_stop_request_ends_a_rendering_in_progress() -> None:
    """What the CLI's signal handler does: the rendering raises CancelledError, as an
    await would, within a batch of iterations."""
    timer = threading.Timer(0.2, _tasks.request_stop)
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(asyncio.CancelledError):
            _render(SLOW)
    finally:
        timer.cancel()
        _tasks.clear_stop()
    assert time.monotonic() - started < 5
    assert _render("{% for i in range(3) %}{{ i }}{% endfor %}") == "012"  # cleared


@pytest.mark.skipif(not hasattr(signal, "SIGTERM") or os.name == "nt", reason="POSIX signals")
def test_the_first_sigterm_interrupts_a_rendering_on_the_event_loop() -> None:
    """run_interruptible's handler sets the stop flag: the rendering blocking the event
    loop stops at once and the command sees Interrupted, not a hang until it ends."""
    from oxyeval.cli.interrupt import Interrupted, run_interruptible

    async def command() -> str:
        await asyncio.sleep(0)
        return _render(SLOW)

    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGTERM))
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(Interrupted) as info:
            run_interruptible(command())
    finally:
        timer.cancel()
    assert info.value.signal_name == "SIGTERM"
    assert time.monotonic() - started < 5
    assert not _tasks.stop_requested()  # the next command starts unstopped


def test_after_the_limit_no_loop_of_the_rendering_runs_silently_empty(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The ticker is spent once it refused: a later loop (had anything caught the error)
    raises the same error rather than iterating nothing."""
    from oxyeval.project.render_budget import TemplateLimitError, budget

    monkeypatch.setattr(limits, "MAX_TEMPLATE_ITERATIONS", 10)
    with budget() as spent:
        with pytest.raises(TemplateLimitError):
            list(iter(_counted(spent, range(11))))
        with pytest.raises(TemplateLimitError, match="more than 10 loop iterations"):
            _counted(spent, range(1))


def _counted(spent: object, items: object) -> object:
    from oxyeval.project.render_budget import Budget, Counted

    assert isinstance(spent, Budget)
    return Counted(items, spent.ticker)
