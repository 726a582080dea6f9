"""The offline ``mock`` vendor: scripted answers, so examples and CI run with no key.

It is a documented feature (like Inspect's mockllm), not a test double: it goes
through the same Model wrapper (concurrency, timing) as every real vendor.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import re
from typing import TYPE_CHECKING, ClassVar

from ..errors import ProviderError
from ._base import ChatMessage, Completion, GenerateParams, ModelAPI, ModelSpec, Usage

if TYPE_CHECKING:
    import httpx

__all__ = ["MockAPI"]


class MockAPI(ModelAPI):
    vendor: ClassVar[str] = "mock"
    requires_key: ClassVar[bool] = False

    def __init__(self, spec: ModelSpec, client: httpx.AsyncClient | None = None) -> None:
        super().__init__(spec, client)
        opts = spec.options
        self.outputs: list[str] = list(opts.get("outputs") or [])
        self.rules = [
            (re.compile(rule["match"]), rule.get("output"), rule.get("error"))
            for rule in opts.get("rules") or []
        ]
        self.random = opts.get("sample") == "random"
        self.rng = random.Random(opts.get("seed", 0))
        self.latency = float(opts.get("latency_ms", 0)) / 1000.0
        # One cycle per question: a test that asks the same thing n times sees outputs
        # 1, 2, 3... in order, whatever other tests run on this model at the same time.
        self._cycles: dict[str, itertools.cycle[str]] = {}

    def _pick(self, prompt: str) -> str:
        for regex, output, error in self.rules:
            if regex.search(prompt):
                if error is not None:
                    raise ProviderError(
                        f"model '{self.spec.name}' (mock): simulated failure: {error}",
                        model=self.spec.name,
                    )
                return output or ""
        if not self.outputs:
            raise ProviderError(
                f"model '{self.spec.name}' (mock): no rule matched the message and no outputs "
                "are set; add a catch-all rule (match: '.*') or outputs:",
                model=self.spec.name,
            )
        if self.random:
            return self.rng.choice(self.outputs)
        cycle = self._cycles.get(prompt)
        if cycle is None:
            cycle = self._cycles[prompt] = itertools.cycle(self.outputs)
        return next(cycle)

    async def generate(self, messages: list[ChatMessage], params: GenerateParams) -> Completion:
        prompt = next((m.content for m in reversed(messages) if m.role == "user"), "")
        text = self._pick(prompt)
        if self.latency:
            await asyncio.sleep(self.latency)
        words_in = sum(len(m.content.split()) for m in messages)
        return Completion(
            text=text,
            usage=Usage(input_tokens=words_in, output_tokens=len(text.split())),
            finish_reason="stop",
        )
