"""The phase skeleton every model kind runs (kinds/phases.py, doc/probe.md "Phases")."""

import pytest
from kind_requests import assert_pass, run_kind

from compatlab_probe.kinds import forward, phases
from compatlab_probe.measure import timing
from compatlab_probe.models import factory


@pytest.mark.parametrize("kind", ["forward", "generate", "train"])
def test_every_kind_takes_its_memory_baseline_once_right_before_the_build(kind, monkeypatch):
    """host_mem_bytes is the peak over build, prepare and steady minus the RSS right before the
    build (doc/results-schema.md, "Host memory"), in every kind."""
    events = []
    real_build, real_start = factory.build_model, timing.PeakRss.start
    monkeypatch.setattr(factory, "build_model", lambda *a, **kw: (events.append("build"), real_build(*a, **kw))[1])
    monkeypatch.setattr(timing.PeakRss, "start", lambda self: (events.append("peak"), real_start(self))[1])
    real_first_call = phases.ModelTest.first_call

    def first_call(self):
        events.append("first call")
        return real_first_call(self)

    monkeypatch.setattr(phases.ModelTest, "first_call", first_call)
    result = run_kind(kind, "llama", kind_params={"new_tokens": 2, "steps": 2})
    assert_pass(result)
    assert events[:3] == ["peak", "build", "first call"], events
    assert events.count("peak") == 1
    assert result["metrics"]["memory_method"] == "vmhwm_minus_baseline_rss"
    m = result["metrics"]
    assert m["host_peak_rss_bytes"] > 0 and m["host_mem_bytes"] >= m["host_mem_build_bytes"] >= 0
    # Issue 46: where the test's time went, the steady phase's and the reference's walls.
    assert m["steady_wall_s"] > 0
    assert kind == "train" or m["reference_s"] > 0  # train's references are its learning runs


def test_a_failing_reference_leaves_the_verdict_unknown(monkeypatch):
    def no_reference(*args, **kwargs):
        raise RuntimeError("no reference here")

    monkeypatch.setattr(forward, "cpu_copy", no_reference)
    # bfloat16: the float32 fallback is not the test's own computation, so it is tried (and fails).
    result = run_kind("forward", "llama", dtype="bfloat16")
    assert result["status"] == "pass" and result["stage"] == ""
    assert result["status_detail"].startswith("accuracy not measured: the CPU reference failed: RuntimeError")
    assert result["metrics"]["acc_rule"] is None and result["metrics"]["acc_not_measured"] == "reference_failed"


def test_an_error_of_the_steady_phase_is_fail_to_run_at_steady(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("steady broke")

    monkeypatch.setattr(forward, "timed_calls", broken)
    result = run_kind("forward", "llama")
    assert result["status"] == "fail_to_run" and result["stage"] == "steady"
    assert result["error_type"] == "RuntimeError" and result["error_message"] == "steady broke"
    assert result["metrics"]["prepare_s"] > 0  # the first call before it was recorded


def test_the_speedup_is_the_ratio_of_the_blocks_medians_not_of_the_overall_medians(monkeypatch):
    from compatlab_probe.kinds import common
    from compatlab_probe.protocol.request import MeasureSettings

    class Clock:  # advanced only by the calls: the figures are exact on any machine
        now = 0.0

        def perf_counter(self):
            return self.now

    clock = Clock()
    monkeypatch.setattr(common, "time", clock)
    # 5 pairs of 2-call blocks. Compiled blocks (ms): [1,1] [1,5] [2,2] [5,5] [5,5], block
    # medians 1 3 2 5 5 (median 3), overall median of the 10 calls 3.5; eager 6 ms a call.
    compiled = iter([1, 1, 1, 5, 2, 2, 5, 5, 5, 5])

    def advance(ms):
        clock.now += ms / 1000

    metrics = common.alternating_steady(lambda: advance(next(compiled)), lambda: advance(6),
                                        MeasureSettings(warmup=0, min_iters=10, min_time_s=0.0))
    assert metrics["steady_iters"] == 10
    assert metrics["steady_median_s"] == pytest.approx(0.0035)
    assert metrics["eager_steady_median_s"] == pytest.approx(0.006)
    assert metrics["speedup"] == pytest.approx(2.0)  # 6 / 3, not 6 / 3.5


def test_compiled_and_eager_steady_calls_run_in_alternating_blocks_not_call_by_call():
    from compatlab_probe.kinds.common import alternating_steady
    from compatlab_probe.protocol.request import MeasureSettings

    order = []
    metrics = alternating_steady(lambda: order.append("c"), lambda: order.append("e"),
                                 MeasureSettings(warmup=1, min_iters=10, min_time_s=0.0))
    assert "".join(order) == "ce" + "cceecceecceecceeccee"  # warm-ups, then 5 pairs of 2-call blocks
    assert metrics["steady_iters"] == 10 and metrics["speedup"] > 0
    order.clear()
    alternating_steady(lambda: order.append("c"), lambda: order.append("e"),
                       MeasureSettings(warmup=0, min_iters=0, min_time_s=0.0), exact_calls=5)
    assert "".join(order) == "cc" "ee" "c" "e" "c" "e" "c" "e"  # train: exactly 5 of each, in 4 blocks
