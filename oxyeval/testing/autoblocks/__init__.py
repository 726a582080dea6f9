"""Autoblocks' testing SDK, module for module: ``from autoblocks.testing.X import Y``
becomes ``from oxyeval.testing.autoblocks.X import Y`` (``models``, ``evaluators``,
``util``, ``run``), and the suite runs on oxyeval's pipeline (its history, its judge,
its one decision) with nothing sent to Autoblocks.

The rule: only the import prefix changes. ``oxyeval.testing.models`` is DeepEval's
(custom judge models), so Autoblocks' modules live one level down, here; the names they
hold are also importable from ``oxyeval.testing`` itself, where oxyeval's own
``HasAllSubstrings``/``IsEqual``/``IsValidJson`` (ready-made, built from arguments) keep
their names, while ``oxyeval.testing.autoblocks.evaluators`` holds Autoblocks' classes
of those names (bases to subclass with mappers).
"""

from __future__ import annotations

__all__: list[str] = []
