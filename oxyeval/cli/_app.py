"""The ``oxy`` app: shared option types, logging and progress adapters, and ``main``.

Each command group lives in its own module (``test``, ``run``, ``validate``, ``history``,
``cases``, ``report``, ``cache``, ``init``) and registers itself on :data:`app` when
imported at the bottom of this one. Commands parse flags, call the library, print a
report; heavy imports stay inside them so ``oxy --help`` and start-up stay fast.
"""

from __future__ import annotations

import itertools
import logging
import sys
from collections.abc import Sequence
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from .. import __version__
from .console import Streams, echo, set_color, stderr_console, using_streams
from .helptext import RootGroup, plain_required_arguments

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["app", "global_flags_first", "main"]

plain_required_arguments()

#: ``-h`` as well as ``--help``, on every command (subcommands inherit it).
HELP_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}

app = typer.Typer(
    name="oxy",
    help="Test LLM agents and workflows: consistency tests, CI thresholds, offline mocks.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    cls=RootGroup,
    context_settings=HELP_SETTINGS,
)

#: ``oxy -v``: the debug log (each model call as it answers) without tracebacks.
_verbose = False


class Format(str, Enum):
    pretty = "pretty"
    json = "json"


class ThresholdMode(str, Enum):
    average = "average"
    all = "all"


class Inconclusive(str, Enum):
    passes = "pass"
    fails = "fail"


ProjectOption = Annotated[
    str | None,
    typer.Option(
        "--project",
        metavar="DIR",
        help="Project folder (default: the nearest config.yml above the file or folder).",
    ),
]
DebugOption = Annotated[bool, typer.Option("--debug", help="Show tracebacks and debug logs.")]
DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        metavar="PATH|URL",
        help="History: an SQLite file or a postgresql://user@host:5432/db URL (default: "
        "$OXY_DB, else history.url in config.yml, else .oxy/oxyeval.db in the project).",
    ),
]
# The gates every command that runs tests takes (and oxy report applies again to a saved
# run): one meaning for every kind, since one decision applies them. A result's score is
# a consistency test's accuracy, a case's score, a judged test's pass rate, a branch's
# quality, an SDK metric's score.
MinAccuracyOption = Annotated[
    float | None,
    typer.Option(
        "--min-accuracy",
        metavar="X",
        help="Exit 1 if the results' score is below X (0..1): a test's accuracy, a case's "
        "score, a judged test's pass rate, a branch's quality.",
    ),
]
ThresholdModeOption = Annotated[
    ThresholdMode,
    typer.Option(
        "--threshold-mode", help="For --min-accuracy. average: the mean score; all: every result."
    ),
]
MinPassRateOption = Annotated[
    float | None,
    typer.Option(
        "--min-pass-rate",
        metavar="X",
        help="Exit 1 if fewer than X (0..1) of the results with a check of their own pass it "
        "(a case's threshold, a chattest's success threshold, a branch's quality mark; "
        "consistency tests and *.test.yml cases have none: --min-accuracy gates their "
        "scores); failures under that share are allowed.",
    ),
]
StrictOption = Annotated[
    bool,
    typer.Option("--strict", help="Exit 3 if any run or judge call failed, even when scored."),
]
FailOnDropOption = Annotated[
    float | None,
    typer.Option(
        "--fail-on-drop",
        metavar="POINTS",
        help="Exit 1 if a result's score fell by more than POINTS percentage points "
        "against its previous result in the history.",
    ),
]
FailOnRegressionOption = Annotated[
    bool,
    typer.Option(
        "--fail-on-regression",
        help="Exit 1 on a regression: a result that regressed against its own baseline (a "
        "test case), or a significant drop of the pass tallies against the baseline run in "
        "the history (a paired test per test; see --inconclusive).",
    ),
]
InconclusiveOption = Annotated[
    Inconclusive,
    typer.Option(
        "--inconclusive",
        help="For --fail-on-regression: when the run is too small to tell a drop from "
        "noise, pass (default, with a warning naming the smallest drop it could detect) "
        "or fail.",
    ),
]
AllowEmptyOption = Annotated[
    bool,
    typer.Option(
        "--allow-empty",
        help="Let --min-accuracy, --min-pass-rate and --fail-on-drop pass when nothing was "
        "tested (default: exit 1, so an empty selection in CI is never a green build).",
    ),
]


def gates(
    min_accuracy: float | None,
    threshold_mode: ThresholdMode,
    min_pass_rate: float | None,
    strict: bool,
    fail_on_drop: float | None,
    allow_empty: bool,
    *,
    fail_on_regression: bool = False,
    inconclusive: Inconclusive | str = "pass",
) -> Any:
    """The gate options as the one decision's :class:`~oxyeval.evaluation.Gates`."""
    from ..evaluation import Gates

    return Gates(
        min_accuracy=min_accuracy,
        threshold_mode=threshold_mode.value,
        strict=strict,
        fail_on_drop=fail_on_drop,
        fail_on_regression=fail_on_regression,
        inconclusive=inconclusive.value if isinstance(inconclusive, Enum) else inconclusive,
        allow_empty=allow_empty,
        min_pass_rate=min_pass_rate,
    )


