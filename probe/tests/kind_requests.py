"""Shared by the model-kind tests: quick measure params, the test-only perturbing backend
(testdevice/ put on sys.path) and a request builder that runs in-process."""

import os
import sys

import pytest

from compatlab_probe.stacks import target
from compatlab_probe.worker.child import run_test

QUICK = {"warmup": 0, "min_iters": 2, "min_time_s": 0.0}
PERTURB = "compatlab_testdevice.backends:perturb"
TESTDEVICE_DIR = os.path.join(target.ROOT, "testdevice")
if TESTDEVICE_DIR not in sys.path:
    sys.path.insert(0, TESTDEVICE_DIR)
CTEST_LIB = os.path.join(target.ROOT, "build", "testdevice", "compatlab_testdevice.so")
needs_ctest = pytest.mark.skipif(not os.path.isfile(CTEST_LIB) and not os.environ.get("COMPATLAB_TESTDEVICE_LIB"),
                                 reason="ctest library not built (make testdevice)")


def on_ctest():
    """Request fields of the test device target (targets/ctest.json)."""
    return {"target": "ctest", "target_profile": target.load_profile("ctest")}


def run_kind(kind, model_type, mode="eager", kind_params=None, **extra):
    """run_test of a cpu float32 request, batch 1, seq_len 8; compile mode with aot_eager."""
    request = {"kind": kind, "mode": mode, "backend": "aot_eager" if mode == "compile" else "",
               "target": "cpu", "model_type": model_type, "dtype": "float32", "batch_size": 1, "seq_len": 8,
               "kind_params": {k: str(v) for k, v in (kind_params or {}).items()}, "measure": QUICK}
    request.update(extra)
    return run_test(request)


def assert_pass(result):
    assert result["status"] == "pass", (result["stage"], result["status_detail"], result["error_message"])
REFUSING = "kind_requests:refusing_backend"


def refusing_backend(gm, example_inputs):
    """A torch.compile backend that refuses every graph (a compile error, not a run error)."""
    raise RuntimeError("refusing_backend refuses every graph")
