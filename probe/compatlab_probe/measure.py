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
    """Runs `fn` warmup times, then until both min_iters and min_time_s are reached, or,
    with params.max_time_s, until that budget (counted from the first warm-up call) is spent
    with at least one measured call.

    Returns (median seconds, p90 seconds, iterations measured, fastest seconds).
    """
    begin = time.perf_counter()
    for _ in range(params.warmup):
        if params.budget_spent(begin, time.perf_counter()):
            break
        fn()
    sync()
    times = []
    measured = time.perf_counter()
    while not times or not params.budget_spent(begin, time.perf_counter()) and (
            len(times) < max(1, params.min_iters) or time.perf_counter() - measured < params.min_time_s):
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
    """The test's own host memory (doc/results-schema.md, "Host memory").

        peak.start()       # baseline: VmRSS after the target's set-up, before the build;
                           # the high-water mark (VmHWM) is reset to it
        ...build...
        peak.end_build()   # the build's peak; the mark is reset again
        ...prepare, steady...
        peak.read()        # {host_peak_rss_bytes, host_mem_bytes, host_mem_build_bytes,
                           #  host_rss_baseline_bytes}

    host_mem_bytes = max(build peak, later peak) - baseline: what the test itself made
    resident, not the interpreter, torch and transformers it was forked with.
    """

    def __init__(self) -> None:
        self.method = ""
        self.baseline: int | None = None
        self.build_peak: int | None = None

    def start(self) -> None:
        resets = osutil.reset_peak_rss()
        self.baseline = osutil.rss_bytes()
        self.method = "vmhwm_minus_baseline_rss" if resets else "vmhwm_since_process_start_minus_baseline_rss"

    def end_build(self) -> None:
        self.build_peak = osutil.peak_rss_bytes()
        osutil.reset_peak_rss()

    def read(self) -> dict[str, int | None]:
        later = osutil.peak_rss_bytes()
        peaks = [p for p in (self.build_peak, later) if p is not None]
        peak = max(peaks) if peaks else None

        def above(value):
            return None if value is None or self.baseline is None else max(0, value - self.baseline)

        return {"host_peak_rss_bytes": peak, "host_mem_bytes": above(peak),
                "host_mem_build_bytes": above(self.build_peak), "host_rss_baseline_bytes": self.baseline}
