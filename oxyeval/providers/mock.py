"""The offline ``mock`` vendor: scripted answers, so examples and CI run with no key.

It is a documented feature (like Inspect's mockllm), not a test double: it goes
through the same Model wrapper (concurrency, timing) as every real vendor.

Options (the ``models:`` entry of config.yml):

* ``outputs``: answers given in turn, one cycle per question (the last user
  message), or drawn at random with ``sample: random`` (and ``seed``);
* ``rules``: tried in order before ``outputs``; the first whose ``match`` regex
  (Python syntax, run by RE2 in linear time: see :mod:`oxyeval.patterns`) is found in
  the last message that is not the model's own (the last user
  message, or the last tool result when the model has just called a tool) answers:

  - ``output: text`` answers with that text;
  - ``outputs: [text, ...]`` answers with them in turn, one cycle per question,
    like the model-level ``outputs``;
  - in ``output``/``outputs``, ``\\g<name>`` (or ``\\g<1>``) is replaced by what that
    group of ``match`` captured, as in Python's ``re.sub``: a scripted answer can
    quote the month or the figure it was asked about (write such rules in single
    quotes in YAML, where a backslash is an ordinary character);
  - ``error: reason`` fails the call (a non-retryable ProviderError);
  - ``tool_call: {name: tool, arguments: {...}}`` asks for that tool, the way a
    real model does (``Completion.tool_calls``, finish reason ``tool_calls``),
    with ``output`` as the text that comes with the call, if set. Such a rule only
    applies when the request offers a tool of that name; otherwise the next rule
    is tried. A rule like ``{match: '^\\[\\{', output: ...}`` then reacts to the
    tool's result;
* ``latency_ms``: simulated latency per call; a streamed call
  (:meth:`~oxyeval.providers.Model.stream`) waits that long before its first piece,
  then gives the answer word by word;
* ``token_ms``: time per piece after the first (default 0): a call takes
  ``latency_ms`` + ``token_ms`` x (pieces - 1), streamed or not, so an offline A/B
  example shows time to first token and tokens per second as a real model does.

Structured output (``GenerateParams.response_schema``) is not enforced: the scripted
text is the answer, and when it is a JSON object it is also ``Completion.structured``,
so a rule can play a judge answering in either form.

Embeddings (:class:`MockEmbeddingAPI`): offline and deterministic, a hashed bag of
words of ``dims`` dimensions (default 256).
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import itertools
import math
import random
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import ConfigError, ProviderError
from ..patterns import Pattern, PatternError, compile_pattern
from ._base import (
    ChatMessage,
    Completion,
    Deltas,
    EmbeddingAPI,
    EmbeddingResult,
    GenerateParams,
    ModelAPI,
    ModelSpec,
    ToolCall,
    Usage,
    json_object,
)

if TYPE_CHECKING:
    import httpx

__all__ = ["MockAPI", "MockEmbeddingAPI"]


@dataclass(frozen=True)
class _Rule:
    regex: Pattern  # RE2: a rule's match runs in linear time (see oxyeval.patterns)
    output: str | None = None
    error: str | None = None
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    outputs: tuple[str, ...] = ()


_GROUP_REF = re.compile(r"\\g<(\w+)>")


def _expand(text: str, match: Any) -> str:
    """``\\g<name>`` / ``\\g<1>`` replaced by the group's text ('' when it did not take part)."""

    def group(ref: re.Match[str]) -> str:
        key = ref.group(1)
        return match.group(int(key) if key.isdigit() else key) or ""

    return _GROUP_REF.sub(group, text)


@dataclass(frozen=True)
class _Answer:
    text: str
    call: tuple[str, dict[str, Any]] | None = None  # (tool name, arguments)