# A sharded run (every command that runs tests): this runner's share of the selection,
# and the group the shards' outcomes are kept under for `oxy report --run-group`.
ShardOption = Annotated[
    str | None,
    typer.Option(
        "--shard",
        metavar="I/N",
        help="Run shard I of N (numbered from 1) of the selected tests: the same split on "
        "every machine (by file and test name, balanced by their runs). Needs --run-group "
        "unless --no-history.",
    ),
]
RunGroupOption = Annotated[
    str | None,
    typer.Option(
        "--run-group",
        metavar="ID",
        help="Keep this run's outcome in the history under run group ID (the same on every "
        "shard, e.g. the CI pipeline's id); `oxy report --run-group ID` decides on all the "
        "shards together.",
    ),
]


def shards(
    shard: str | None, run_group: str | None, *, kind: str, stored: bool = True
) -> tuple[Any, str | None]:
    """The shard options as the run's :class:`~oxyeval.suites.Sharding` (None: not
    sharded), and why they cannot run (exit 2, said the gates' way), or None."""
    from ..suites import Sharding, sharding_problem

    problem = sharding_problem(shard, run_group, history=stored)
    if problem is not None:
        return None, problem
    sharding = Sharding.parse(shard, run_group)
    if sharding is not None:
        sharding.kind = kind
    return sharding, None


CacheOption = Annotated[
    bool | None,
    typer.Option(
        "--cache/--no-cache",
        help="--cache: also replay model answers kept from identical earlier calls (every "
        "run keeps them), so an unchanged rerun makes no request; --no-cache: keep and "
        "replay nothing. Judge verdicts are replayed by default.",
    ),
]

BatchOption = Annotated[
    bool,
    typer.Option(
        "--batch",
        help="Send the model calls through the vendors' batch APIs (OpenAI, Anthropic, "
        "Gemini): about half the price, minutes to hours instead of seconds. Stopped, the "
        "same command with --batch again collects the batches instead of paying twice.",
    ),
]


def no_history_conflict(
    no_history: bool,
    replay: bool | None,
    fail_on_drop: float | None = None,
    fail_on_regression: bool = False,
) -> str | None:
    """Why ``--no-history`` cannot go with the other flags given (exit 2), or None: the
    flags that need the history it turns off."""
    if not no_history:
        return None
    if fail_on_drop is not None:
        return "--fail-on-drop compares with the history, which --no-history turns off"
    if fail_on_regression:
        return "--fail-on-regression compares with the history, which --no-history turns off"
    if replay is True:  # --cache
        return "--cache replays answers kept in the history, which --no-history turns off"
    return None


class _ConsoleHandler(logging.Handler):
    """Log lines (retries, warnings) on stderr through rich, above any progress bar."""

    def __init__(self, console: Console) -> None:
        super().__init__(logging.DEBUG)
        self.console = console

    def emit(self, record: logging.LogRecord) -> None:
        from rich.markup import escape

        from ..redact import redact

        text = redact(record.getMessage())
        if record.levelno >= logging.WARNING and not text.startswith(("warning:", "error:")):
            text = f"warning: {text}"  # one look for every warning, whichever stage logs it
        style = "yellow" if record.levelno >= logging.WARNING else "dim"
        self.console.print(f"[{style}]{escape(text)}[/]")


def setup_logging(console: Console, debug: bool) -> None:
    from ..inputs import reset_warnings

    reset_warnings()  # a new invocation: its invalid-text warnings are said again
    logger = logging.getLogger("oxyeval")
    logger.handlers[:] = [_ConsoleHandler(console)]
    logger.setLevel(logging.DEBUG if debug or _verbose else logging.INFO)
    logger.propagate = False


class RichProgress:
    """Adapter from the runner's ProgressSink to a rich progress bar on stderr."""

    def __init__(self, console: Console) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self.tasks: dict[str, Any] = {}

    def start(self, key: str, label: str, total: int) -> None:
        self.tasks[key] = self.progress.add_task(label, total=total)

    def add_total(self, key: str, amount: int) -> None:
        task = self.progress.tasks[self.tasks[key]]
        self.progress.update(self.tasks[key], total=(task.total or 0) + amount)

    def advance(self, key: str, amount: int = 1) -> None:
        self.progress.advance(self.tasks[key], amount)


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Show the version and exit.")] = False,
    no_color: Annotated[
        bool,
        typer.Option("--no-color", help="No colours (as NO_COLOR=1 in the environment does)."),
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help="Log each model call on stderr as it answers (--debug: tracebacks too).",
        ),
    ] = False,
) -> None:
    global _verbose
    _verbose = verbose
    set_color(not no_color)
    if version:
        echo(f"oxyeval {__version__}")
        raise typer.Exit()


