"""--profile (measure/profile.py): the window's summary on the cpu, its trace and its bound,
the categories on a host target (the test device's fallback category:
testdevice/tests/test_profile_fallback.py)."""

import gzip
import json

import pytest
from kind_requests import assert_pass, run_kind

from compatlab_probe.measure import profile
from compatlab_probe.protocol.request import BadRequest, parse_request

CATEGORY_KEYS = [f"profile_{name}_s" for name in profile.CATEGORIES]


def _profiled(tmp_path, mode="steady", **extra):
    trace = tmp_path / "trace.json.gz"
    settings = {"mode": mode, "trace_path": str(trace), "trace_max_bytes": 64 << 20}
    return run_kind("forward", "llama", profile=settings, **extra), trace


def test_steady_window_on_the_cpu_splits_its_time_and_keeps_a_trace(tmp_path):
    result, trace = _profiled(tmp_path)
    assert_pass(result)
    m = result["metrics"]
    assert m["profile"] == "steady"
    assert m["profile_calls"] == profile.PROFILE_CALLS
    assert m["profile_median_s"] > 0
    assert m["profile_copy_s"] == 0 and m["profile_fallback_s"] == 0  # the cpu target: no boundary
    assert m["profile_compute_s"] > 0
    assert all(m[k] >= 0 for k in CATEGORY_KEYS)
    ops = json.loads(m["profile_top_ops"])
    assert 0 < len(ops) <= profile.TOP_OPS and all(op["name"].startswith("aten::") for op in ops)
    assert ops == sorted(ops, key=lambda op: op["self_s"], reverse=True)
    lines = json.loads(m["profile_top_lines"])
    assert any("modeling_llama.py" in line["line"] for line in lines), lines
    with gzip.open(trace) as f:
        assert "traceEvents" in json.load(f)


class _HostTarget:
    """A host-executed target (the cpu) as the tracker sees one."""

    is_cpu = True

    @property
    def device(self):
        import torch

        return torch.device("cpu")

    def sync(self):
        pass


def test_on_a_host_target_the_categories_add_up_to_the_windows_wall_time():
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
    x = torch.randn(2, 32)
    with profile.ProfileTracker(_HostTarget(), warmup=1) as tracker:
        for _ in range(4):
            tracker.call(lambda: model(x))
    m = tracker.metrics([])
    assert m["profile_calls"] == 3
    assert sum(m[k] for k in CATEGORY_KEYS) * 3 == pytest.approx(sum(tracker.times), rel=1e-6)
    assert {op["name"] for op in json.loads(m["profile_top_ops"])} >= {"aten::addmm", "aten::gelu"}


def test_prepare_profiles_the_first_call_only_and_a_trace_over_its_bound_is_not_kept(tmp_path):
    trace = tmp_path / "trace.json.gz"
    result = run_kind("forward", "llama", profile={"mode": "prepare", "trace_path": str(trace), "trace_max_bytes": 10})
    assert_pass(result)
    assert result["metrics"]["profile"].startswith("prepare (trace not kept: ")
    assert result["metrics"]["profile_calls"] == 1
    assert not trace.exists() and not (tmp_path / "trace.json.gz.json").exists()


def test_a_profile_mode_the_probe_does_not_know_is_a_bad_request():
    with pytest.raises(BadRequest, match="profile.mode"):
        parse_request({"kind": "forward", "profile": {"mode": "always"}})


def test_the_source_line_is_the_models_own_frame():
    stack = ["<built-in function linear>", "torch/nn/modules/linear.py(130): forward",
             "transformers/models/gpt2/modeling_gpt2.py(312): forward", "compatlab_probe/kinds/forward.py(70): call"]
    assert profile.source_line(stack) == "transformers/models/gpt2/modeling_gpt2.py(312): forward"
    assert profile.source_line(stack[:2]) == "(framework)"
    compiled = ["/tmp/cache-1/c4/cc4xt.py(12): call", *stack]
    assert profile.source_line(compiled, "/tmp/cache-1") == profile.COMPILED_CODE
    assert profile.source_line(compiled) == compiled[0]
