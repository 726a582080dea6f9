"""``evaluate``'s settings as DeepEval groups them (``deepeval.evaluate.configs``).

They map onto the SDK's run: ``AsyncConfig.max_concurrent`` is the run's concurrency,
``DisplayConfig.print_results`` whether the table is printed, ``ErrorConfig`` whether
a metric that could not score raises (the default, as DeepEval's) or is reported and
the run goes on, ``CacheConfig.use_cache`` whether the judges' answers kept from an
earlier run are replayed. Settings for a hosted dashboard (``show_indicator``,
``results_folder``...) are accepted and have no effect here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["AsyncConfig", "CacheConfig", "DisplayConfig", "ErrorConfig", "Settings"]


@dataclass
class AsyncConfig:
    """How much runs at once: ``max_concurrent`` metric measurements (one run's
    budget); ``run_async=False`` measures one at a time. ``throttle_value`` (seconds
    between starts in DeepEval) is accepted; the models' own limits pace the calls."""

    run_async: bool = True
    throttle_value: float = 0
    max_concurrent: int = 20

    def __post_init__(self) -> None:
        if isinstance(self.max_concurrent, bool) or not isinstance(self.max_concurrent, int):
            raise TypeError("AsyncConfig.max_concurrent must be an int")
        if self.max_concurrent < 1:
            raise ValueError("AsyncConfig.max_concurrent must be at least 1")
        if self.throttle_value < 0:
            raise ValueError("AsyncConfig.throttle_value must be at least 0")

    @property
    def concurrency(self) -> int:
        return self.max_concurrent if self.run_async else 1


@dataclass
class DisplayConfig:
    """What ``evaluate`` prints: the results table unless ``print_results=False``."""

    show_indicator: bool = True
    print_results: bool = True
    verbose_mode: bool | None = None
    display_option: Any = None
    results_folder: str | None = None
    results_subfolder: str | None = None
    truncate_passing_cases: bool = True
    inspect_after_run: bool = True
    file_type: str | None = None
    file_output_dir: str | None = None


@dataclass
class CacheConfig:
    """``use_cache``: replay the judges' answers kept by an earlier run of the same
    cases (off by default, as DeepEval's); ``write_cache``: keep this run's."""

    write_cache: bool = True
    use_cache: bool = False


@dataclass
class ErrorConfig:
    """``ignore_errors``: a metric that could not score (its judge failed) is reported
    as an error and ``evaluate`` returns; by default it raises, as DeepEval's does.
    ``skip_on_missing_params``: a metric whose test case lacks a field it reads is
    skipped for that case instead of being an error."""

    ignore_errors: bool = False
    skip_on_missing_params: bool = False


@dataclass
class Settings:
    """``evaluate``'s settings, from its arguments and DeepEval's configs."""

    concurrency: int
    print_results: bool
    cache: bool | None
    errors: ErrorConfig

    @classmethod
    def of(
        cls,
        async_config: AsyncConfig | None,
        display_config: DisplayConfig | None,
        cache_config: CacheConfig | None,
        error_config: ErrorConfig | None,
        concurrency: int | None = None,
        print_results: bool | None = None,
        cache: bool | None = None,
    ) -> Settings:
        if concurrency is None:
            concurrency = async_config.concurrency if async_config is not None else 8
        if print_results is None:
            print_results = (display_config or DisplayConfig()).print_results
        if cache is None and cache_config is not None:
            cache = None if cache_config.use_cache else False
        return cls(concurrency, bool(print_results), cache, error_config or ErrorConfig())
