"""What one GraphQL request may cost: checked on the document before it runs, counted while
it runs.

Before: a document is parsed up to :data:`MAX_TOKENS` tokens, then each operation is
measured (depth, fields with fragments expanded, root fields, and a cost in which every
list multiplies what is selected under it by the rows it may hold) by one rule run alone,
before graphql-core's own rules: some of those are quadratic in the fields of a selection
set, so a document that is refused anyway must not reach them. Each fragment is measured
once per document, so neither doubling fragments nor thousands of operations make the
check itself slow.

While it runs (:class:`Budget`): the values of its answer (objects' fields and list items)
are counted against a bound, which holds its memory, and a query has a deadline. The cost
estimate counts an unbounded list (every case of a prompt) as :data:`NOMINAL_LIST` rows,
which a large project exceeds: the count is what holds there.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter, deque
from collections.abc import Collection, Mapping
from typing import Any, NamedTuple

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLList,
    GraphQLNonNull,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValidationRule,
    VariableNode,
    get_named_type,
    parse,
    validate,
)
from graphql.validation import specified_rules

from ..store import MAX_BRANCHES
from .defaults import (
    DEFAULT_MAX_COST,
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_VALUES,
    DEFAULT_QUERY_TIMEOUT,
)
from .inputs import MAX_LIMIT

__all__ = [
    "BUDGET_KEY",
    "DEFAULT_MAX_COST",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_VALUES",
    "DEFAULT_QUERY_TIMEOUT",
    "MAX_FIELDS",
    "MAX_FRAGMENTS",
    "MAX_ROOT_FIELDS",
    "MAX_SAME_NAME",
    "MAX_TOKENS",
    "NOMINAL_LIST",
    "POOL_FACTOR",
    "SLOW_FIELD",
    "Budget",
    "Pool",
    "parse_query",
    "query_limits",
    "validate_limits_first",
]

#: Fields one operation may select, fragments expanded (the dashboard's largest asks 600).
MAX_FIELDS = 2000
#: Fields at the root of one operation: each root field is a query of its own.
MAX_ROOT_FIELDS = 25
#: Fields one response name may have in one selection set, and fragments one document may
#: define: graphql-core's check that fields of one name can be merged compares them in
#: pairs, and the fragments spread in one selection set in pairs.
MAX_SAME_NAME = 100
MAX_FRAGMENTS = 200
#: Tokens of one document (names, punctuation, values; the dashboard's largest has ~1,200):
#: what parsing and validating a document take is linear in them.
MAX_TOKENS = 10_000
#: Rows a list is counted as when nothing bounds it (a prompt's cases, every prompt).
NOMINAL_LIST = 100
#: What a field read from the history costs beside its value (a query of its own).
READ_COST = 10
#: What a field that takes graphql-core's general path counts for in an answer's values
#: (see ``defaults.DEFAULT_MAX_VALUES``).
SLOW_FIELD = 10
#: The requests of a server together: the answers being built at once (see :class:`Pool`).
POOL_FACTOR = 4
#: Where a request's :class:`Budget` is kept in its ASGI scope.
BUDGET_KEY = "oxyeval.budget"

#: Lists the data model bounds: a case has at most 5 branches; stats show the newest 10
#: runs; a result has one score per metric of its test (a handful, and a score selects no
#: list of its own).
_BOUNDED = {
    ("Query", "testBranches"): MAX_BRANCHES,
    ("ABTestResult", "branches"): MAX_BRANCHES,
    ("TestCaseStats", "recentRuns"): 10,
    ("Result", "scores"): 10,
}
#: Lists paged by their ``limit`` argument: its default when it is not given.
_PAGED = {
    ("Query", "testCaseExecutions"): 50,
    ("Query", "testBranchExecutions"): 50,
    ("Query", "runs"): 20,
    ("Query", "results"): 50,
}


def parse_query(_context: Any, data: Mapping[str, Any]) -> DocumentNode:
    """Ariadne's ``query_parser``: graphql-core's parser, stopped past :data:`MAX_TOKENS`."""
    return parse(data["query"], max_tokens=MAX_TOKENS)


def validate_limits_first(
    schema: GraphQLSchema,
    document: DocumentNode,
    rules: Collection[Any] | None = None,
    max_errors: int | None = None,
    **kwargs: Any,
) -> list[GraphQLError]:
    """Ariadne's ``query_validator``: this module's rule alone first, the spec's rules only
    on a document it let through."""
    given = list(rules or specified_rules)
    ours = [r for r in given if r not in specified_rules]
    if ours:
        errors = validate(schema, document, ours, max_errors=max_errors, **kwargs)
        if errors:
            return errors
    spec = [r for r in given if r in specified_rules]
    return validate(schema, document, spec, max_errors=max_errors, **kwargs)


def _list_size(parent: str, field: FieldNode, variables: Mapping[str, Any]) -> int:
    """How many rows a list field is counted as: its ``limit`` (a literal or a variable's
    value) for a paged list, the data model's bound, else :data:`NOMINAL_LIST`."""
    key = (parent, field.name.value)
    bounded = _BOUNDED.get(key)
    if bounded is not None:
        return bounded
    default = _PAGED.get(key)
    if default is None:
        return NOMINAL_LIST
    for argument in field.arguments or ():
        if argument.name.value != "limit":
            continue
        value: Any = None
        if isinstance(argument.value, IntValueNode):
            value = int(argument.value.value)
        elif isinstance(argument.value, VariableNode):
            value = variables.get(argument.value.name.value)
        if isinstance(value, int) and not isinstance(value, bool):
            return min(max(value, 1), MAX_LIMIT)  # out of range: refused when it runs
    return default


