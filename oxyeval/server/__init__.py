"""Stage 10, the server: ``oxy serve``, the GraphQL Testing API and the dashboard.

One process over one project and its history. ``schema.graphql`` is the contract (the
Testing API spec's types, fields and inputs, plus prompts, runs of every kind and run comparison);
``resolvers`` binds it to ``service``, which calls the same store, suites and report
functions the CLI does; ``guard`` holds the token, size, content-type, host, origin and
cross-site rules, ``limits`` what a query may cost (before it runs and while it runs),
``connections`` how many connections and how long each may take (``defaults`` their
numbers); ``events`` relays the runs it starts to ``GET /events``; ``dashboard/`` is the
page, served from the package (no CDN). Needs ``pip install 'oxyeval[serve]'``
(Ariadne, uvicorn); imported only by ``oxy serve`` and by code that asks for it.

    from oxyeval.server import TestingService, create_app
    app = create_app(TestingService("examples"))   # any ASGI server, or httpx's ASGITransport
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "ServeError": "app",
    "create_app": "app",
    "serve": "app",
    "TestingService": "service",
    "EventHub": "events",
    "event_json": "events",
    "DEFAULT_MAX_BODY": "defaults",
    "DEFAULT_MAX_CLIENT_CONNECTIONS": "defaults",
    "DEFAULT_MAX_CONNECTIONS": "defaults",
    "DEFAULT_MAX_COST": "defaults",
    "DEFAULT_MAX_DEPTH": "defaults",
    "DEFAULT_MAX_VALUES": "defaults",
    "DEFAULT_QUERY_TIMEOUT": "defaults",
    "is_loopback": "guard",
    "schema_text": "resolvers",
}
__all__ = [
    "DEFAULT_MAX_BODY",
    "DEFAULT_MAX_CLIENT_CONNECTIONS",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_COST",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_VALUES",
    "DEFAULT_QUERY_TIMEOUT",
    "EventHub",
    "ServeError",
    "TestingService",
    "create_app",
    "event_json",
    "is_loopback",
    "schema_text",
    "serve",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .app import ServeError, create_app, serve
    from .defaults import (
        DEFAULT_MAX_BODY,
        DEFAULT_MAX_CLIENT_CONNECTIONS,
        DEFAULT_MAX_CONNECTIONS,
        DEFAULT_MAX_COST,
        DEFAULT_MAX_DEPTH,
        DEFAULT_MAX_VALUES,
        DEFAULT_QUERY_TIMEOUT,
    )
    from .events import EventHub, event_json
    from .guard import is_loopback
    from .resolvers import schema_text
    from .service import TestingService
