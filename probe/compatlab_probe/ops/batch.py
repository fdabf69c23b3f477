"""A test child's batch of ops (request kind "ops", doc/ops.md and doc/worker-protocol.md,
"Op batches").

kind_params: `ops` (op keys, comma-separated: `name` or `name:variant`), `max_samples`
(sample inputs per op), `op_timeout_s` (a case's own limit, raised in Python by an
interval timer), `check_skips` ("true": PyTorch's skips run anyway). For each op, in
order, the child writes `{"op_start": KEY}` and then `{"op_case": {...}}` on its result
pipe, each on one line, before its result object; the supervisor keeps them even when a
later op kills the child. The mode, target profile, dtype and backend are the request's.
"""

from __future__ import annotations

import json
import math
import os
import signal
import time
from typing import Any

from ..protocol import stage_marks
from ..protocol.request import TestRequest
from ..protocol.result import Result
from ..stacks import compiler
from ..stacks.audit import OpAudit, op_name
from ..stacks.target import Target
from . import opinfo
from .compare import compare, to_reference

KIND = "ops"  # the request kind of an op batch
MESSAGE_LIMIT = 1000
ATEN_OPS_LIMIT = 200


class CaseTimeout(Exception):
    """A case ran past op_timeout_s (raised by the interval timer)."""


