"""The cyclic garbage collector kept out of a run's way.

Why: a run of thousands of cases holds what it has finished (results, the history's
rows in flight), so every full pass of the collector walks more objects than the last,
and young passes come every 700 allocations. Measured on a 10,000-case run, the
collector took about a fifth of the run's time while finding next to nothing: what a
run makes is freed by reference counting, not left in cycles.

:func:`relaxed` freezes what exists when a run starts (modules, the project, the plan:
never scanned again during the run) and collects less often while it runs, then puts
both back. It nests and may be entered by runs side by side (a server's): only the
outermost entry changes the collector, and the last one out restores it.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

__all__ = ["relaxed"]

#: Allocations between young collections (the default is 700), and the older
#: generations' counts: a 100,000-case run still collects, a few hundred times.
_THRESHOLDS = (50_000, 50, 1_000)

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, int, int] | None = None


@contextlib.contextmanager
def relaxed() -> Iterator[None]:
    """Collect rarely while inside, over objects made inside only (see the module)."""
    global _depth, _saved
    with _lock:
        _depth += 1
        if _depth == 1 and gc.isenabled():
            _saved = gc.get_threshold()
            gc.freeze()
            gc.set_threshold(*(max(a, b) for a, b in zip(_saved, _THRESHOLDS, strict=True)))
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved is not None:
                gc.set_threshold(*_saved)
                gc.unfreeze()
                _saved = None
