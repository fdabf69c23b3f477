"""Issue 10, part 4: the test's own host memory (doc/results-schema.md, "Host memory").

host_mem_bytes = the RSS peak over build, prepare and steady minus the child's RSS
right before the build; --mem-limit bounds the same quantity (memlimit.py). The
256 MiB model is membuf_model (test-only): reduced models plus a known buffer in forward.
"""

import json
import os
import subprocess
import sys

import pytest
from kind_requests import assert_pass, run_kind
from membuf_model import MIB, install

from compatlab_probe.models import factory
from compatlab_probe.stacks import target

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def warmed():
    """One bert run first: this pytest process, unlike a zygote's child, has not imported
    bert's modelling module nor run a first torch op yet (lazy set-up that is no test's)."""
    assert_pass(run_kind("forward", "bert"))


def test_reduced_bert_reports_its_own_memory_not_the_interpreters(warmed):
    result = run_kind("forward", "bert")
    assert_pass(result)
    m = result["metrics"]
    assert m["memory_method"] == "vmhwm_minus_baseline_rss"
    # Never a strict growth: pages freed by the warm-up run can hold this run's tensors.
    assert 0 <= m["host_mem_bytes"] < 50 * MIB, m["host_mem_bytes"]
    assert 0 <= m["host_mem_build_bytes"] <= m["host_mem_bytes"]
    # The process peak holds the interpreter, torch and transformers; the figure does not.
    assert m["host_peak_rss_bytes"] == m["host_rss_baseline_bytes"] + m["host_mem_bytes"]


def test_a_model_allocating_256_mib_in_forward_reports_256_mib(warmed, monkeypatch):
    monkeypatch.setattr(factory, "build_model", factory.build_model)  # restored after the test
    install(256 * MIB, factory)
    result = run_kind("forward", "bert")
    assert_pass(result)
    figure = result["metrics"]["host_mem_bytes"]
    assert 0.9 * 256 * MIB <= figure <= 1.1 * 256 * MIB, figure / MIB


def _run_one_with_buffer(nbytes, request):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(target.ROOT, "probe"), HERE]),
               HF_HUB_OFFLINE="1")
    proc = subprocess.run([sys.executable, os.path.join(HERE, "membuf_model.py"), str(nbytes)],
                          input=json.dumps(request), capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_an_rlimit_bounds_the_tests_own_memory_not_the_interpreters():
    """RLIMIT_AS at the baseline is the address space then plus the limit: 150M refuses a
    256 MiB buffer and leaves room for a reduced bert (whose process maps gigabytes)."""
    request = {"kind": "forward", "mode": "eager", "target": "cpu", "model_type": "bert", "dtype": "float32",
               "batch_size": 1, "seq_len": 8, "measure": {"warmup": 0, "min_iters": 2, "min_time_s": 0.0},
               "torch_num_threads": 1, "memory_limit": {"method": "rlimit", "bytes": 150 * MIB}}
    big = _run_one_with_buffer(256 * MIB, request)
    assert big["status"] == "oom" and big["stage"] == "prepare", (big["status"], big["status_detail"])
    tiny = _run_one_with_buffer(0, request)
    assert_pass(tiny)
