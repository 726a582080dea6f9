"""What the sandbox tests share: render a template string, and expect a limit's refusal."""

from __future__ import annotations

import time

import pytest

from oxyeval.errors import LoadError
from oxyeval.project.templates import TemplateRef, render

#: A refusal comes before the work, not after it: seconds, never the minutes the work
#: would take (a loose bound, so a loaded CI machine does not make it flaky).
REFUSED_WITHIN_S = 5


def render_source(source: str, **context: object) -> str:
    return render(TemplateRef(source), context)


def limit_error(source: str, **context: object) -> str:
    """The message of the sandbox limit ``source`` breaks (the test fails if none)."""
    started = time.monotonic()
    with pytest.raises(LoadError) as info:
        render_source(source, **context)
    assert time.monotonic() - started < REFUSED_WITHIN_S
    text = str(info.value)
    assert "template exceeds a sandbox limit" in text, text
    return text
