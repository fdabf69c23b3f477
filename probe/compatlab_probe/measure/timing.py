"""Timing and memory measurement of the test phases (build, prepare, steady)."""

from __future__ import annotations

import math
import os
import resource
import statistics
import time
from collections.abc import Callable
from typing import Any

from ..host import osutil
from ..protocol.request import MeasureSettings


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """(fn's return value, seconds it took)."""
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


# The steady phase repeats until the median's 95 % confidence interval spans at most
# CI_REL_WIDTH of the median (doc/probe.md, "Steady state"), or the request's max_time_s
# budget has passed, or MAX_ITERS calls were timed; always after min_iters and min_time_s.
CI_CONFIDENCE_Z = 1.96   # 95 %, normal approximation of the binomial
CI_REL_WIDTH = 0.05      # (high - low) / median
MAX_ITERS = 100_000


def median_ci(times: list[float]) -> tuple[float, float]:
    """The distribution-free 95 % confidence interval of the median of `times` (non-empty):
    the order statistics x_(j) and x_(k) (1-based, sorted) with
    j = floor((n - 1.96 sqrt(n)) / 2) and k = ceil(1 + (n + 1.96 sqrt(n)) / 2), clamped to
    1..n (Conover, Practical Nonparametric Statistics, the binomial interval of the median).
    Below 6 values it is (min, max), whose coverage is 1 - 2 / 2^n."""
    xs = sorted(times)
    n = len(xs)
    half = CI_CONFIDENCE_Z * math.sqrt(n)
    j = max(1, math.floor((n - half) / 2))
    k = min(n, math.ceil(1 + (n + half) / 2))
    return xs[j - 1], xs[k - 1]


def ci_tight(times: list[float]) -> bool:
    """The interval of `times` spans at most CI_REL_WIDTH of their median."""
    if len(times) < 6:
        return False
    low, high = median_ci(times)
    median = statistics.median(times)
    return median > 0 and (high - low) <= CI_REL_WIDTH * median


def go_on(times: list[float], params: MeasureSettings, elapsed_s: float, spent: bool = False) -> bool:
    """Whether the steady phase times another call (or block), `elapsed_s` into it: never
    once the budget is `spent` (params.budget_spent) with a call timed; else below min_iters
    or min_time_s; else, with a budget, while the interval is not tight (and MAX_ITERS)."""
    if not times:
        return True
    if spent:
        return False
    if len(times) < max(1, params.min_iters) or elapsed_s < params.min_time_s:
        return True
    return params.max_time_s > 0 and not ci_tight(times) and len(times) < MAX_ITERS


def steady_state(fn: Callable[[], Any], params: MeasureSettings,
                 sync: Callable[[], Any] = lambda: None) -> tuple[float, float, int, float]:
    """Runs `fn` warmup times, then while go_on(): min_iters and min_time_s first, then on
    until the median's interval is tight, all within params.max_time_s (the measurement's
    budget, counted from the first warm-up call; at least one measured call).

    Returns (median seconds, p90 seconds, iterations measured, fastest seconds); the
    interval is steady_figures(times)'s.
    """
    figures = steady_figures(timed_calls(fn, params, sync))
    return (figures["steady_median_s"], figures["steady_p90_s"], figures["steady_iters"],
            figures["steady_min_s"])


