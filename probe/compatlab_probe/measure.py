"""Timing and memory measurement of the test phases (build, prepare, steady)."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from typing import Any

from . import osutil
from .request import MeasureSettings


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """(fn's return value, seconds it took)."""
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def steady_state(fn: Callable[[], Any], params: MeasureSettings,
                 sync: Callable[[], Any] = lambda: None) -> tuple[float, float, int, float]:
    """Runs `fn` warmup times, then until both min_iters and min_time_s are reached.

    Returns (median seconds, p90 seconds, iterations measured, fastest seconds).
    """
    for _ in range(params.warmup):
        fn()
    sync()
    times = []
    begin = time.perf_counter()
    while len(times) < max(1, params.min_iters) or time.perf_counter() - begin < params.min_time_s:
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    median, p90 = percentiles(times)
    return median, p90, len(times), min(times)


def percentiles(times: list[float]) -> tuple[float, float]:
    """(median, nearest-rank p90) of a non-empty list of seconds: the p90 is the
    smallest value with at least 90% of the values at or below it."""
    times = sorted(times)
    p90 = times[min(len(times) - 1, max(0, math.ceil(0.9 * len(times)) - 1))]
    return statistics.median(times), p90


class PeakRss:
    """Host peak RSS over a phase: the kernel high-water mark, reset at start()."""

    def __init__(self) -> None:
        self.method = ""

    def start(self) -> None:
        self.method = "vmhwm_after_clear_refs" if osutil.reset_peak_rss() else "vmhwm_since_process_start"

    def read(self) -> int | None:
        return osutil.peak_rss_bytes()
