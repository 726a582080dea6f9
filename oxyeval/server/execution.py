"""A faster path through graphql-core for the fields this API answers most: a scalar
read from a dict.

graphql-core completes every field through the same general machinery (resolve info,
awaitable checks, a path object, list and object completion): some 5 µs a field, so a
list of 1,000 test cases with 12 fields spends ~60 ms there, more than the database
read. The answers here are the report layer's plain dicts, so a field with no resolver
of its own, no arguments and a scalar type is just ``type.serialize(source[name])``.
Anything else (a resolver, arguments, an object or list type, a null where the schema
says non-null, a value the scalar refuses) takes graphql-core's own path, which raises
the errors the spec prescribes.

It is also where a request's budget (``limits.Budget``) is spent: every object's fields
and every list's rows, counted before they are completed, so an answer past the bound
stops growing (what is left of it completes empty, and is thrown away) instead of taking
the memory; and where a long answer waits its turn, so other requests are served.
"""

from __future__ import annotations

from typing import Any

from graphql import GraphQLNonNull, OperationType, is_leaf_type
from graphql.execution.executor import Executor
from graphql.pyutils import Undefined

from .limits import SLOW_FIELD, Budget

__all__ = ["FastExecutor"]


class FastExecutor(Executor):
    """graphql-core's executor with the fast path above, per field and, for an object whose
    every selected field takes it (a row of a list), per object: one loop, no path objects
    or awaitable checks, each field's plan worked out once per query. A resolver marked
    ``dict_first`` (it answers the dict's own value when there is one) does not stop it."""

    @property
    def budget(self) -> Budget | None:
        context = self.context_value
        found = context.get("budget") if isinstance(context, dict) else None
        return found if isinstance(found, Budget) else None

    def execute_operation(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        budget = self.budget
        if budget is not None and self.operation.operation != OperationType.QUERY:
            budget.for_mutation()
        return super().execute_operation(*args, **kwargs)

    def complete_list_value(  # type: ignore[override]
        self,
        return_type: Any,
        field_details_list: Any,
        info: Any,
        path: Any,
        result: Any,
        position_context: Any,
    ) -> Any:
        budget = self.budget
        if budget is not None and not budget.spend(
            len(result) if hasattr(result, "__len__") else 1
        ):
            return []  # stopped: thrown away by the HTTP handler, only made cheaply
        return super().complete_list_value(
            return_type, field_details_list, info, path, result, position_context
        )

    def _field(self, parent_type: Any, node: Any) -> tuple[str, Any, bool, bool] | None:
        """How a field takes the fast path: (name, scalar type, required, dict_first);
        None when it cannot (arguments, a resolver of its own, an object or list type)."""
        cache = self.__dict__.setdefault("_oxy_fields", {})
        key = (parent_type.name, id(node))
        if key in cache and cache[key][0] is node:
            return cache[key][1]
        found = None
        field_def = self.schema.get_field(parent_type, node.name.value)
        if field_def is not None and not node.arguments and not field_def.args:
            resolve = field_def.resolve
            dict_first = resolve is not None and getattr(resolve, "dict_first", False)
            kind = field_def.type
            required = isinstance(kind, GraphQLNonNull)
            leaf = kind.of_type if required else kind
            if (resolve is None or dict_first) and is_leaf_type(leaf):
                found = (node.name.value, leaf, required, dict_first)
        cache[key] = (node, found)
        return found

    def _row(self, parent_type: Any, grouped_field_set: Any) -> list[tuple[str, Any]] | None:
        """Every selected field's plan, worked out once per selection (the rows of a list
        share it); None when one of them cannot take the fast path."""
        cache = self.__dict__.setdefault("_oxy_rows", {})
        key = (parent_type.name, id(grouped_field_set))
        if key in cache and cache[key][0] is grouped_field_set:
            return cache[key][1]
        plan: list[tuple[str, Any]] | None = []
        for response_name, details in grouped_field_set.items():
            field = self._field(parent_type, details[0].node)
            if field is None:
                plan = None
                break
            plan.append((response_name, field))
        cache[key] = (grouped_field_set, plan)
        return plan

    @staticmethod
    def _value(source: dict[str, Any], field: tuple[str, Any, bool, bool]) -> Any:
        """The field's answer from the dict, or ``Undefined``: graphql-core's own path
        then answers it (a resolver to call, a null where one is required, a bad value)."""
        name, leaf, required, dict_first = field
        if dict_first and name not in source:
            return Undefined
        value = source.get(name)
        if value is None:
            return Undefined if required else None
        try:
            out = leaf.serialize(value)
        except Exception:
            return Undefined
        return Undefined if out is None else out

    def execute_fields(  # type: ignore[override]
        self,
        parent_type: Any,
        source_value: Any,
        path: Any,
        grouped_field_set: Any,
        position_context: Any,
    ) -> Any:
        budget = self.budget
        if budget is not None:
            if not budget.spend(len(grouped_field_set)):
                return {}  # stopped: thrown away by the HTTP handler, only made cheaply
            if budget.turn_due():
                return self._after_turn(
                    budget, parent_type, source_value, path, grouped_field_set, position_context
                )
        return self._fields(parent_type, source_value, path, grouped_field_set, position_context)

    async def _after_turn(self, budget: Budget, *args: Any) -> Any:
        """The fields of one object, in the request's next turn: an answer completed
        without an await (rows read once, then served from memory) would keep every other
        request, ``/healthz`` included, waiting until it is whole."""
        await budget.turn()
        if budget.exceeded is not None:
            return {}
        result = self._fields(*args)
        return await result if self.is_awaitable(result) else result

    def _fields(
        self,
        parent_type: Any,
        source_value: Any,
        path: Any,
        grouped_field_set: Any,
        position_context: Any,
    ) -> Any:
        if type(source_value) is dict and self.middleware_manager is None:
            plan = self._row(parent_type, grouped_field_set)
            if plan is not None:
                value = self._value
                results: dict[str, Any] = {}
                for response_name, field in plan:
                    results[response_name] = answer = value(source_value, field)
                    if answer is Undefined:
                        break
                else:
                    return results
        return super().execute_fields(
            parent_type, source_value, path, grouped_field_set, position_context
        )

    def execute_field(  # type: ignore[override]
        self,
        parent_type: Any,
        source: Any,
        field_details_list: Any,
        path: Any,
        position_context: Any,
    ) -> Any:
        if type(source) is dict and self.middleware_manager is None:
            field = self._field(parent_type, field_details_list[0].node)
            if field is not None:
                value = self._value(source, field)
                if value is not Undefined:
                    return value
        budget = self.budget
        # graphql-core's path: a resolver, a coroutine, its bookkeeping
        if budget is not None and not budget.spend(SLOW_FIELD - 1):
            return None  # stopped: not completed, so no null check and no error to build
        return super().execute_field(
            parent_type, source, field_details_list, path, position_context
        )
