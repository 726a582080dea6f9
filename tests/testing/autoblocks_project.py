"""A small project written the ways Autoblocks' Python testing examples are written, with
their imports (``from autoblocks.testing.X import Y``), for the tests to turn into an
oxyeval project by changing only that import prefix.

The forms it covers, one suite each: a package whose ``run()`` calls each suite's
``run()`` (sync tasks calling an OpenAI-compatible API, an async judge evaluator that
answers 0 or 1 and averages without a threshold, a generic abstract base evaluator with
a class threshold, ``Threshold(gte=1)`` checks, ``max_concurrency`` and
``max_test_case_concurrency``); an async task whose output is a dataclass, scored by an
async evaluator with a class threshold; an evaluator of both test cases and tracer
events (``BaseEvaluator``, ``TracerEvent``); and retrieval-then-generation suites whose
judges answer JSON (``{"score", "reason"}``) with the reason in the metadata. Every LLM
call goes to ``OPENAI_BASE_URL``, which the tests point at a fake server on 127.0.0.1.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["FILES", "IMPORT_PREFIX", "OXYEVAL_PREFIX", "answer", "write_project"]

IMPORT_PREFIX = "from autoblocks.testing."
OXYEVAL_PREFIX = "from oxyeval.testing.autoblocks."

_LLM = """
import os

import httpx


def _request(system: str, user: str, json_mode: bool) -> dict:
    body = {
        "model": "gpt-4o-mini",
        "temperature": 0.0,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
    }
    if json_mode:
        body["response_format"] = {"type": "json_object"}
    return body


def _url() -> str:
    return os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions"


