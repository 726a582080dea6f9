"""A judge for the DeepEval-style tests: a fake OpenAI server on 127.0.0.1 whose replies
are chosen by what the prompt asks (the first matching substring of ``script``), and
an environment pointing at it the way a DeepEval user's shell points at OpenAI."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pytest

from tests.fakes import FakeServer, RecordedRequest, fake_openai, last_user_text

__all__ = ["KEY", "by_prompt", "env_judge", "prompt_of"]

#: The API key the tests' environment holds; the server refuses any other.
KEY = "sk-test-judge"


def prompt_of(request: RecordedRequest) -> str:
    """The text the judge was asked (text parts joined when the content is a list)."""
    return last_user_text(request.body)


def by_prompt(
    script: Mapping[str, Any] | None = None, default: Any = None
) -> Callable[[RecordedRequest], str]:
    """Answer with the value of the first ``script`` key found in the prompt (a dict is
    sent as JSON text; a list is answered in turn, its last item repeating), else
    ``default``."""
    queues = {k: list(v) if isinstance(v, list) else [v] for k, v in (script or {}).items()}
    lock = threading.Lock()

    def answer(request: RecordedRequest) -> str:
        prompt = prompt_of(request)
        value = default
        with lock:
            for key, queue in queues.items():
                if key in prompt:
                    value = queue.pop(0) if len(queue) > 1 else queue[0]
                    break
        return value if isinstance(value, str) else json.dumps(value)

    return answer


@contextmanager
def env_judge(
    monkeypatch: pytest.MonkeyPatch,
    answer: Callable[[RecordedRequest], Any],
    **kwargs: Any,
) -> Iterator[FakeServer]:
    """A fake OpenAI server, with ``OPENAI_API_KEY``/``OPENAI_BASE_URL`` set to it and
    ``OPENAI_MODEL_NAME`` unset, as a DeepEval user's environment is."""
    with fake_openai(answer, api_key=KEY, **kwargs) as server:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.delenv("OPENAI_MODEL_NAME", raising=False)
        yield server
