"""Test kinds: what a test child does with its request.

Each kind is a function kind(request, result, context) that fills `result`
(a result.Result). `check_request` decides, before any work, whether a request
is runnable, skipped (not supported yet) or bogus (harness_error).
"""

import re

from . import faults, forward, generate, train
from .common import StageFailed as StageFailed  # re-exported for child.run_test
from .common import dtype_of

# kind name -> function
KINDS = {
    "forward": forward.run,
    "generate": generate.run,
    "train": train.run,
    "noop": faults.noop,
    "hang": faults.hang,
    "hang-hard": faults.hang_hard,
    "segfault": faults.segfault,
    "abort": faults.abort,
    "oom": faults.oom,
    "raise": faults.raise_,
    "flood": faults.flood,
    "kill-zygote": faults.kill_zygote,
}
# Kinds of the design that the probe does not run yet (until they are in KINDS).
LATER_KINDS = set()
# Kinds that build a model and so care about mode, target and dtype.
MODEL_KINDS = {"forward", "generate", "train"}
SUPPORTED_MODES = {"eager", "compile"}
LATER_MODES = {"export"}
_TARGET_NAME = re.compile(r"^[a-z][a-z0-9_:-]*$")


def check_request(request):
    """None when the request can run; else (status, detail) with status skipped or harness_error."""
    kind = request.get("kind")
    if kind in LATER_KINDS and kind not in KINDS:
        return "skipped", f"kind {kind} is not supported by the probe yet"
    if kind not in KINDS:
        return "harness_error", f"unknown kind {kind!r}"
    if kind not in MODEL_KINDS:
        return None
    mode = request.get("mode", "eager")
    if mode in LATER_MODES:
        return "skipped", f"mode {mode} is not supported by the probe yet"
    if mode not in SUPPORTED_MODES:
        return "harness_error", f"unknown mode {mode!r}"
    target = request.get("target", "cpu")
    if not isinstance(target, str) or not _TARGET_NAME.match(target):
        return "harness_error", f"bad target {target!r}"
    profile = request.get("target_profile")
    if profile is not None and (not isinstance(profile, dict) or not profile.get("device")):
        return "harness_error", f"bad target_profile {profile!r:.200}"
    if dtype_of(request.get("dtype", "float32")) is None:
        return "harness_error", f"unknown dtype {request.get('dtype')!r}"
    for key in ("batch_size", "seq_len"):
        value = request.get(key, 1)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            return "harness_error", f"bad {key} {value!r}"
    if not request.get("model_type") and not request.get("model_path"):
        return "harness_error", f"a {kind} test needs model_type or model_path"
    return None