class _Size(NamedTuple):
    """What a selection set asks: its depth, its fields (fragments expanded), its cost, and
    how often each response name occurs at its own level."""

    depth: int
    fields: int
    cost: int
    names: Counter[str]


_EMPTY = _Size(0, 0, 0, Counter())


class _Measure:
    """Depth, field count, cost and repeated names of selection sets, each fragment
    measured once per document: a fragment spread twice by a fragment spread twice... is
    2^n fields when expanded, but n fragments to measure."""

    def __init__(
        self,
        fragments: Mapping[str, FragmentDefinitionNode],
        schema: GraphQLSchema | None = None,
        variables: Mapping[str, Any] | None = None,
    ) -> None:
        self.fragments = fragments
        self.schema = schema
        self.variables = variables or {}
        self.memo: dict[str, _Size] = {}
        self.active: set[str] = set()
        #: The most fields one response name has in one selection set (fragments expanded).
        self.most_repeated = 0

    def fragment(self, name: str) -> _Size:
        found = self.memo.get(name)
        if found is not None:
            return found
        node = self.fragments.get(name)
        if node is None or name in self.active:  # unknown or a cycle: the spec's rules say so
            return _EMPTY
        self.active.add(name)
        on = self._type(node.type_condition.name.value)
        found = self.memo[name] = self._level(node.selection_set, on, set())
        self.active.discard(name)
        return found

    def _type(self, name: str) -> Any:
        return self.schema.get_type(name) if self.schema is not None else None

    def _field(self, parent: Any, node: FieldNode) -> tuple[int, int, int]:
        """(depth, fields, cost) of one field and what it selects."""
        name = node.name.value
        if name.startswith("__"):  # introspection: bounded by the schema, asked once at most
            return 0, 1 + self.selections(node.selection_set, None).fields, 1
        definition = None
        fields = getattr(parent, "fields", None)
        if fields is not None:
            definition = fields.get(name)
        kind = definition.type if definition is not None else None
        below = self.selections(
            node.selection_set, get_named_type(kind) if kind is not None else None
        )
        cost = 1
        resolve = definition.resolve if definition is not None else None
        if resolve is not None and not getattr(resolve, "dict_first", False):
            cost += READ_COST
        if isinstance(kind, GraphQLNonNull):
            kind = kind.of_type
        if isinstance(kind, GraphQLList):
            cost += _list_size(parent.name, node, self.variables) * max(below.cost, 1)
        else:
            cost += below.cost
        return 1 + below.depth, 1 + below.fields, cost

    def selections(self, node: SelectionSetNode | None, parent: Any = None) -> _Size:
        """What ``node`` asks; introspection fields count as fields, not depth."""
        if node is None:
            return _EMPTY
        size = self._level(node, parent, set())
        if size.names:
            self.most_repeated = max(self.most_repeated, max(size.names.values()))
        return size

    def _level(self, node: SelectionSetNode, parent: Any, spread: set[str]) -> _Size:
        """One selection set with the inline fragments and fragment spreads at its level
        (a fragment spread twice at one level counts once, as the spec merges it)."""
        depth = fields = cost = 0
        names: Counter[str] = Counter()
        for selection in node.selections:
            if isinstance(selection, FieldNode):
                d, f, c = self._field(parent, selection)
                names[(selection.alias or selection.name).value] += 1
            elif isinstance(selection, InlineFragmentNode):
                on = parent
                if selection.type_condition is not None:
                    on = self._type(selection.type_condition.name.value)
                d, f, c, inner = self._level(selection.selection_set, on, spread)
                names.update(inner)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                d, f, c, inner = self.fragment(name)
                if name not in spread:
                    spread.add(name)
                    names.update(inner)
            else:
                continue
            depth, fields, cost = max(depth, d), fields + f, cost + c
        return _Size(depth, fields, cost, names)