def _headers() -> dict:
    return {"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]}


def chat(system: str, user: str, json_mode: bool = False) -> str:
    reply = httpx.post(_url(), json=_request(system, user, json_mode), headers=_headers())
    reply.raise_for_status()
    return reply.json()["choices"][0]["message"]["content"].strip()


async def achat(system: str, user: str, json_mode: bool = False) -> str:
    async with httpx.AsyncClient() as client:
        reply = await client.post(
            _url(), json=_request(system, user, json_mode), headers=_headers()
        )
    reply.raise_for_status()
    return reply.json()["choices"][0]["message"]["content"].strip()
"""

_SHARED_HAS_KEYWORDS = '''
import abc
from typing import Generic, List, Optional, TypeVar

from autoblocks.testing.models import BaseTestCase
from autoblocks.testing.models import BaseTestEvaluator
from autoblocks.testing.models import Evaluation
from autoblocks.testing.models import Threshold

CaseT = TypeVar("CaseT", bound=BaseTestCase)
OutT = TypeVar("OutT")


class BaseHasKeywords(Generic[CaseT, OutT], BaseTestEvaluator, abc.ABC):
    """Subclasses say which keywords a test case expects; override threshold to change it."""

    id = "has-keywords"
    threshold: Optional[Threshold] = Threshold(gte=1)

    @abc.abstractmethod
    def keywords(self, test_case: CaseT) -> List[str]: ...

    def as_text(self, output: OutT) -> str:
        return str(output)

    def evaluate_test_case(self, test_case: CaseT, output: OutT) -> Evaluation:
        text = self.as_text(output)
        if all(word in text for word in self.keywords(test_case)):
            return Evaluation(score=1, threshold=self.threshold)
        return Evaluation(score=0, threshold=self.threshold)
'''

_QUIZ_TASK = """
import dataclasses
import json
from typing import List

from my_project.llm import chat

SYSTEM = "QUIZ: turn the notes into question and answer cards, as JSON {cards: [{q, a}]}."


@dataclasses.dataclass
class Card:
    q: str
    a: str


def make_cards(notes: str) -> List[Card]:
    parsed = json.loads(chat(SYSTEM, notes, json_mode=True))
    return [Card(q=c["q"], a=c["a"]) for c in parsed["cards"]]
"""

_QUIZ_SUITE = '''
import asyncio
import dataclasses
from typing import List

from autoblocks.testing.models import BaseTestCase
from autoblocks.testing.models import BaseTestEvaluator
from autoblocks.testing.models import Evaluation
from autoblocks.testing.run import run_test_suite
from autoblocks.testing.util import md5

from my_project.llm import achat
from my_project.tasks.quiz import Card, make_cards


@dataclasses.dataclass
class QuizCase(BaseTestCase):
    notes: str

    def hash(self) -> str:
        return md5(self.notes)


class Grounded(BaseTestEvaluator):
    """The share of cards whose answer the notes support (a judge answers 0 or 1)."""

    id = "grounded"
    max_concurrency = 2

    async def one(self, notes: str, card: Card) -> int:
        verdict = await achat("GROUNDED: answer 1 if the notes support the card, else 0.",
                              f"Notes: {notes}\\nQ: {card.q}\\nA: {card.a}")
        if verdict not in ("0", "1"):
            raise ValueError(f"Unexpected response: {verdict}")
        return int(verdict)

    async def evaluate_test_case(self, test_case: QuizCase, output: List[Card]) -> Evaluation:
        scores = await asyncio.gather(*[self.one(test_case.notes, c) for c in output])
        if not scores:
            raise RuntimeError("No scores were returned")
        return Evaluation(score=sum(scores) / len(scores))


def run() -> None:
    run_test_suite(
        id="quiz-cards",
        test_cases=[
            QuizCase(notes="Cells: the nucleus holds the DNA. Mitochondria make energy."),
            QuizCase(notes="Rivers: the Nile flows north."),
        ],
        evaluators=[Grounded()],
        fn=lambda case: make_cards(case.notes),
        max_test_case_concurrency=5,
    )
'''

_OUTLINE_SUITE = """
import dataclasses
from typing import List

from autoblocks.testing.models import BaseTestCase
from autoblocks.testing.models import BaseTestEvaluator
from autoblocks.testing.models import Evaluation
from autoblocks.testing.models import Threshold
from autoblocks.testing.run import run_test_suite
from autoblocks.testing.util import md5

from my_project.evaluators.has_keywords import BaseHasKeywords
from my_project.llm import chat


@dataclasses.dataclass
class OutlineCase(BaseTestCase):
    topic: str
    keywords: List[str]

    def hash(self) -> str:
        return md5(self.topic)


class Bullets(BaseTestEvaluator):
    id = "bullets"

    def evaluate_test_case(self, test_case: OutlineCase, output: str) -> Evaluation:
        ok = all(not line.strip() or line.startswith(("* ", "  - ")) for line in output.splitlines())
        return Evaluation(score=int(ok), threshold=Threshold(gte=1))


class Keywords(BaseHasKeywords[OutlineCase, str]):
    def keywords(self, test_case: OutlineCase) -> List[str]:
        return test_case.keywords


def run() -> None:
    run_test_suite(
        id="outline",
        test_cases=[
            OutlineCase(topic="Calculus", keywords=["Derivatives"]),
            OutlineCase(topic="Economics", keywords=["Markets", "Inflation"]),
        ],
        evaluators=[Bullets(), Keywords()],
        fn=lambda case: chat("OUTLINE: a bulleted outline of the topic.", case.topic),
        max_test_case_concurrency=5,
    )
"""

_MATH_SUITE = """
from dataclasses import dataclass

from autoblocks.testing.models import BaseTestCase
from autoblocks.testing.models import BaseTestEvaluator
from autoblocks.testing.models import Evaluation
from autoblocks.testing.models import Threshold
from autoblocks.testing.run import run_test_suite
from autoblocks.testing.util import md5

from my_project.llm import achat


@dataclass
class Solved:
    answer: str
    rationale: str


@dataclass
class MathCase(BaseTestCase):
    question: str
    answer: str

    def hash(self) -> str:
        return md5(self.question)


class Correct(BaseTestEvaluator):
    id = "correct"
    threshold = Threshold(gte=1)

    async def evaluate_test_case(self, test_case: MathCase, output: Solved) -> Evaluation:
        return Evaluation(score=1 if output.answer == test_case.answer else 0, threshold=self.threshold)


async def solve(case: MathCase) -> Solved:
    text = await achat("MATH: answer with the number, a bar, then why.", case.question)
    answer, _, why = text.partition("|")
    return Solved(answer=answer.strip(), rationale=why.strip())


def run() -> None:
    run_test_suite(
        id="math",
        test_cases=[MathCase(question="2 + 2", answer="4"), MathCase(question="3 * 3", answer="9")],
        evaluators=[Correct()],
        fn=solve,
    )
"""

_SAFETY_SUITE = """
from dataclasses import dataclass
from typing import Optional

from autoblocks.testing.models import BaseEvaluator
from autoblocks.testing.models import BaseTestCase
from autoblocks.testing.models import Evaluation
from autoblocks.testing.models import Threshold
from autoblocks.testing.models import TracerEvent
from autoblocks.testing.run import run_test_suite
from autoblocks.testing.util import md5

from my_project.llm import chat

BANNED = ("darn",)


@dataclass
class SafetyCase(BaseTestCase):
    question: str

    def hash(self) -> str:
        return md5(self.question)


class Clean(BaseEvaluator):
    id = "clean"
    threshold = Threshold(gte=1)

    def check(self, text: str) -> Evaluation:
        found = [w for w in BANNED if w in text.lower()]
        if found:
            return Evaluation(score=0, threshold=self.threshold, metadata=dict(error=f"found {found}"))
        return Evaluation(score=1, threshold=self.threshold)

    def evaluate_event(self, event: TracerEvent) -> Optional[Evaluation]:
        if event.message == "ai.response":
            return self.check(event.properties["text"])
        return None

    def evaluate_test_case(self, test_case: SafetyCase, output: str) -> Evaluation:
        return self.check(output)


def run() -> None:
    run_test_suite(
        id="safety",
        test_cases=[SafetyCase(question="How do I sign up?"), SafetyCase(question="Say darn")],
        evaluators=[Clean()],
        fn=lambda case: chat("SUPPORT: answer the customer.", case.question),
    )
"""

_RAG_SUITES = """
import json
from dataclasses import dataclass
from typing import List

from autoblocks.testing.models import BaseTestCase
from autoblocks.testing.models import BaseTestEvaluator
from autoblocks.testing.models import Evaluation
from autoblocks.testing.models import Threshold
from autoblocks.testing.run import run_test_suite
from autoblocks.testing.util import md5

from my_project.llm import achat

RECORDS = {
    "r1": "Patient has asthma and uses an inhaler.",
    "r2": "Patient quit smoking two months ago.",
    "r3": "Patient enjoys gardening.",
}


@dataclass
class Record:
    id: str
    text: str


@dataclass
class PlanCase(BaseTestCase):
    plan: str

    def hash(self) -> str:
        return md5(self.plan)


async def search(case: PlanCase) -> List[Record]:
    words = set(case.plan.lower().split())
    return [Record(k, v) for k, v in RECORDS.items() if words & set(v.lower().rstrip(".").split())]


async def judge(kind: str, user: str) -> dict:
    return json.loads(await achat(f"{kind}: reply as JSON with score and reason.", user, json_mode=True))


class Relevant(BaseTestEvaluator):
    id = "relevant"
    max_concurrency = 5
    threshold = Threshold(gte=0.8)

    async def evaluate_test_case(self, test_case: PlanCase, output: List[Record]) -> Evaluation:
        scores = [(await judge("RELEVANT", f"Plan: {test_case.plan}\\nRecord: {r.text}"))["score"] for r in output]
        return Evaluation(score=sum(scores) / len(scores) if scores else 0, threshold=self.threshold)


class Faithful(BaseTestEvaluator):
    id = "faithful"
    max_concurrency = 5
    threshold = Threshold(gte=0.5)

    async def evaluate_test_case(self, test_case: PlanCase, output: str) -> Evaluation:
        found = await judge("FAITHFUL", f"Plan: {test_case.plan}\\nAnswer: {output}")
        return Evaluation(score=found["score"], threshold=self.threshold, metadata=dict(reason=found["reason"]))


async def generate(case: PlanCase) -> str:
    return await achat("GENERATE: write the updated plan.", case.plan)


CASES = [PlanCase(plan="Manage asthma with an inhaler"), PlanCase(plan="Stay off smoking")]


def run_retrieval() -> None:
    run_test_suite(id="retrieval", test_cases=CASES, evaluators=[Relevant()], fn=search)


def run_generation() -> None:
    run_test_suite(id="generation", test_cases=CASES, evaluators=[Faithful()], fn=generate)
"""

_RUN = """
from my_project.test_suites import math, outline, quiz, rag, safety


def run() -> None:
    # Each suite's run() blocks until its suite is done; no event loop of your own.
    quiz.run()
    outline.run()
    math.run()
    safety.run()
    rag.run_retrieval()
    rag.run_generation()
"""

#: The project's files, relative to its root, with Autoblocks' imports.
FILES = {
    "my_project/__init__.py": "",
    "my_project/llm.py": _LLM,
    "my_project/evaluators/__init__.py": "",
    "my_project/evaluators/has_keywords.py": _SHARED_HAS_KEYWORDS,
    "my_project/tasks/__init__.py": "",
    "my_project/tasks/quiz.py": _QUIZ_TASK,
    "my_project/test_suites/__init__.py": "",
    "my_project/test_suites/quiz.py": _QUIZ_SUITE,
    "my_project/test_suites/outline.py": _OUTLINE_SUITE,
    "my_project/test_suites/math.py": _MATH_SUITE,
    "my_project/test_suites/safety.py": _SAFETY_SUITE,
    "my_project/test_suites/rag.py": _RAG_SUITES,
    "my_project/run.py": _RUN,
}


def write_project(root: Path) -> int:
    """Write the project under ``root`` with only the import prefix changed; how many
    import lines were changed."""
    changed = 0
    for name, text in FILES.items():
        changed += text.count(IMPORT_PREFIX)
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace(IMPORT_PREFIX, OXYEVAL_PREFIX), encoding="utf-8")
    return changed


def answer(system: str, user: str) -> str:
    """The fake model's answer to each of the project's prompts: deterministic, and
    wrong where the tests expect a failure."""
    import json

    tag = system.split(":", 1)[0]
    if tag == "QUIZ":
        if "Nile" in user:
            cards = [{"q": "Which way does the Nile flow?", "a": "north"}]
        else:  # the second card is not in the notes
            cards = [
                {"q": "What holds the DNA?", "a": "the nucleus"},
                {"q": "Who discovered cells?", "a": "Hooke"},
            ]
        return json.dumps({"cards": cards})
    if tag == "GROUNDED":
        notes, card = user.split("\nQ: ", 1)
        answer_text = card.split("\nA: ", 1)[1]
        return "1" if answer_text.lower() in notes.lower() else "0"
    if tag == "OUTLINE":
        if user == "Calculus":
            return "* Limits\n  - Epsilon\n* Derivatives\n* Integrals"
        return "* Markets\nInflation is a topic"  # a line without a bullet
    if tag == "MATH":
        return {"2 + 2": "4 | two and two", "3 * 3": "6 | wrong"}.get(user, "0 | ?")
    if tag == "SUPPORT":
        return "Darn, that is hard." if "darn" in user else "Click Sign up."
    if tag == "RELEVANT":
        return json.dumps(
            {"score": 1 if "asthma" in user and "inhaler" in user else 0.9, "reason": "r"}
        )
    if tag == "FAITHFUL":
        faithful = "asthma" in user
        return json.dumps(
            {"score": 0.9 if faithful else 0.2, "reason": "made up" if not faithful else "ok"}
        )
    if tag == "GENERATE":
        return f"Plan: {user}."
    return "unexpected prompt"
