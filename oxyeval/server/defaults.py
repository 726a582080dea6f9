"""The server's default limits, in a module that imports nothing: ``oxy serve``'s options
show them before it knows whether the server extra (Ariadne, uvicorn) is installed."""

from __future__ import annotations

__all__ = [
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_HEADER_TIMEOUT",
    "DEFAULT_MAX_BODY",
    "DEFAULT_MAX_CLIENT_CONNECTIONS",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_COST",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_VALUES",
    "DEFAULT_QUERY_TIMEOUT",
]

#: Fields an operation may nest.
DEFAULT_MAX_DEPTH = 10
#: Bytes of a request's body.
DEFAULT_MAX_BODY = 1_000_000
#: The estimated cost an operation may have (see ``limits.query_limits``): two unbounded
#: lists nested (every prompt's cases, ~100 x 100 x their fields) fit, a third does not.
DEFAULT_MAX_COST = 500_000
#: Values one answer may hold while it is built: objects' fields and list items, a field
#: that takes graphql-core's general path (a resolver of its own, an object or a list: a
#: coroutine, a resolve info and a path while it is pending) counted as 10.
DEFAULT_MAX_VALUES = 500_000
#: Seconds a query may run (a mutation that runs models waits for its run instead).
DEFAULT_QUERY_TIMEOUT = 30.0
#: Connections open at once, all clients together.
DEFAULT_MAX_CONNECTIONS = 256
#: Connections one client address may hold (a browser opens at most 6 to one host).
DEFAULT_MAX_CLIENT_CONNECTIONS = 32
#: Seconds a request's line and headers may take to arrive.
DEFAULT_HEADER_TIMEOUT = 10.0
#: Seconds a request's body may take to arrive after its headers (1 MB at 33 KB/s).
DEFAULT_BODY_TIMEOUT = 30.0