def _root_fields(node: SelectionSetNode, measure: _Measure, seen: frozenset[str]) -> list[str]:
    names: list[str] = []
    for selection in node.selections:
        if isinstance(selection, FieldNode):
            names.append(selection.name.value)
        elif isinstance(selection, InlineFragmentNode):
            names += _root_fields(selection.selection_set, measure, seen)
        elif isinstance(selection, FragmentSpreadNode):
            name = selection.name.value
            fragment = measure.fragments.get(name)
            if fragment is not None and name not in seen and len(names) <= MAX_ROOT_FIELDS:
                names += _root_fields(fragment.selection_set, measure, seen | {name})
    return names


def query_limits(
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_cost: int = DEFAULT_MAX_COST,
    variables: Mapping[str, Any] | None = None,
    *,
    max_fields: int = MAX_FIELDS,
    max_root: int = MAX_ROOT_FIELDS,
) -> type[ValidationRule]:
    """A validation rule refusing an operation nested deeper than ``max_depth`` fields,
    selecting more than ``max_fields`` fields (fragments expanded), more than ``max_root``
    root fields, introspection more than once, or costing more than ``max_cost``: each in
    time linear in the document.

    The cost: 1 per field, plus :data:`READ_COST` for one read from the history (a field
    with a resolver of its own), and a list multiplies the cost of what it selects by the
    rows it may hold (its ``limit``, from ``variables`` when it is one, or the data model's
    bound, else :data:`NOMINAL_LIST`). ``prompts { testCases { id } }`` costs about
    100 x 100; each further list nested in it multiplies that by 100 again."""
    values = dict(variables or {}) if isinstance(variables, Mapping) else {}

    class QueryLimits(ValidationRule):
        measure: _Measure | None = None

        def _measure(self) -> _Measure:
            # one map of the document's fragments and one memo for all its operations
            if self.measure is None:
                fragments = {
                    d.name.value: d
                    for d in self.context.document.definitions
                    if isinstance(d, FragmentDefinitionNode)
                }
                self.measure = _Measure(fragments, self.context.schema, values)
            return self.measure

        def enter_document(self, node: DocumentNode, *_: Any) -> None:
            count = sum(isinstance(d, FragmentDefinitionNode) for d in node.definitions)
            if count > MAX_FRAGMENTS:
                message = (
                    f"the document defines {count:,} fragments; this server allows at most "
                    f"{MAX_FRAGMENTS}"
                )
                self.report_error(GraphQLError(message))

        def enter_operation_definition(self, node: OperationDefinitionNode, *_: Any) -> None:
            measure = self._measure()
            root = self.context.schema.get_root_type(node.operation)
            depth, fields, cost, _ = measure.selections(node.selection_set, root)
            name = node.name.value if node.name else "anonymous"
            roots = _root_fields(node.selection_set, measure, frozenset())
            problem = None
            if depth > max_depth:
                problem = f"is nested {depth} fields deep; this server allows at most {max_depth}"
            elif fields > max_fields:
                problem = (
                    f"selects {fields:,} fields (fragments expanded); this server allows at "
                    f"most {max_fields:,}"
                )
            elif len(roots) > max_root:
                problem = (
                    f"asks {len(roots)} root fields; this server allows at most {max_root} "
                    "(send several requests)"
                )
            elif sum(1 for r in roots if r in ("__schema", "__type")) > 1:
                problem = "asks for introspection more than once"
            elif measure.most_repeated > MAX_SAME_NAME:
                problem = (
                    f"selects one name {measure.most_repeated:,} times in one selection set "
                    f"(aliases and fragments included); this server allows at most "
                    f"{MAX_SAME_NAME}"
                )
            elif cost > max_cost:
                problem = (
                    f"would cost about {_short(cost)} (each list counted at its limit, or at "
                    f"{NOMINAL_LIST} rows, times what it selects); this server allows at most "
                    f"{max_cost:,}: ask for fewer lists nested in lists, or smaller pages"
                )
            if problem is not None:
                self.report_error(GraphQLError(f"operation '{name}' {problem}", node))
            return self.SKIP  # its selections were measured here, nothing is left to visit

    return QueryLimits


def _short(n: int) -> str:
    return f"{n:,}" if n < 10**15 else f"{n:.1e}"


