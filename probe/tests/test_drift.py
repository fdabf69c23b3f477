"""Issue 46, item 5: the stored steady interval holds from run to run (doc/probe.md,
"Steady state: drift"): widened to the steady window's block medians and to the median ±
STEADY_DRIFT_FLOOR, so that two runs of the same code a drift level apart are not called
different by repro's (and diff's) rule. Timing without the machine: milliseconds."""

import math

from test_repro_generator import REQUEST, load

from compatlab_probe import repro
from compatlab_probe.measure import timing


def _calls(median_ms, half_width_ms, n=400):
    """n call seconds spread evenly over median ± half_width (ms), in a fixed scrambled order."""
    step = 2 * half_width_ms / (n - 1)
    return [(median_ms - half_width_ms + step * ((i * 37) % n)) / 1000 for i in range(n)]


def test_drift_between_levels_within_the_window_widens_the_interval_to_both():
    # The lead's one-process series (doc/probe.md, "Steady state: drift"): tight calls whose
    # level moves from 0.57 to 0.49 ms for a stretch and back. Seven eighths at one level.
    times = _calls(0.570, 0.005, 350) + _calls(0.490, 0.003, 150) + _calls(0.570, 0.005, 300)
    calls_low, calls_high = timing.median_ci(times)
    assert 0.560e-3 < calls_low < calls_high < 0.580e-3  # the calls' interval: one level only
    blocks = timing.time_blocks(times)
    assert len(blocks) == timing.STEADY_TIME_BLOCKS and min(blocks) < 0.50e-3 < 0.56e-3 < max(blocks)
    median = timing.percentiles(times)[0]
    assert min(blocks) < median * (1 - timing.STEADY_DRIFT_FLOOR)  # beyond the floor
    figures = timing.steady_figures(times)
    assert figures["steady_ci_low_s"] <= min(blocks) < 0.495e-3  # covers the lower level
    assert figures["steady_ci_high_s"] >= calls_high
    # Compile mode's blocks (4: their min and max) are passed in, not cut from the calls.
    four = timing.steady_figures(times, [0.57e-3, 0.40e-3, 0.57e-3, 0.57e-3])
    assert four["steady_ci_low_s"] == 0.40e-3
    # Too few calls for 8 blocks of 4: no blocks, the calls' interval and the floor only.
    assert timing.time_blocks(times[:31]) == [] and len(timing.time_blocks(times[:32])) == 8


def test_a_steady_series_is_stored_with_the_drift_floor():
    times = _calls(1.0, 0.002)
    median = timing.percentiles(times)[0]
    figures = timing.steady_figures(times)
    floor = timing.STEADY_DRIFT_FLOOR
    assert math.isclose(figures["steady_ci_low_s"], median * (1 - floor))
    assert math.isclose(figures["steady_ci_high_s"], median * (1 + floor))
    # A wider spread than the floor stays as measured.
    wide = timing.steady_figures(_calls(1.0, 0.9, 20))
    assert wide["steady_ci_low_s"] < 1e-3 * (1 - floor) and wide["steady_ci_high_s"] > 1e-3 * (1 + floor)


def _measured(median_ms, low_ms, high_ms, n=1000):
    """n call seconds whose median and calls' interval (median_ci) are the given ones: sorted,
    linear in rank between the interval's order statistics and the median, tails 5 times as
    long, in a fixed scrambled order."""
    half = timing.CI_CONFIDENCE_Z * math.sqrt(n)
    j, k = math.floor((n - half) / 2), math.ceil(1 + (n + half) / 2)  # median_ci's ranks
    ranks = [0, j - 1, (n - 1) / 2, k - 1, n - 1]
    values = [median_ms - 5 * (median_ms - low_ms), low_ms, median_ms, high_ms, median_ms + 5 * (high_ms - median_ms)]

    def at(r):
        i = next(i for i in range(1, len(ranks)) if r <= ranks[i])
        return values[i - 1] + (values[i] - values[i - 1]) * (r - ranks[i - 1]) / (ranks[i] - ranks[i - 1])
    return [at((i * 37) % n) / 1000 for i in range(n)]


def lead_rows():
    """Two fresh processes of one repro script on the quiet machine (2026-12-05): 0.490
    [0.487, 0.493] and 0.582 [0.572, 0.600] ms as the calls' intervals; their figures as the
    probe stores them."""
    rows = []
    for median, low, high in ((0.490, 0.487, 0.493), (0.582, 0.572, 0.600)):
        times = _measured(median, low, high)
        assert [round(v * 1e3, 6) for v in timing.median_ci(times)] == [low, high]
        assert math.isclose(timing.percentiles(times)[0], median / 1000, rel_tol=1e-3)
        rows.append(timing.steady_figures(times))
    return rows


def test_two_runs_of_the_same_code_a_level_apart_are_stored_overlapping():
    first, second = lead_rows()
    assert first["steady_ci_high_s"] >= second["steady_ci_low_s"]  # 0.539 >= 0.524 ms
    assert math.isclose(first["steady_ci_high_s"], 0.539e-3, rel_tol=1e-3)


def test_repro_calls_two_such_runs_the_same_and_a_planted_slowdown_apart(tmp_path, capsys):
    names = load(tmp_path, repro.script(REQUEST, {"status": "pass"}))
    stack = {"torch_version": "2.13.0+cpu", "transformers_version": "5.23.0", "python_version": "3.11.7"}
    first, second = lead_rows()
    names["RECORDED"].clear()
    names["RECORDED"].update({"status": "pass", "cpu_model": names["_cpu_model"](), **stack,
                              "stack_versions": "", **first, "noisy": 0})

    def rerun(figures):
        code = names["_report"]({"status": "pass", "metrics": {**figures, "noisy": 0}, "stack": dict(stack)}, False)
        return code, capsys.readouterr().out

    code, out = rerun(second)
    assert code == 0 and ": within\n" in out, out
    # As the calls' intervals alone (before the widening) the same two runs were apart.
    names["RECORDED"].update(steady_ci_low_s=0.487e-3, steady_ci_high_s=0.493e-3)
    code, out = rerun({**second, "steady_ci_low_s": 0.572e-3, "steady_ci_high_s": 0.600e-3})
    assert code == 1 and ": apart\n" in out, out
    # A 1.5x slower run stays apart from the widened interval.
    names["RECORDED"].update(first)
    code, out = rerun(timing.steady_figures([t * 1.5 for t in _measured(0.490, 0.487, 0.493)]))
    assert code == 1 and ": apart\n" in out, out