def _finite(value: Any) -> Any:
    """`value` with every NaN or infinite float as None: JSON has no such numbers (an error
    against the reference of uninitialised memory, empty_like run under --check-skips)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _write_line(obj: dict[str, Any]) -> None:
    fd = stage_marks._fd
    if fd is None:
        return
    data = (json.dumps(_finite(obj), sort_keys=True, allow_nan=False) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]


def _on_alarm(signum, frame):  # noqa: ARG001 - a signal handler's signature
    raise CaseTimeout("the case ran past op_timeout_s")


class Case:
    """One (op, dtype, mode, target) result as the child reports it."""

    def __init__(self, key: str, dtype: str):
        self.row: dict[str, Any] = {
            "key": key, "dtype": dtype, "status": "pass", "detail": "", "samples": 0, "passed": 0,
            "failed": 0, "errored": 0, "timed_out": 0, "first_failure": "", "error_type": "",
            "max_abs_err": None, "max_rel_err": None, "atol": None, "rtol": None, "tol_source": "",
            "ref_dtype": "", "fallback_audit": "", "aten_ops": [], "fallback_ops": {},
            "skip_source": "", "skip_kind": "", "skip_reason": "", "wall_s": 0.0}
        self._first = ""  # "error" or "fail": what the first failed sample did

    def set(self, **values: Any) -> Case:
        self.row.update(values)
        return self

    def failed_sample(self, kind: str, message: str, error_type: str = "") -> None:
        self.row["failed" if kind == "fail" else "errored"] += 1
        if not self._first:
            self._first = kind
            self.row["first_failure"] = message[:MESSAGE_LIMIT]
            self.row["error_type"] = error_type

    def decide(self, compile_error: bool) -> None:
        r = self.row
        if r["timed_out"]:
            r["status"] = "timeout"
        elif r["errored"]:
            r["status"] = "fail_to_compile" if compile_error else "fail_to_run"
        elif r["failed"]:
            r["status"] = "fail_accuracy"
        elif r["passed"] == 0:
            reason = r["detail"] or "no sample input could be judged"
            r["status"], r["detail"] = "skipped", reason
            if not r["skip_source"]:
                r.update(skip_source="compatlab", skip_kind="skip", skip_reason=reason)


class Batch:
    """Runs the request's op keys one by one on its target and mode."""

    def __init__(self, request: TestRequest, target: Target):
        import torch

        self.request = request
        self.target = target
        given = request.kind_params.given
        self.keys = [k for k in given.get("ops", "").split(",") if k]
        self.max_samples = max(1, int(given.get("max_samples", "8")))
        self.op_timeout_s = max(1.0, float(given.get("op_timeout_s", "60")))
        self.check_skips = given.get("check_skips", "false") == "true"
        self.dtype = getattr(torch, request.dtype)
        self.device_type = target.device.type
        self.compiling = request.mode == "compile"
        self.reference_error = ""  # the first reference the CPU could not compute, this case

    def run(self) -> None:
        db = opinfo.by_key()
        signal.signal(signal.SIGALRM, _on_alarm)
        for key in self.keys:
            _write_line({"op_start": key})
            start = time.perf_counter()
            try:
                case = self.case(db.get(key), key)
            except Exception as exc:  # noqa: BLE001 - compatlab's own failure on this op only
                case = Case(key, opinfo.dtype_name(self.dtype))
                case.set(status="harness_error", detail=f"{type(exc).__name__}: {exc}"[:MESSAGE_LIMIT],
                         error_type=type(exc).__name__)
            case.row["wall_s"] = round(time.perf_counter() - start, 4)
            _write_line({"op_case": case.row})

    def case(self, op: Any, key: str) -> Case:
        case = Case(key, opinfo.dtype_name(self.dtype))
        if op is None:
            return case.set(status="harness_error", detail=f"{key} is not an op_db entry of this torch")
        skip = opinfo.pytorch_skip(op, self.device_type, self.dtype)
        if skip is not None:
            case.set(skip_source="pytorch", skip_kind=skip[0], skip_reason=skip[1])
            if not self.check_skips:
                return case.set(status="skipped", detail=skip[1])
        atol, rtol, source = opinfo.tolerance(op, self.device_type, self.dtype)
        case.set(atol=atol, rtol=rtol, tol_source=source)
        try:
            self.samples(op, case)
        except CaseTimeout as exc:
            case.row["timed_out"] += 1
            case.failed_sample("error", str(exc), "CaseTimeout")
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        return case

    def _callable(self, op: Any) -> Any:
        if not self.compiling:
            return op
        import torch

        compiler.reset_dynamo()
        for name in ("recompile_limit", "cache_size_limit"):
            if hasattr(torch._dynamo.config, name):
                setattr(torch._dynamo.config, name, max(64, self.max_samples * 2))

        def call(*args, **kwargs):
            return op(*args, **kwargs)

        return compiler.compile_callable(call, self.request, self.target)

    def _ref_dtype(self, op: Any) -> Any:
        import torch

        floating = self.dtype.is_floating_point
        return torch.float64 if floating and torch.float64 in op.supported_dtypes("cpu") else None

    def samples(self, op: Any, case: Case) -> None:
        import torch

        self.reference_error = ""
        ref_dtype = self._ref_dtype(op)
        case.set(ref_dtype=opinfo.dtype_name(ref_dtype) if ref_dtype is not None else case.row["dtype"])
        fn = self._callable(op)
        signal.setitimer(signal.ITIMER_REAL, self.op_timeout_s)
        compile_error = False
        audited = False
        samples = op.sample_inputs("cpu", self.dtype, requires_grad=False)
        for index, sample in enumerate(samples):
            if index >= self.max_samples:
                break
            seen: set[str] | None = set() if not case.row["aten_ops"] else None
            expected = self.reference(op, sample, ref_dtype, seen)
            if seen:
                case.set(aten_ops=sorted(seen)[:ATEN_OPS_LIMIT])
            if expected is _NO_REFERENCE:
                continue
            case.row["samples"] += 1
            moved = sample.transform(lambda t: t.to(self.target.device) if isinstance(t, torch.Tensor) else t)
            try:
                torch.manual_seed(0)
                out = moved.output_process_fn_grad(fn(moved.input, *moved.args, **moved.kwargs))
                self.target.sync()
            except CaseTimeout:
                raise
            except Exception as exc:  # noqa: BLE001 - the op's failure is the result
                compile_error = compile_error or (self.compiling and compiler.is_compile_error(exc))
                case.failed_sample("error", f"{type(exc).__name__}: {exc}", type(exc).__name__)
                continue
            verdict = compare(out, expected, case.row["atol"], case.row["rtol"])
            _keep_max(case.row, "max_abs_err", verdict.max_abs_err)
            _keep_max(case.row, "max_rel_err", verdict.max_rel_err)
            if not verdict.ok:
                case.failed_sample("fail", verdict.message)
                continue
            case.row["passed"] += 1
            if not audited:
                audited = True
                self.audit(fn, moved, case)
        if case.row["samples"] == 0:
            first = f" (first: {self.reference_error})" if self.reference_error else ""
            case.set(detail=f"no sample input of this dtype had a CPU reference{first}")
        case.decide(compile_error)

    def reference(self, op: Any, sample: Any, ref_dtype: Any, seen: set[str] | None = None) -> Any:
        """The sample's outputs on the CPU (in ref_dtype when given, else the case's dtype
        again), or _NO_REFERENCE when the CPU itself cannot run it. `seen`, when given,
        gathers the aten overloads the CPU call executed."""
        import torch

        for dtype in ((ref_dtype, None) if ref_dtype is not None else (None,)):
            ref = sample.transform(lambda t, d=dtype: to_reference(t, d))
            try:
                torch.manual_seed(0)
                with _OpListing(seen) if seen is not None else _nothing():
                    out = op(ref.input, *ref.args, **ref.kwargs)
                return ref.output_process_fn_grad(out)
            except CaseTimeout:
                raise
            except Exception as exc:  # noqa: BLE001 - no reference: the sample is not judged
                self.reference_error = self.reference_error or f"{type(exc).__name__}: {exc}"[:300]
                continue
        return _NO_REFERENCE

    def audit(self, fn: Any, sample: Any, case: Case) -> None:
        """The ops one more call of a passed sample executed on the target, and which of
        them ran through the CPU fallback (stacks/audit.py); never fails the case."""
        import torch

        if not self.target.audit_applicable:
            case.set(fallback_audit="not_applicable")
            return
        try:
            with OpAudit(self.target) as audit:
                torch.manual_seed(0)
                fn(sample.input, *sample.args, **sample.kwargs)
            self.target.sync()
        except CaseTimeout:
            raise
        except Exception as exc:  # noqa: BLE001 - an audit failure never fails the case
            case.set(fallback_audit=f"unavailable: {type(exc).__name__}: {exc}"[:300])
            return
        aten_ops = sorted(set(case.row["aten_ops"]) | set(audit.counts))[:ATEN_OPS_LIMIT]
        case.set(fallback_audit="audited" if not audit.error else f"audited ({audit.error})",
                 aten_ops=aten_ops, fallback_ops=audit.fallback_ops())


_NO_REFERENCE = object()


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False


class _OpListing:
    """The aten overloads a CPU call executes (a TorchDispatchMode below autograd, as the
    fallback audit sees them): the case's aten_ops, which `ops show` weighs by use."""

    def __init__(self, seen: set[str]):
        from torch.utils._python_dispatch import TorchDispatchMode

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                seen.add(op_name(func))
                return func(*args, **(kwargs or {}))

        self._mode = Mode()

    def __enter__(self):
        self._mode.__enter__()
        return self

    def __exit__(self, *exc_info):
        return self._mode.__exit__(*exc_info)


def _keep_max(row: dict[str, Any], key: str, value: float | None) -> None:
    if value is not None and (row[key] is None or value > row[key]):
        row[key] = value


def run(request: TestRequest, result: Result) -> None:
    """The batch's work: each op's lines on the result pipe; `result` says whether the batch
    itself ran (skipped when the target is unavailable here)."""
    target = Target.from_request(request)
    reason = target.check_available()
    if reason:
        result.set_status("skipped", reason)
        return
    Batch(request, target).run()