def timed_calls(fn: Callable[[], Any], params: MeasureSettings,
                sync: Callable[[], Any] = lambda: None) -> list[float]:
    """The warm-up calls, then the steady calls' seconds (steady_state's rule)."""
    begin = time.perf_counter()
    for _ in range(params.warmup):
        if params.budget_spent(begin, time.perf_counter()):
            break
        fn()
    sync()
    times: list[float] = []
    measured = time.perf_counter()
    check_at = 0
    while True:
        # The interval is sorted out only every so often (a tenth more calls): cheap. The
        # budget is checked before every call.
        now = time.perf_counter()
        spent = params.budget_spent(begin, now)
        if spent or len(times) >= check_at:
            if not go_on(times, params, now - measured, spent):
                break
            check_at = len(times) + max(1, len(times) // 10)
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return times


def percentiles(times: list[float]) -> tuple[float, float]:
    """(median, nearest-rank p90) of a non-empty list of seconds: the p90 is the
    smallest value with at least 90% of the values at or below it."""
    times = sorted(times)
    p90 = times[min(len(times) - 1, max(0, math.ceil(0.9 * len(times)) - 1))]
    return statistics.median(times), p90


# What the stored interval claims (doc/probe.md, "Steady state: drift"): the machine's speed
# for the same calls drifts over seconds, between levels a steady window of about 1 s sits
# in one of, so the interval over the window's calls (which takes them for independent) is
# widened to the hull of it, the interval of the window's block medians, and the median
# ± STEADY_DRIFT_FLOOR: this machine's drift between runs of the same code, measured by the
# lead on the quiet 2-core VM (2026-12-05): one repro script's compiled gpt_neox in 28 fresh
# processes measured 0.485 to 0.590 ms, each with an interval of about ±2 %; ±10 % is the
# smallest round floor under which any two of them overlap (needs (0.590 - 0.485) / 1.075).
STEADY_DRIFT_FLOOR = 0.10      # of the median, on each side
STEADY_TIME_BLOCKS = 8         # consecutive blocks a list of timed calls is split into
STEADY_BLOCK_MIN_CALLS = 4     # ... when each block gets at least this many calls


def time_blocks(times: list[float], blocks: int = STEADY_TIME_BLOCKS,
                min_calls: int = STEADY_BLOCK_MIN_CALLS) -> list[float]:
    """The medians of `times` (in the order timed) split into `blocks` consecutive blocks
    as equal as can be (the first ones a call longer); [] below `blocks * min_calls` calls."""
    if blocks < 2 or len(times) < blocks * min_calls:
        return []
    size, extra = divmod(len(times), blocks)
    medians, start = [], 0
    for i in range(blocks):
        end = start + size + (1 if i < extra else 0)
        medians.append(statistics.median(times[start:end]))
        start = end
    return medians


def claimed_interval(times: list[float], block_medians: list[float]) -> tuple[float, float]:
    """The stored interval of the median of `times` (non-empty): the hull of median_ci(times)
    (the calls'), median_ci(block_medians) (below 6 blocks their min and max; none: nothing)
    and median ± STEADY_DRIFT_FLOOR × median."""
    low, high = median_ci(times)
    if block_medians:
        block_low, block_high = median_ci(block_medians)
        low, high = min(low, block_low), max(high, block_high)
    median = statistics.median(times)
    return min(low, median * (1 - STEADY_DRIFT_FLOOR)), max(high, median * (1 + STEADY_DRIFT_FLOOR))


def steady_figures(times: list[float], block_medians: list[float] | None = None) -> dict[str, Any]:
    """steady_median_s, steady_p90_s, steady_iters, steady_min_s, steady_ci_low_s and
    steady_ci_high_s of a non-empty list of call seconds, in the order timed; the interval
    is claimed_interval's over `block_medians` (the window's blocks, e.g. compile mode's
    compiled blocks; default: time_blocks(times))."""
    median, p90 = percentiles(times)
    low, high = claimed_interval(times, time_blocks(times) if block_medians is None else block_medians)
    return {"steady_median_s": median, "steady_p90_s": p90, "steady_iters": len(times),
            "steady_min_s": min(times), "steady_ci_low_s": low, "steady_ci_high_s": high}


# The noisy rule (doc/results-schema.md, "Noise"): a steady phase is noisy when any holds.
NOISY_LOAD_PER_CORE = 1.0      # 1-minute load average above the usable cores
NOISY_CPU_PER_WALL = 0.5       # CPU targets: the test's CPU time below half its wall time
NOISY_INVOL_PER_S = 100.0      # involuntary context switches per second of the phase
NOISY_MIN_WALL_S = 0.1         # the CPU-time and switch rules need a phase this long


def usable_cores() -> int:
    """CPUs this process may run on (its affinity mask)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except OSError:
        return max(1, os.cpu_count() or 1)


def _other_running(proc: str = "/proc", own_group: int | None = None,
                   parent: int | None = None) -> int | None:
    """Tasks in state R (running or runnable) outside the test's process group (`own_group`,
    default this process's) and its parent process (`parent`, default this process's): the
    test's own threads and the compilers it runs (inductor's C++ compiler) are its work, not
    other load, and its parent is the supervisor (the subreaper it was reparented to), which
    wakes to read the stage mark the test writes just before a phase's first sample. Each
    task's state and group come from one read of its stat line, so a thread of the test that
    stops running between two reads is never taken for another task (the machine-wide
    /proc/stat procs_running less the test's running threads, read a moment later, counted
    the test's OpenMP workers going to sleep: 24 of the 32 rows of an idle make sweep were
    noisy). None when `proc` cannot be listed."""
    group = os.getpgid(0) if own_group is None else own_group
    parent_pid = str(os.getppid() if parent is None else parent)
    try:
        pids = [name for name in os.listdir(proc) if name.isdigit() and name != parent_pid]
    except OSError:
        return None
    count = 0
    for pid in pids:
        try:
            tids = os.listdir(f"{proc}/{pid}/task")
        except OSError:  # gone since the listing
            continue
        for tid in tids:
            try:
                with open(f"{proc}/{pid}/task/{tid}/stat", "rb") as f:
                    # after "(comm)": state, ppid, pgrp, ...
                    state, _, pgrp = f.read().rsplit(b")", 1)[1].split()[:3]
            except (OSError, ValueError):
                continue
            if state == b"R" and int(pgrp) != group:
                count += 1
    return count


def _load1() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


class MachineState:
    """The machine's state over one measured phase (doc/results-schema.md, "Noise"):

        with MachineState() as state:   # samples at the start and the end
            ...the phase...
        state.metrics("steady")         # {steady_load_avg, steady_cpu_per_wall,
                                        #  steady_invol_switches, steady_procs_running}
        state.noisy_reasons(cores, threads, on_cpu)   # [] when quiet

    load_avg: the larger 1-minute load average of the two samples; cpu_per_wall: the
    process's user + system CPU time (every thread, getrusage RUSAGE_SELF, plus the
    subprocesses it waited for in the phase, RUSAGE_CHILDREN: inductor's C++ compiler runs
    as one) over the phase's wall time; invol_switches: the process's involuntary context switches in the phase;
    procs_running: the mean over the samples of the machine's runnable tasks outside the test's
    process group and its parent, the supervisor (`_other_running`).
    """

    def __init__(self) -> None:
        self.loads: list[float] = []
        self.others: list[int] = []
        self.wall_s = 0.0
        self.cpu_s = 0.0
        self.invol = 0
        self._start: tuple[float, Any] | None = None

    def sample(self) -> None:
        load, others = _load1(), _other_running()
        if load is not None:
            self.loads.append(load)
        if others is not None:
            self.others.append(others)

    def __enter__(self) -> MachineState:
        self.sample()
        self._start = (time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF),
                       resource.getrusage(resource.RUSAGE_CHILDREN))
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._start is not None
        end, usage = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        begin, before, children_before = self._start
        self.wall_s = end - begin
        self.cpu_s = sum(after.ru_utime - was.ru_utime + after.ru_stime - was.ru_stime
                         for after, was in ((usage, before), (children, children_before)))
        self.invol = usage.ru_nivcsw - before.ru_nivcsw
        self.sample()

    @property
    def load_avg(self) -> float | None:
        return max(self.loads) if self.loads else None

    @property
    def cpu_per_wall(self) -> float | None:
        return self.cpu_s / self.wall_s if self.wall_s > 0 else None

    @property
    def procs_running(self) -> float | None:
        return sum(self.others) / len(self.others) if self.others else None

    def metrics(self, phase: str) -> dict[str, Any]:
        return {f"{phase}_load_avg": self.load_avg, f"{phase}_cpu_per_wall": self.cpu_per_wall,
                f"{phase}_invol_switches": self.invol, f"{phase}_procs_running": self.procs_running}

    def noisy_reasons(self, cores: int, threads: int, on_cpu: bool, ranks: int = 1) -> list[str]:
        """Why the phase is noisy, one phrase per rule that holds (empty: quiet): more other
        runnable tasks than the cores the test's `threads` (per rank, `ranks` of them) leave
        free (when they cannot be read: the load average above `cores`); `on_cpu` targets:
        CPU time below NOISY_CPU_PER_WALL of the wall time; more than NOISY_INVOL_PER_S
        involuntary switches per second (these two only for a phase of at least
        NOISY_MIN_WALL_S, and only for a test of one rank: a rank of a group waits for its
        peers in every collective and is preempted by them and by its backend's threads,
        the group's own work: a 2-rank llama on the 2-core machine measured 1,466 and 1,704
        switches/s and cpu/wall 0.68 with nothing else running, noisy on every try).

        The 1-minute load average is an average of the minute before the sample (it decays
        by e^(-5/60) every 5 s), not of the phase: after two 60 s burners on the 2-core
        machine it stayed above 2 for about 40 s, marking phases timed on a quiet machine
        (their runnable others 0, cpu/wall 1.0) noisy; and it counts the test itself. So it
        decides only when the runnable tasks cannot be read (doc/results-schema.md, "Noise")."""
        reasons = []
        load, others, ratio = self.load_avg, self.procs_running, self.cpu_per_wall
        if others is None and load is not None and load > NOISY_LOAD_PER_CORE * cores:
            reasons.append(f"load average {load:.2f} > {cores} cores")
        free = max(0, cores - threads * max(1, ranks))
        if others is not None and others > free:
            reasons.append(f"{others:.1f} other runnable tasks > {free} free cores")
        # The scheduling rules: getrusage counts in clock ticks (a phase long enough), and a
        # group's ranks preempt and wait for one another (one rank only).
        scheduling = self.wall_s >= NOISY_MIN_WALL_S and ranks <= 1
        if on_cpu and scheduling and ratio is not None and ratio < NOISY_CPU_PER_WALL:
            reasons.append(f"cpu/wall {ratio:.2f} < {NOISY_CPU_PER_WALL}")
        if scheduling and self.invol / self.wall_s > NOISY_INVOL_PER_S:
            reasons.append(f"{self.invol / self.wall_s:.0f} involuntary switches/s > {NOISY_INVOL_PER_S:.0f}")
        return reasons


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
