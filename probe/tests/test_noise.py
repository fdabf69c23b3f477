"""Issue 10, part 3: the steady median's interval, the adaptive steady phase, the machine's
state per phase and the noisy rule (doc/probe.md, "Steady state: the interval and the
budget"; doc/results-schema.md, "Noise"). No assertion on how fast the machine is."""

import math
import subprocess
import sys
import time

from kind_requests import assert_pass, run_kind

from compatlab_probe.measure import timing
from compatlab_probe.protocol.request import MeasureSettings


def test_median_interval_is_the_order_statistics_of_the_binomial_rule():
    xs = [float(i) for i in range(1, 101)]  # 1..100
    # n = 100: j = floor((100 - 19.6) / 2) = 40, k = ceil(1 + (100 + 19.6) / 2) = 61
    assert timing.median_ci(xs) == (40.0, 61.0)
    assert timing.median_ci(list(reversed(xs))) == (40.0, 61.0)
    assert timing.median_ci([3.0, 1.0, 2.0]) == (1.0, 3.0)  # below 6: (min, max)
    low, high = timing.median_ci([5.0] * 50)
    assert low == high == 5.0 and timing.ci_tight([5.0] * 50)
    assert not timing.ci_tight([1.0, 2.0] * 50)


class FakeClock:
    """measure's clock, advanced only by the calls themselves: timing without the machine."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self):
        return self.now


def test_the_steady_phase_times_calls_until_min_time_has_passed(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(timing, "time", clock)

    def uneven():  # mostly 1 ms, every tenth call 50 ms: a heavy tail above the p90
        uneven.calls += 1
        clock.now += 0.05 if uneven.calls % 10 == 0 else 0.001
    uneven.calls = 0

    times = timing.timed_calls(uneven, MeasureSettings(warmup=0, min_iters=1, min_time_s=0.3))
    # The timed calls add up to min_time_s, and the phase stops within a tenth more calls
    # (the rule is looked at every len // 10 calls) plus the one call that crossed it.
    assert sum(times) >= 0.3
    assert sum(times) <= 0.3 * 1.1 + 0.05 + 1e-9
    assert len(times) * timing.percentiles(times)[1] < 0.3  # the p90 alone would undercount


def test_the_steady_phase_goes_on_until_the_interval_is_tight_or_the_budget_ends(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(timing, "time", clock)
    flip = iter(range(10**9))

    def wobbly():  # 1 ms and 2 ms in turn: the median's interval never tightens
        clock.now += 0.001 if next(flip) % 2 else 0.002

    params = MeasureSettings(warmup=0, min_iters=10, min_time_s=0.0, max_time_s=0.3)
    times = timing.timed_calls(wobbly, params)
    assert clock.now >= 0.3 and len(times) > 10  # the budget ended it
    # Without a budget (a request that states none) it stops at the minimums.
    assert len(timing.timed_calls(wobbly, MeasureSettings(warmup=0, min_iters=10, min_time_s=0.0))) == 10

    def steady_ms():
        clock.now += 0.001
    start = clock.now
    tight = timing.timed_calls(steady_ms, MeasureSettings(0, 10, 0.0, 30.0))
    assert len(tight) == 10 and clock.now - start < 1.0  # tight at the minimums
    figures = timing.steady_figures(times)
    assert figures["steady_ci_low_s"] <= figures["steady_median_s"] <= figures["steady_ci_high_s"]
    assert figures["steady_iters"] == len(times)


def test_machine_state_records_load_cpu_time_switches_and_runnable_tasks():
    with timing.MachineState() as spin:
        end = time.perf_counter() + 0.2
        while time.perf_counter() < end:
            pass
    m = spin.metrics("steady")
    assert set(m) == {"steady_load_avg", "steady_cpu_per_wall", "steady_invol_switches", "steady_procs_running"}
    assert m["steady_load_avg"] >= 0 and m["steady_invol_switches"] >= 0 and m["steady_procs_running"] >= 0
    with timing.MachineState() as asleep:
        time.sleep(0.2)
    assert asleep.cpu_per_wall < 0.5  # sleeping is no CPU time, on any machine
    assert any("cpu/wall" in r for r in asleep.noisy_reasons(cores=64, threads=1, on_cpu=True))
    assert not any("cpu/wall" in r for r in asleep.noisy_reasons(cores=64, threads=1, on_cpu=False))


def test_a_phases_cpu_time_counts_the_subprocesses_it_waited_for():
    # inductor's first call runs the C++ compiler as a subprocess: its CPU time is the test's.
    code = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"
    with timing.MachineState() as state:
        subprocess.run([sys.executable, "-c", code], check=True)
    assert state.cpu_s >= 0.3  # the child's 0.3 s of CPU, whatever the machine's load
    assert state.cpu_per_wall > 0


def test_the_noisy_rule_names_each_rule_that_held():
    state = timing.MachineState()
    state.loads, state.others, state.wall_s, state.cpu_s, state.invol = [3.5, 4.0], [3, 2], 1.0, 1.0, 500
    reasons = state.noisy_reasons(cores=2, threads=2, on_cpu=True)
    assert reasons == ["2.5 other runnable tasks > 0 free cores", "500 involuntary switches/s > 100"]
    state.loads, state.others, state.invol = [0.5], [0], 3
    assert state.noisy_reasons(cores=2, threads=2, on_cpu=True) == []
    state.others = [1, 1]
    assert state.noisy_reasons(cores=4, threads=2, on_cpu=True) == []  # two cores free


def test_a_rank_of_a_group_is_not_noisy_for_waiting_on_and_being_preempted_by_its_peers():
    state = timing.MachineState()
    state.loads, state.others, state.wall_s, state.cpu_s, state.invol = [1.0], [0, 0], 0.2, 0.08, 300
    assert state.noisy_reasons(cores=2, threads=1, on_cpu=True) == ["cpu/wall 0.40 < 0.5",
                                                                    "1500 involuntary switches/s > 100"]
    assert state.noisy_reasons(cores=2, threads=1, on_cpu=True, ranks=2) == []
    # Its ranks' threads take the cores: another runnable task is other load.
    state.others = [1, 1]
    assert state.noisy_reasons(cores=2, threads=1, on_cpu=True, ranks=2) == ["1.0 other runnable tasks > 0 free cores"]


def test_a_load_average_left_over_from_a_busy_minute_does_not_make_a_quiet_phase_noisy():
    # The 1-minute load average still above the cores after the other job ended: nothing
    # else runnable, the test had its CPU all the time.
    state = timing.MachineState()
    state.loads, state.others, state.wall_s, state.cpu_s, state.invol = [2.6, 2.5], [0, 0], 1.0, 1.0, 3
    assert state.noisy_reasons(cores=2, threads=1, on_cpu=True) == []
    state.others = []  # the runnable tasks could not be read: the load average decides
    assert state.noisy_reasons(cores=2, threads=1, on_cpu=True) == ["load average 2.60 > 2 cores"]


def test_a_model_row_stores_the_state_the_interval_and_the_verdict():
    result = run_kind("forward", "gpt2")
    assert_pass(result)
    m = result["metrics"]
    assert m["steady_ci_low_s"] <= m["steady_median_s"] <= m["steady_ci_high_s"]
    for phase in ("prepare", "steady"):
        assert m[f"{phase}_load_avg"] >= 0 and m[f"{phase}_cpu_per_wall"] >= 0
        assert m[f"{phase}_invol_switches"] >= 0 and m[f"{phase}_procs_running"] >= 0
    assert m["noisy"] in (0, 1) and (m["noisy"] == 1) == bool(m["noisy_reason"])
    assert m["prepare_noisy"] in (0, 1) and (m["prepare_noisy"] == 1) == bool(m["prepare_noisy_reason"])


def _fake_task(proc, pid, tid, state, pgrp, comm="python"):
    task = proc / str(pid) / "task" / str(tid)
    task.mkdir(parents=True)
    # /proc's stat line: pid (comm) state ppid pgrp session ...; comm may hold ") ".
    (task / "stat").write_text(f"{tid} ({comm}) {state} 1 {pgrp} {pgrp} 0 -1 4194560 0 0\n")


def test_other_running_counts_runnable_tasks_outside_the_tests_process_group_and_parent(tmp_path):
    proc = tmp_path / "proc"
    _fake_task(proc, 100, 100, "R", 100)            # the test's main thread
    _fake_task(proc, 100, 101, "S", 100)            # an OpenMP worker gone to sleep
    _fake_task(proc, 100, 102, "R", 100)            # one still running
    _fake_task(proc, 150, 150, "R", 100, "cc1plus")  # inductor's C++ compiler, the test's child
    _fake_task(proc, 200, 200, "R", 200, "a (b) R")  # another process, running
    _fake_task(proc, 200, 201, "R", 200)            # and its second thread
    _fake_task(proc, 300, 300, "S", 300)            # another, asleep
    _fake_task(proc, 15, 15, "R", 0, "rcu_preempt")  # a kernel thread, running
    _fake_task(proc, 90, 90, "R", 90, "compatlab")   # the supervisor, reading a stage mark
    _fake_task(proc, 90, 91, "R", 90, "compatlab")
    (proc / "stat").write_text("procs_running 9\n")  # not a task: never read
    (proc / "400").mkdir()                          # gone: no task directory
    assert timing._other_running(str(proc), own_group=100, parent=90) == 3
    assert timing._other_running(str(proc), own_group=200, parent=90) == 4
    assert timing._other_running(str(proc), own_group=100, parent=1) == 5
    assert timing._other_running(str(tmp_path / "missing"), own_group=100) is None
    # This machine's own /proc: this process's running main thread is its own group's.
    assert timing._other_running() >= 0
    assert timing._other_running(own_group=-1) >= 1


def test_a_burner_on_every_core_makes_the_steady_phase_noisy():
    cores = timing.usable_cores()
    code = "import os, time\nos.nice(19)\nend = time.monotonic() + 60\nwhile time.monotonic() < end: pass\n"
    # Sessions of their own: other load on the machine, not work of the test's process group.
    burners = [subprocess.Popen([sys.executable, "-c", code], start_new_session=True) for _ in range(cores)]
    try:
        time.sleep(0.3)
        result = run_kind("forward", "gpt2")
    finally:
        for b in burners:
            b.kill()
            b.wait()
    assert_pass(result)
    m = result["metrics"]
    assert m["noisy"] == 1 and "other runnable tasks" in m["noisy_reason"], m["noisy_reason"]
    assert m["prepare_noisy"] == 1 and "other runnable tasks" in m["prepare_noisy_reason"], m["prepare_noisy_reason"]
    assert m["steady_procs_running"] >= 1 and not math.isnan(m["steady_cpu_per_wall"])