class MockAPI(ModelAPI):
    vendor: ClassVar[str] = "mock"
    requires_key: ClassVar[bool] = False
    uses_http: ClassVar[bool] = False
    structured_output: ClassVar[bool] = True
    vision: ClassVar[bool] = True  # scripted on the text; the images are accepted unread

    def __init__(self, spec: ModelSpec, client: httpx.AsyncClient | None = None) -> None:
        super().__init__(spec, client)
        opts = spec.options
        self.outputs: list[str] = list(opts.get("outputs") or [])
        self.rules = [self._rule(rule) for rule in opts.get("rules") or []]
        self.random = opts.get("sample") == "random"
        self.rng = random.Random(opts.get("seed", 0))
        self.latency = float(opts.get("latency_ms", 0)) / 1000.0
        self.per_token = float(opts.get("token_ms", 0)) / 1000.0
        # One cycle per question: a test that asks the same thing n times sees outputs
        # 1, 2, 3... in order, whatever other tests run on this model at the same time.
        self._cycles: dict[str, itertools.cycle[str]] = {}

    def _rule(self, rule: dict[str, Any]) -> _Rule:
        try:
            regex = compile_pattern(rule["match"])
        except PatternError as exc:  # config.yml's check says where; a direct caller gets this
            raise ConfigError(
                f"model '{self.spec.name}' (mock): invalid regular expression "
                f"{rule['match']!r}: {exc}"
            ) from None
        outputs = tuple(str(o) for o in rule.get("outputs") or ())
        for text in (rule.get("output") or "", *outputs):
            for ref in _GROUP_REF.findall(text):
                known = int(ref) <= regex.groups if ref.isdigit() else ref in regex.groupindex
                if not known:
                    raise ConfigError(
                        f"model '{self.spec.name}' (mock): a rule's output refers to group "
                        f"\\g<{ref}>, which its match {rule['match']!r} does not define"
                    )
        tool_call = rule.get("tool_call")
        if tool_call is None:
            return _Rule(regex, rule.get("output"), rule.get("error"), outputs=outputs)
        return _Rule(
            regex,
            rule.get("output"),
            rule.get("error"),
            str(tool_call["name"]),
            dict(tool_call.get("arguments") or {}),
            outputs,
        )

    def _pick(self, target: str, question: str, offered: set[str]) -> _Answer:
        skipped: list[str] = []
        for index, rule in enumerate(self.rules):
            match = rule.regex.search(target)
            if not match:
                continue
            if rule.error is not None:
                raise ProviderError(
                    f"model '{self.spec.name}' (mock): {rule.error}",
                    model=self.spec.name,
                )
            if rule.outputs:
                text = _expand(self._next(f"rule {index}\0{question}", rule.outputs), match)
            else:
                text = _expand(rule.output or "", match)
            if rule.tool is None:
                return _Answer(text)
            if rule.tool not in offered:
                skipped.append(rule.tool)
                continue
            # A copy per call: the agent loop may change the arguments it is handed.
            return _Answer(text, (rule.tool, copy.deepcopy(rule.arguments or {})))
        if not self.outputs:
            detail = ""
            if skipped:
                names = ", ".join(sorted(offered)) or "none"
                detail = (
                    f"; rules for tool(s) {', '.join(repr(s) for s in skipped)} matched, "
                    f"but the request offers only: {names}"
                )
            raise ProviderError(
                f"model '{self.spec.name}' (mock): no rule matched the message and no outputs "
                f"are set{detail}; add a catch-all rule (match: '.*') or outputs:",
                model=self.spec.name,
            )
        return _Answer(self._next(question, self.outputs))

    def _next(self, key: str, outputs: list[str] | tuple[str, ...]) -> str:
        """The next of ``outputs`` for this question (or a random one with sample: random)."""
        if self.random:
            return self.rng.choice(outputs)
        cycle = self._cycles.get(key)
        if cycle is None:
            cycle = self._cycles[key] = itertools.cycle(outputs)
        return next(cycle)

    async def generate(self, messages: list[ChatMessage], params: GenerateParams) -> Completion:
        completion = self._completion(messages, params)
        pieces = len(_PIECE.findall(completion.text))
        delay = self.latency + self.per_token * max(0, pieces - 1)
        if delay:
            await asyncio.sleep(delay)
        return completion

    async def stream(
        self, messages: list[ChatMessage], params: GenerateParams, deltas: Deltas
    ) -> Completion:
        """The scripted answer word by word, the first word after ``latency_ms``."""
        completion = self._completion(messages, params)
        if self.latency:
            await asyncio.sleep(self.latency)
        if completion.tool_calls:
            deltas.content()
        for i, piece in enumerate(_PIECE.findall(completion.text)):
            if i:  # let a consumer see each piece as it comes
                await asyncio.sleep(self.per_token)
            deltas.text(piece)
        return completion

    def _completion(self, messages: list[ChatMessage], params: GenerateParams) -> Completion:
        # Rules look at what the model is answering: the user, or a tool it called.
        target = next((m.content for m in reversed(messages) if m.role in ("user", "tool")), "")
        question = next((m.content for m in reversed(messages) if m.role == "user"), "")
        offered = {tool.name for tool in params.tools or ()}
        answer = self._pick(target, question, offered)
        calls: list[ToolCall] = []
        if answer.call is not None:
            name, arguments = answer.call
            # Numbered across the conversation, so every call in it has its own id.
            earlier = sum(len(m.tool_calls) for m in messages)
            calls.append(ToolCall(f"call_{earlier}_{name}", name, arguments))
        words_in = sum(len(m.content.split()) for m in messages)
        return Completion(
            text=answer.text,
            usage=Usage(input_tokens=words_in, output_tokens=len(answer.text.split())),
            finish_reason="tool_calls" if calls else "stop",
            tool_calls=calls,
            structured=json_object(answer.text) if params.response_schema is not None else None,
        )


_WORD = re.compile(r"\w+")
#: A streamed piece: a word with the space after it (or leading space alone).
_PIECE = re.compile(r"\s*\S+\s*|\s+")


class MockEmbeddingAPI(EmbeddingAPI):
    """Offline, deterministic embeddings: a hashed bag of words, L2-normalised.

    Identical texts get identical vectors and texts sharing words get a positive
    cosine (counts are never negative), so semantic-scoring examples and CI run
    with no key and no network. ``options.dims`` sets the size (default 256).
    """

    vendor: ClassVar[str] = "mock"
    requires_key: ClassVar[bool] = False
    uses_http: ClassVar[bool] = False

    def __init__(self, spec: ModelSpec, client: httpx.AsyncClient | None = None) -> None:
        super().__init__(spec, client)
        if self.dims is None:
            self.dims = 256

    def vector(self, text: str) -> list[float]:
        dims = self.dims or 256
        counts = [0.0] * dims
        # A text with no word ("?!") is its own one feature: a zero vector has no direction.
        for word in _WORD.findall(text.lower()) or [text.strip()]:
            # blake2b, not hash(): the same word must land in the same slot in every process.
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            counts[int.from_bytes(digest, "big") % dims] += 1.0
        norm = math.sqrt(sum(c * c for c in counts))
        return [c / norm for c in counts] if norm else counts

    async def embed(self, texts: list[str]) -> EmbeddingResult:
        tokens = sum(len(_WORD.findall(t)) for t in texts)
        return EmbeddingResult([self.vector(t) for t in texts], tokens)
