"""``oxy init``'s starter project: files that run offline from the first command.

The models are the built-in ``mock`` vendor, so ``oxy validate``, ``oxy test`` and
``oxy cases run`` pass with no key and no network; a real model sits commented out in
config.yml with the two lines that change to use it. Kept as strings here rather than
package data: they are small, and a test reads them like any other module.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "GITIGNORE_LINE",
    "SCAFFOLD",
    "ScaffoldConflict",
    "ignore_history",
    "next_steps",
    "write_scaffold",
]

CONFIG = """\
# An oxyeval (and oxy) project: the models its agents, prompts and judges use.
# The first model is the default for agents; defaults.judge_model names the judge.
#
# The models below are offline mocks (vendor: mock), so everything here runs with no
# API key and no network. To test a real model, uncomment one at the end, export its
# key, and point `model:` (agents, prompts) or `model_ref:` (judges) at its name.
models:
  - name: assistant
    vendor: mock
    latency_ms: 20
    outputs:                      # answered in turn: three wordings of the same fact
      - "Our support line is open 9am to 5pm, Monday to Friday."
      - "Support is available weekdays from 9 to 5."
      - "You can reach support Monday through Friday, 9am-5pm."
  - name: judge
    vendor: mock
    latency_ms: 20
    rules:                        # the first regular expression that matches answers
      # The SDK's judged metrics (oxyeval.testing) ask for JSON: a score...
      - match: '"score": <0-10>'
        output: '{"reason": "The mock judge finds the criteria met.", "score": 8}'
      - match: '"score": <0 or 1>'
        output: '{"reason": "The mock judge finds the criteria met.", "score": 1}'
      # ...the statements or claims of a text...
      - match: '\\{"(\\w+)": \\["\\.\\.\\.", \\.\\.\\.\\]\\}'
        output: '{"\\g<1>": ["The answer addresses the question."]}'
      # ...and one verdict per item.
      - match: 'exactly 1 verdicts'
        output: '{"verdicts": [{"verdict": "yes", "reason": "It does."}]}'
      - match: 'exactly 2 verdicts'
        output: >-
          {"verdicts": [{"verdict": "yes", "reason": "It does."},
          {"verdict": "yes", "reason": "It does."}]}
      - match: 'exactly 3 verdicts'
        output: >-
          {"verdicts": [{"verdict": "yes", "reason": "It does."},
          {"verdict": "yes", "reason": "It does."}, {"verdict": "yes", "reason": "It does."}]}
      - match: "."                # the consistency tests' pairwise comparisons
        output: |
          Both submissions give the same hours, weekdays 9 to 5.
          Answer: A
  - name: classifier
    vendor: mock
    rules:
      - match: "(?i)love|great|thank"
        output: "positive"
      - match: "(?i)broken|refund|never"
        output: "negative"
      - match: "."
        output: "neutral"

defaults:
  judge_model: judge              # what judges: consistency tests, the SDK's metrics

  # A real model (the history of test cases keeps each model's results apart):
  #
  # - name: gpt-4o-mini
  #   vendor: openai              # also anthropic, google, ollama, or any
  #   model_ref: gpt-4o-mini      # OpenAI-compatible server through api_url
  #   key_var: OPENAI_API_KEY     # export OPENAI_API_KEY=... (never put the key here)
"""

AGENT = """\
# An agent and its consistency test: `oxy test agents/support.agent.yml` asks the
# question n times and has the judge compare the answers pairwise.
model: assistant
description: Answers questions about our support desk.
system_instructions: |
  You answer customers of {{ company }} in one sentence.
variables:
  company: Example Co

tests:
  - type: consistency
    name: support hours
    n: 5
    task_description: "When is support open?"
    model_ref: judge
"""

PROMPT = """\
# A prompt with test cases: `oxy cases run` scores each answer against its expected
# output and keeps every run in the history (.oxy/oxyeval.db), flagging regressions.
name: sentiment
model: classifier
system: Label the sentiment of customer feedback. Answer with one word.
template: |
  Feedback: {{ text }}
  Sentiment (positive, negative or neutral):
temperature: 0
similarity: lexical       # offline word overlap; with a key: an embeddings model from config.yml
threshold: 0.8

cases:
  - name: praise
    input: {text: "I love it, thank you!"}
    expected_output: positive
  - name: complaint
    input: {text: "It arrived broken and I want a refund."}
    expected_output: negative
  - name: plain fact
    input: {text: "The parcel came on Tuesday."}
    expected_output: neutral
"""

#: Relative path -> content, in the order they are listed to the user.
SCAFFOLD: dict[str, str] = {
    "config.yml": CONFIG,
    "agents/support.agent.yml": AGENT,
    "prompts/sentiment.prompt.yml": PROMPT,
}


@dataclass
class ScaffoldConflict(Exception):
    """Files of the scaffold that already exist: nothing was written."""

    existing: list[str]


def write_scaffold(target: Path, *, force: bool = False) -> list[str]:
    """Write the starter project into ``target`` (created if missing); the paths written.

    Refuses, writing nothing, when any of its files exists, unless ``force``: a user's
    config.yml is never replaced by accident. A path of the scaffold that is a folder
    is never replaced, even with ``force``.
    """
    folders = [rel for rel in SCAFFOLD if (target / rel).is_dir()]
    if folders:
        raise ScaffoldConflict(folders)
    existing = [rel for rel in SCAFFOLD if (target / rel).exists()]
    if existing and not force:
        raise ScaffoldConflict(existing)
    for rel, text in SCAFFOLD.items():
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return [*SCAFFOLD, *ignore_history(target)]


#: What keeps the history (model answers, results, the cache) out of git.
GITIGNORE_LINE = ".oxy/"


def ignore_history(target: Path) -> list[str]:
    """Add ``.oxy/`` to the project's ``.gitignore`` (made if missing, appended to, never
    replaced): the history holds model answers, easy to commit by mistake. Returns
    ``[".gitignore"]`` when it was written."""
    path = target / ".gitignore"
    if path.is_dir():
        return []
    text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
    if any(line.strip().strip("/") == ".oxy" for line in text.splitlines()):
        return []
    sep = "\n" if text and not text.endswith("\n") else ""
    path.write_text(
        f"{text}{sep}# oxyeval's history: model answers and results\n{GITIGNORE_LINE}\n",
        encoding="utf-8",
    )
    return [".gitignore"]


def next_steps(target: str) -> list[str]:
    """The commands to run next, from the folder the user is in."""
    import shlex

    cd = [] if target in ("", ".") else [f"cd {shlex.quote(target)}"]
    return [
        *cd,
        "oxy validate",
        "oxy test agents/support.agent.yml --min-accuracy 0.8",
        "oxy cases run",
    ]
