"""A/B branches (issue 16): one test case run on several model configurations at once,
ranked on the seed's winner criteria, with the Pareto front and, over iterations, a
significance call (``ranking``: pure functions on the measured numbers)."""

from __future__ import annotations

__all__: list[str] = []
