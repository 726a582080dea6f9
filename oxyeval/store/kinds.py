"""The values the history's ``kind`` and ``status`` columns take: their one definition.

The tables (``_tables``) build their CHECK constraints from these, the repositories and
the lean store check what they write against them, and ``oxy history --kind`` offers and
checks :data:`RUN_KINDS`. Apart from the tables and importing nothing, because the lean
store and the command line's help need them without SQLAlchemy.
"""

from __future__ import annotations

__all__ = [
    "BRANCH_PROVIDERS",
    "BRANCH_STATUSES",
    "CONSISTENCY_STATUSES",
    "EXECUTION_STATUSES",
    "FINISHED_RUN_STATUSES",
    "MAX_BRANCHES",
    "RESERVED_RUN_KINDS",
    "RESULT_OUTCOMES",
    "RUN_KINDS",
    "RUN_KIND_ALIASES",
    "RUN_STATUSES",
    "WORKFLOW_STATUSES",
]

#: The kinds of run the built-in commands write: ``oxy cases run`` (cases), ``oxy test``
#: (consistency), ``oxy run`` (workflow), ``oxy ab run`` (ab) and ``oxy chattest`` /
#: ``oxy test`` on ``*.test.yml`` files (passfail), the Python SDK's ``evaluate`` and
#: ``run_test_suite`` (sdk), and ``oxy run --question`` (ask). Since revision 0004 the schema does not
#: constrain a run's kind: a new kind of test registers itself with the evaluation core
#: (``oxyeval.evaluation.register_kind``) and the store takes its runs and results.
RUN_KINDS = ("cases", "consistency", "workflow", "ab", "passfail", "sdk", "ask")
#: Names kept for test types not written yet (none today: A/B tests register ``ab``,
#: judged pass/fail tests ``passfail``): until registered, a run of such a kind cannot be
#: started, and none is offered to a reader.
RESERVED_RUN_KINDS: tuple[str, ...] = ()
#: Other names a reader may give a kind: ``oxy test``'s runs are "tests" in its report.
RUN_KIND_ALIASES = {"test": "consistency"}

#: A run's status: ``running`` while its process writes it, then how it ended.
RUN_STATUSES = ("running", "completed", "interrupted", "failed")
#: The statuses a finished run can have (``runs.finish``).
FINISHED_RUN_STATUSES = ("completed", "interrupted", "failed")

#: What a result counts as in its run, stored with it (``results.outcome``): ``passed`` or
#: ``failed`` its own check (``passed`` true or false); ``unknown`` a status its kind says
#: leaves the outcome unknown (an error, an interruption: the run's errors); ``neutral``
#: one its kind says is neither (a pending case); ``unjudged`` finished with no check of
#: its own (a consistency test's accuracy, a completed workflow: run-wide gates judge it).
RESULT_OUTCOMES = ("passed", "failed", "unknown", "neutral", "unjudged")

#: A test case execution's status (``oxy cases run``).
EXECUTION_STATUSES = ("passed", "failed", "pending", "error")
#: A consistency test's status (``oxy test``), in its results, its JSON and its history.
CONSISTENCY_STATUSES = ("scored", "error", "interrupted")

#: How a recorded workflow run ended, as its suite said it (results of kind ``workflow``).
WORKFLOW_STATUSES = ("completed", "failed", "interrupted")

#: An A/B branch execution's status (results of kind ``ab``).
BRANCH_STATUSES = ("success", "error")
#: The vendors an A/B branch may name as its ``provider`` (None: ``model`` is a model
#: name of config.yml).
BRANCH_PROVIDERS = ("openai", "anthropic", "gemini", "ollama")
#: Live A/B branches a test case may have (the Testing API's limit; ``store.branches`` holds it).
MAX_BRANCHES = 5
