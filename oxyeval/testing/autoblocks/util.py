"""``autoblocks.testing.util``: a test case's hash helper."""

from __future__ import annotations

from .._evaluators import md5

__all__ = ["md5"]
