"""The profiler on the test device (doc/test-device.md, "Profiles"): ops outside the kernel
list are timed in the fallback category (probe/compatlab_probe/measure/profile.py), and
the calls it counts there agree with the fallback audit and with the device's own
fallback counters."""

import collections
import json
import os
import sys

import torch

PROBE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "probe")
if PROBE_DIR not in sys.path:
    sys.path.insert(0, PROBE_DIR)

import compatlab_testdevice as ctest  # noqa: E402
from compatlab_probe.measure.profile import ProfileTracker  # noqa: E402
from compatlab_probe.protocol.request import parse_target_profile  # noqa: E402
from compatlab_probe.stacks.audit import OpAudit  # noqa: E402
from compatlab_probe.stacks.target import Target, load_profile  # noqa: E402

CALLS = 3


class _Block(torch.nn.Module):
    """addmm and relu have ctest kernels; tanh and sigmoid run through the CPU fallback."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(32, 32)

    def forward(self, x):
        return torch.sigmoid(torch.tanh(torch.relu(self.linear(x))))


def _by_base(counts):
    totals = collections.Counter()
    for name, n in counts.items():
        totals[name.split(".", 1)[0]] += n
    return dict(totals)


def test_ops_outside_the_kernel_list_are_the_fallback_category_and_agree_with_the_audit():
    target = Target(parse_target_profile(load_profile("ctest")))
    assert target.check_available() is None
    model = _Block().to("ctest")
    x = torch.randn(4, 32).to("ctest")

    def call():
        with torch.inference_mode():
            return model(x)

    call()
    with OpAudit(target) as audit:
        call()
    audited = _by_base(audit.fallback_ops())
    assert audited == {"aten::sigmoid": 1, "aten::tanh": 1}

    ctest.reset_fallback_counts()
    with ProfileTracker(target) as tracker:
        for _ in range(CALLS):
            tracker.call(call)
    counters = {name: n / CALLS for name, n in _by_base(ctest.fallback_counts()).items()}
    metrics = tracker.metrics(audit.fallback_ops())
    profiled = json.loads(metrics["profile_fallback_ops"])
    assert profiled == audited == counters
    assert metrics["profile_fallback_s"] > 0 and metrics["profile_compute_s"] > 0
    # The fallback ops' whole time, CPU round trip included, is in the category: more than
    # the self time of the kernels the fallback runs on the CPU.
    inner = [op for op in json.loads(metrics["profile_top_ops"]) if op["name"] in ("aten::tanh", "aten::sigmoid")]
    assert inner and sum(op["self_s"] for op in inner) < metrics["profile_fallback_s"]
