"""The test child's work, shared by the zygote's child T and by run_one.

`prepare_process` applies the request's memory limit and thread count;
`run_test` runs the kind and always returns one result object (a dict).
"""

import resource

from . import kinds
from .result import Result
from .runtime import stack_info


class Context:
    """What a kind may need to know about the process that started it."""

    def __init__(self, zygote_pid=None):
        self.zygote_pid = zygote_pid


def apply_memory_limit(limit):
    """Applies memory_limit {method, bytes, cgroup_procs}; raises ValueError/OSError on failure."""
    method = (limit or {}).get("method", "")
    if not method:
        return
    if method in ("cgroup_v1", "cgroup_v2"):
        import os

        with open(limit["cgroup_procs"], "w") as f:
            f.write(str(os.getpid()))
    elif method == "rlimit":
        size = int(limit["bytes"])
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
    else:
        raise ValueError(f"unknown memory_limit method {method!r}")


def prepare_process(request):
    """Memory limit first (before anything else), then torch threads.

    Returns None, or a result dict (harness_error) when the limits cannot be applied.
    """
    try:
        apply_memory_limit(request.get("memory_limit"))
        threads = int(request.get("torch_num_threads") or 0)
        if threads > 0:
            import torch

            torch.set_num_threads(threads)
    except Exception as exc:
        return Result(stack_info()).fail("harness_error", "harness", exc).to_dict()
    return None


def run_test(request, context=None):
    """Runs one test request in this process; returns its result object."""
    result = Result(stack_info())
    try:
        problem = kinds.check_request(request)
        if problem:
            status, detail = problem
            result.set_status(status, detail, "harness" if status == "harness_error" else "")
            return result.to_dict()
        try:
            kinds.KINDS[request["kind"]](request, result, context or Context())
        except kinds.StageFailed:
            pass  # a model kind's stage failed; the result already says how
        eager_frames = result.metrics.get("frames_run_eagerly") or 0
        if result.status == "pass" and eager_frames > 0:
            # A compiled pass with frames dynamo gave up on: say so next to the status.
            note = f"{eager_frames} frame(s) ran eagerly (see graph_break_reasons)"
            detail = f"{result.status_detail}; {note}" if result.status_detail else note
            result.set_status("pass", detail, result.stage)
    except MemoryError as exc:
        result.fail("oom", "run", exc)
    except Exception as exc:
        result.fail("harness_error", "harness", exc)
    return result.to_dict()