# Each module registers its commands on ``app``; ``oxy --help`` lists them in helptext's order.
from . import test, run, validate, history, cases, ab, chattest, report, cache, batch, init, serve  # noqa: E402, F401, I001
from . import judge  # noqa: E402, F401
from . import exec_suites  # noqa: E402, F401


#: The flags of ``oxy`` itself that may also follow the command (``oxy test -v``).
_GLOBAL_FLAGS = frozenset({"-v", "--verbose", "--no-color"})


def global_flags_first(args: list[str]) -> list[str]:
    """``args`` with ``oxy``'s own flags moved before the command, where Click reads them:
    a user types ``oxy test agents/ -v`` as readily as ``oxy -v test agents/``. Nothing
    after ``--`` moves; no command has an option of these names."""
    end = args.index("--") if "--" in args else len(args)
    moved = [a for a in args[:end] if a in _GLOBAL_FLAGS]
    rest = [a for a in args[:end] if a not in _GLOBAL_FLAGS]
    return [*moved, *rest, *args[end:]]


def _wants_json(argv: Sequence[str]) -> bool:
    return (
        "--json" in argv
        or "--format=json" in argv
        or any(a == "--format" and b == "json" for a, b in itertools.pairwise(argv))
    )


def _click_exception() -> type[Exception]:
    """Click's base exception (usage errors, bad values). Recent Typer versions vendor
    Click, so it is found through a public Typer name rather than imported."""
    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


def _invoke(args: list[str]) -> int:
    """Click without its standalone mode: usage errors come back as exceptions instead of
    being printed to ``sys.stderr`` and exiting, and ``typer.Exit`` as the exit code."""
    from typer.main import get_command

    code = get_command(app).main(args, prog_name=None, standalone_mode=False)
    return code if isinstance(code, int) else 0


def _run_app(args: list[str], out: Streams) -> int:
    """Run the command ``args`` name and return its exit code; whatever stops it, say why
    on stderr, and with ``--format json`` make sure stdout holds one JSON document."""
    import io

    from ..evaluation import error_code, interrupted_code, usage_code

    debug = "--debug" in args
    usage_error = _click_exception()
    try:
        return _invoke(args)
    except usage_error as exc:  # an unknown option, a bad value, a missing argument
        shown = io.StringIO()
        exc.show(file=shown)  # type: ignore[attr-defined]
        out.stderr.write(shown.getvalue())
        code = usage_code()
        message = " ".join(shown.getvalue().split()) or "invalid command line"
    except typer.Abort:
        code, message = interrupted_code(), "aborted"
        out.stderr.write(f"{message}\n")
    except SystemExit as exc:  # a signal outside the command's loop (see interrupt.py)
        from .interrupt import SignalExit

        if isinstance(exc.code, str):  # sys.exit("why"): say why, as Python would
            code, message = usage_code(), exc.code
            out.stderr.write(f"{message}\n")
        else:
            code = exc.code or 0
            reason = exc.reason if isinstance(exc, SignalExit) else None
            message = reason or f"stopped with exit code {code}"
    except Exception as exc:  # a bug no command caught: one paragraph, not a traceback
        import traceback

        from ..redact import redact

        message = f"internal error: {type(exc).__name__}: {redact(str(exc))}"
        err = stderr_console()
        if debug:
            trace = "".join(traceback.format_exception(exc))
            err.print(redact(trace), style="dim", markup=False)
        else:
            message += " (run with --debug for the traceback)"
        err.print(message, style="red", markup=False)
        code = error_code(exc)
    if code and _wants_json(args) and not out.wrote_stdout:
        from ..report import error_document, write_json

        write_json(error_document(message, code), out.stdout)
    return code


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Entry point of ``oxy``; ``argv`` defaults to ``sys.argv[1:]``.

    Every command writes through one pair of redacting streams made here (see
    :class:`~oxyeval.cli.console.Streams`); ``sys.stdout`` and ``sys.stderr`` are never
    replaced. With ``--format json`` even a command-line error yields one JSON document.
    """
    from .interrupt import exit_on_signal

    exit_on_signal()
    args = global_flags_first(list(sys.argv[1:] if argv is None else argv))
    out = Streams()
    with using_streams(out):
        code = _run_app(args, out)
    if argv is None and "duckdb" not in sys.modules:  # the process is ending:
        # leave its objects to the OS instead of a last garbage collection over all of
        # them (SQLAlchemy's alone cost ~0.15 s at exit after a run that opened the history).
        # Not after DuckDB ran: its bindings report every object still alive at shutdown
        # as a leak, 40 lines of noise on stderr.
        import gc

        gc.freeze()
    raise SystemExit(code)