class Budget:
    """What one request may spend while it runs: values in its answer, and time.

    The executor calls :meth:`spend` with each object's field count and each list's length
    (before the list's rows are completed, so a long list is refused before its rows are
    made); once it is spent (or stopped: its client left, the deadline passed, the server
    is stopping), every object and list left completes empty at once, with no error to
    build for each, and the HTTP handler answers the refusal instead. The clock is read
    every :data:`_CHECK_EVERY` values, so a long stretch of synchronous work (a big list
    of plain rows) is stopped too, not only an await; and past :data:`_TURN_EVERY` values
    the objects left wait their turn (:meth:`turn`), so other requests are answered
    meanwhile. All the
    requests of a server also share one :class:`Pool`: the answers being built at once."""

    _CHECK_EVERY = 2000
    _TURN_EVERY = 2000
    _TURN_BATCH = 20

    def __init__(self, max_values: int, timeout: float | None, pool: Pool | None = None) -> None:
        self.max_values = max_values
        self.timeout = timeout
        self.pool = pool
        if pool is not None:
            pool.active.add(self)
        self.spent = 0
        self.deadline = None if timeout is None else time.monotonic() + timeout
        #: Why it stopped: "size", "busy" (the pool), "time", "left" (its client) or
        #: "stopping" (the server); None: it did not.
        self.exceeded: str | None = None
        #: Set when it stops (the HTTP handler waits for it, or for the execution's end).
        self.stopped = asyncio.Event()
        self.mutation = False
        self._check_at = self._CHECK_EVERY
        self._turned_at = 0
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._releasing = False

    def for_mutation(self) -> None:
        """A mutation has no deadline: the runs it waits for are bounded by the run queue
        and the models' own timeouts, and go on (stored) whatever the client does."""
        self.mutation = True
        self.deadline = None

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def spend(self, n: int) -> bool:
        """Count ``n`` values in; whether the execution may go on."""
        if self.exceeded is not None:
            return False
        self.spent += n
        pool = self.pool
        if pool is not None:
            pool.used += n
        if self.spent > self.max_values:
            self.stop("size")
        elif pool is not None and pool.used > pool.limit:
            self.stop("busy")
        elif self.spent >= self._check_at:
            self._check_at = self.spent + self._CHECK_EVERY
            if self.deadline is not None and time.monotonic() > self.deadline:
                self.stop("time")
        return self.exceeded is None

    def turn_due(self) -> bool:
        """Whether the execution should wait for its next turn (:meth:`turn`) before it
        completes another object: it has completed :data:`_TURN_EVERY` values since its
        last one."""
        return self.spent - self._turned_at >= self._TURN_EVERY

    def turn(self) -> asyncio.Future[None]:
        """Resolved on a later pass of the event loop, :data:`_TURN_BATCH` waiters a pass:
        between two passes the loop serves every other connection, so an answer completed
        from memory (no await of its own) cannot hold them until it is whole."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        if not self._releasing:
            self._releasing = True
            asyncio.get_running_loop().call_soon(self._release)
        return waiter

    def _release(self) -> None:
        self._turned_at = self.spent
        for _ in range(min(self._TURN_BATCH, len(self._waiting))):
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
        if self._waiting:
            asyncio.get_running_loop().call_soon(self._release)
        else:
            self._releasing = False

    def stop(self, why: str) -> None:
        """Stop the request's execution (the first reason is the one answered)."""
        if self.exceeded is None:
            self.exceeded = why
            self.stopped.set()

    def release(self) -> None:
        """The request is over: what it held goes back to the pool."""
        if self.pool is not None:
            self.pool.used -= self.spent
            self.pool.active.discard(self)
            self.spent = 0

    def message(self) -> str:
        if self.exceeded == "time":
            return (
                f"the query ran longer than {self.timeout:g} s and was stopped; ask for less "
                "(fewer nested lists, smaller pages)"
            )
        if self.exceeded == "busy":
            return (
                "the server is building other large answers; try again in a moment, or ask for less"
            )
        if self.exceeded == "left":
            return "the client left"
        if self.exceeded == "stopping":
            return "the server is stopping; try again when it is back"
        return (
            f"the answer would hold more than {self.max_values:,} values (fields and list "
            "items) and was stopped; ask for fewer fields, fewer nested lists or smaller pages"
        )


class Pool:
    """The values the answers being built at once hold, all requests together: each
    request is bounded by ``--max-values``, and their number by the connection caps, but
    their product is the memory that matters."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.active: set[Budget] = set()

    def stop_all(self) -> None:
        """The server is stopping: every query still executing stops. A mutation is let
        finish: the run it waits for is finished and stored before the server exits
        anyway, and its client gets the answer."""
        for budget in list(self.active):
            if not budget.mutation:
                budget.stop("stopping")
