"""The test child's work, shared by the zygote's child T, run_one and reproduction scripts.

`run_child` is the whole of it: the request parsed once (request.parse_request; a
malformed one is a harness_error result), `prepare_process` (the memory limit and
thread count), then `run_test` (the kind). It always returns one result object (a dict).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import kinds
from ..host.runtime import stack_info
from ..kinds.context import Context
from ..measure import memlimit
from ..ops import batch as op_batch
from ..protocol.request import BadRequest, MemoryLimit, TestRequest, parse_request
from ..protocol.result import Result
from ..stacks import compile_store


def apply_memory_limit(limit: MemoryLimit, model_kind: bool = False) -> None:
    """Applies the memory limit (memlimit.apply; no method: nothing); raises OSError when it
    cannot. A model kind (re)bases it at its memory baseline (memlimit.rebase); its rlimit
    waits for that."""
    memlimit.apply(limit, at_start_rlimit=not model_kind)


def prepare_process(request: TestRequest) -> dict[str, Any] | None:
    """Memory limit first (before anything else), then torch threads.

    Returns None, or a result dict (harness_error) when the limits cannot be applied.
    """
    try:
        apply_memory_limit(request.memory_limit, request.kind in kinds.MODEL_KINDS)
        if request.torch_num_threads > 0:
            import torch

            torch.set_num_threads(request.torch_num_threads)
    except Exception as exc:
        return Result(stack_info()).fail("harness_error", "harness", exc).to_dict()
    return None


def bad_request(exc: BadRequest) -> dict[str, Any]:
    """The harness_error result of a malformed request: the parser's message as the detail
    and as the error (type BadRequest, no traceback: the request is at fault, not the code)."""
    result = Result(stack_info()).set_status("harness_error", str(exc), "harness")
    result.error_type, result.error_message = type(exc).__name__, str(exc)
    return result.to_dict()


def run_child(raw: Mapping[str, Any], context: Context | None = None) -> dict[str, Any]:
    """A test child's whole work on the request object it was sent; returns its result object."""
    try:
        request = parse_request(raw)
    except BadRequest as exc:
        return bad_request(exc)
    if request.in_group:  # one process group of request.ranks processes (doc/ranks.md)
        from .group import run_group

        return run_group(request, context, prepare_process, run_test)
    return prepare_process(request) or run_test(request, context)


def run_test(request: TestRequest | Mapping[str, Any], context: Context | None = None) -> dict[str, Any]:
    """Runs one test in this process (no limits applied; a raw request object is parsed
    first, a malformed one answered harness_error); returns its result object."""
    if not isinstance(request, TestRequest):
        try:
            request = parse_request(request)
        except BadRequest as exc:
            return bad_request(exc)
    result = Result(stack_info())
    try:
        if request.kind == op_batch.KIND:
            op_batch.run(request, result)
            return result.to_dict()
        problem = kinds.check_request(request)
        if problem:
            status, detail = problem
            result.set_status(status, detail, "harness" if status == "harness_error" else "")
            return result.to_dict()
        try:
            kinds.kind_of(request)(request, result, context or Context())
        except kinds.StageFailed:
            pass  # a model kind's stage failed; the result already says how
        compile_store.keep_after_test(request, result.status, result.metrics, result.graph_details)
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
