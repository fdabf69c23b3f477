"""Timing and memory measurement of the test phases (build, prepare, steady)."""

import math
import statistics
import time

from . import osutil

DEFAULT_MEASURE = {"warmup": 3, "min_iters": 10, "min_time_s": 1.0}


def measure_params(request):
    """The request's `measure` dict completed with defaults, as numbers."""
    given = request.get("measure") or {}
    return {
        "warmup": int(given.get("warmup", DEFAULT_MEASURE["warmup"])),
        "min_iters": int(given.get("min_iters", DEFAULT_MEASURE["min_iters"])),
        "min_time_s": float(given.get("min_time_s", DEFAULT_MEASURE["min_time_s"])),
    }


def timed(fn):
    """(fn's return value, seconds it took)."""
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def steady_state(fn, params, sync=lambda: None):
    """Runs `fn` warmup times, then until both min_iters and min_time_s are reached.

    Returns (median seconds, p90 seconds, iterations measured, fastest seconds).
    """
    for _ in range(params["warmup"]):
        fn()
    sync()
    times = []
    begin = time.perf_counter()
    while len(times) < max(1, params["min_iters"]) or time.perf_counter() - begin < params["min_time_s"]:
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    median, p90 = percentiles(times)
    return median, p90, len(times), min(times)


def percentiles(times):
    """(median, nearest-rank p90) of a non-empty list of seconds: the p90 is the
    smallest value with at least 90% of the values at or below it."""
    times = sorted(times)
    p90 = times[min(len(times) - 1, max(0, math.ceil(0.9 * len(times)) - 1))]
    return statistics.median(times), p90


class PeakRss:
    """Host peak RSS over a phase: the kernel high-water mark, reset at start()."""

    def __init__(self):
        self.method = ""

    def start(self):
        self.method = "vmhwm_after_clear_refs" if osutil.reset_peak_rss() else "vmhwm_since_process_start"

    def read(self):
        return osutil.peak_rss_bytes()
