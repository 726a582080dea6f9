"""``evaluate`` and its configs under DeepEval's module path (``deepeval.evaluate``,
``deepeval.evaluate.configs``).

Importing this module makes ``oxyeval.testing.evaluate`` name it rather than the
function (Python sets a package's attribute to a submodule once it is imported), so
the module is callable: ``from oxyeval.testing import evaluate; evaluate(...)`` keeps
working whichever was imported first."""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

from . import _configs as configs
from ._configs import AsyncConfig, CacheConfig, DisplayConfig, ErrorConfig
from ._evaluate import a_evaluate, assert_test
from ._evaluate import evaluate as _evaluate

__all__ = [
    "AsyncConfig",
    "CacheConfig",
    "DisplayConfig",
    "ErrorConfig",
    "a_evaluate",
    "assert_test",
    "configs",
    "evaluate",
]

evaluate = _evaluate
sys.modules.setdefault(f"{__name__}.configs", configs)


class _CallableModule(ModuleType):
    """This module, callable as :func:`evaluate`."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _evaluate(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
