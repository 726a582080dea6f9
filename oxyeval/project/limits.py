"""Every resource limit in one place, so the schemas, the checks and the docs agree.

Project files come from anyone (a repository, a pull request), and a CI runner has a
few GB of memory: a typo like ``n: 1000000000`` or a hostile file (an alias bomb, a
template that multiplies a string by a billion) must end in a clear error naming the
file and line (exit 2), never in a MemoryError, a hang or a traceback. The limits are
generous for real files; ``tests/test_limits.py`` checks that the JSON Schemas carry
the same numbers as this module.
"""

from __future__ import annotations

import os

__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_ALL_PAIRS_RUNS",
    "MAX_BUILT_FACTOR",
    "MAX_CODEC_CHARS",
    "MAX_CONCURRENCY",
    "MAX_CONSISTENCY_RUN",
    "MAX_DAYS",
    "MAX_FILE_BYTES",
    "MAX_LOOP_VALUES",
    "MAX_RANGE",
    "MAX_RANGE_TOTAL",
    "MAX_RECENT",
    "MAX_RENDER_CHARS",
    "MAX_RETRIES",
    "MAX_RUNS",
    "MAX_TEMPLATE_CALLS",
    "MAX_TEMPLATE_ELIFS",
    "MAX_TEMPLATE_EXPRESSION_DEPTH",
    "MAX_TEMPLATE_INT_BITS",
    "MAX_TEMPLATE_ITEMS",
    "MAX_TEMPLATE_ITERATIONS",
    "MAX_TEMPLATE_NESTING",
    "MAX_TEMPLATE_TOKENS",
    "MAX_TIMEOUT_S",
    "MAX_TOOL_CALLS",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
    "RENDER_TIMEOUT_S",
    "render_limit",
    "render_timeout",
]

# -- files ----------------------------------------------------------------------------
MAX_FILE_BYTES = 5_000_000  # a YAML file larger than this is not read at all
MAX_YAML_DEPTH = 100  # nested mappings/lists, aliases expanded
MAX_ALIAS_NODES = 100_000  # nodes that all alias uses (*name, <<: *name) of a file expand to
MAX_YAML_NODES = 250_000  # keys, items and scalars of one file: what bounds its load time

# -- counts in project files (the schemas' maxima) ------------------------------------
MAX_RUNS = 10_000  # a consistency test's n
MAX_ALL_PAIRS_RUNS = 1_000  # n with pairing: all (n(n-1)/2 pairs); ring allows MAX_RUNS
MAX_CONSISTENCY_RUN = 1_000  # a workflow agent task's consistency_run (judged in all pairs)
MAX_CONCURRENCY = 1_000  # any concurrency: tests, loops, models, --concurrency
MAX_LOOP_VALUES = 10_000  # items a loop_sequential may iterate over
MAX_RETRIES = 20  # max_retries of a model, retry of a task
MAX_TOOL_CALLS = 1_000  # max_tool_calls, max_tool_concurrency
MAX_RECENT = 1_000  # earlier runs a regression check reads
MAX_DAYS = 36_500  # cache.ttl_days, --older-than: a century; a date computation beyond fails
MAX_TIMEOUT_S = 86_400  # a model's timeout per attempt: one day; larger is a typo, not a wish

# -- templates (the Jinja sandbox) ----------------------------------------------------
MAX_RENDER_CHARS = 5_000_000  # one rendered text or string; OXY_MAX_RENDER_CHARS changes it
MAX_BUILT_FACTOR = 10  # all strings an operation of one rendering makes: 10 x the above
MAX_TEMPLATE_ITEMS = 100_000  # a list a template makes: *, +, list, sort, split, map... of it
MAX_TEMPLATE_INT_BITS = 100_000  # an integer built by * or ** (about 30,000 digits)
MAX_RANGE = 100_000  # one range(...)
MAX_RANGE_TOTAL = 1_000_000  # all range(...) items of one rendering (nested loops)
MAX_TEMPLATE_CALLS = 200_000  # function, method and macro calls of one rendering
MAX_TEMPLATE_ITERATIONS = 5_000_000  # {% for %} iterations and items filters walk, all loops
MAX_CODEC_CHARS = 10_000  # text for the idna and punycode codecs, whose work is quadratic
RENDER_TIMEOUT_S = 30.0  # wall time of one rendering; OXY_RENDER_TIMEOUT changes it
# What a template may look like: past these, Jinja's parser or Python's compiler of the
# code Jinja generates fails (20 nested for loops is Python's own limit, about 100
# indentation levels, recursion), or compiling takes seconds per template.
MAX_TEMPLATE_NESTING = 20  # {% for %}, {% if %}, {% macro %}... blocks inside each other
MAX_TEMPLATE_ELIFS = 500  # {% elif %} branches of one {% if %} (Python nests each one)
MAX_TEMPLATE_EXPRESSION_DEPTH = 50  # (((x))), a|f|g|..., a + b + ... nested in one expression
MAX_TEMPLATE_TOKENS = 50_000  # names, literals, operators and text pieces of one template


def render_limit() -> int:
    """Characters one rendered template (or one string built in it) may have.

    ``OXY_MAX_RENDER_CHARS`` changes it for projects whose formatter tasks render very
    large SQL results; a value that is not a positive integer is ignored.
    """
    raw = os.environ.get("OXY_MAX_RENDER_CHARS", "").strip().replace("_", "")
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    return MAX_RENDER_CHARS


def render_timeout() -> float:
    """Seconds one rendering may run before it is stopped as bad input.

    Rendering is synchronous: while it runs, nothing else of the command does (model
    calls wait). ``OXY_RENDER_TIMEOUT`` changes it (a positive number of seconds; any
    other value is ignored).
    """
    raw = os.environ.get("OXY_RENDER_TIMEOUT", "").strip()
    try:
        value = float(raw)
    except ValueError:
        return RENDER_TIMEOUT_S
    return value if 0 < value < float("inf") else RENDER_TIMEOUT_S
