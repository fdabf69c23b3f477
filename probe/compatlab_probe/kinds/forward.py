"""Kind `forward`: build a model on the target, call it once (prepare), measure steady-state
calls, audit CPU fallbacks, and compare the output with a CPU float64 reference.

Modes: `eager`, `compile` (torch.compile with the request's backend and
options; the eager model's calls are timed in blocks alternating with the compiled ones),
and `export` (torch.export, then the profile's lowering and runtime: lowering.py; the
stack's calls are timed in blocks alternating with eager ones).

Stages and statuses:
  import   resolving and importing the modelling class          -> fail_to_load
  build    config reduction, construction, inputs, to device     -> fail_to_load
  prepare  the first (eager) forward call                        -> fail_to_run
           (on an input compatlab did not build or made too small:
           harness_error naming it, inputs.unbuilt_input_reason)
  compile  compile mode: the first compiled call raising a dynamo,
           inductor or backend error                             -> fail_to_compile
           (another error of that call: fail_to_run at prepare;
           dynamo capturing no graph: harness_error at compile)
  steady   warm-up and measured calls                            -> fail_to_run
  compare  the output against the reference                      -> fail_accuracy
Mode export's own stages (after build and the eager first call at prepare):
  export   torch.export, non-strict then strict                  -> fail_to_compile
  lower    the stack's converter or partitioner                  -> fail_to_compile
           (ops its report names: unconverted_ops)
  load     the stack's runtime loading the artifact              -> fail_to_run
  run      the first call on the stack                           -> fail_to_run
A MemoryError anywhere (an allocation refused under an rlimit) -> oom. Skipped:
a target that cannot run here, a configuration-only model type, a seq_len the
architecture cannot take, a seq_len other than 32 for inputs without a sequence.

Dynamic shapes (request dynamic true or mark, mode compile): kinds/dynamic.py runs every
shape of the request on one compiled model instead.

Order in one child (doc/probe.md): build; eager first call; [compile mode:
first compiled call = prepare]; steady (eager mode: eager calls; compile mode:
compiled and eager calls in alternating blocks); one un-timed audited eager call;
[--profile steady: the profiler's window of the steady call]; the reference on the CPU. Device peak memory and host peak RSS are read before the
audit and the reference, so neither distorts them.
"""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
import time
from typing import TYPE_CHECKING, Any

import torch

from ..measure import accuracy
from ..measure.timing import steady_figures, timed_calls
from ..models import code_model
from ..protocol.request import TestRequest
from ..protocol.result import Result
from ..stacks import compiler, lowering
from . import dynamic
from .common import Built, alternating_steady, cpu_copy, recorded, reference_inputs, stage
from .phases import ModelTest, per_second

__all__ = ["run"]

if TYPE_CHECKING:
    from .context import Context


def run(request: TestRequest, result: Result, context: Context | None = None) -> None:
    """The kind: fills `result`; a failed phase ends it with StageFailed (child.run_test)."""
    test = ModelTest(request, result)
    if request.mode == "export":
        result.stack["stack_versions"] = json.dumps(lowering.stack_versions(test.target.lowering), sort_keys=True)
    # The backend's name only: importing a "pkg.mod:fn" backend belongs to the compile stage.
    backend = compiler.backend_name(request, test.target) if test.compiling else None
    if stack := lowering.compile_stack(backend):
        result.stack["stack_versions"] = json.dumps(lowering.stack_versions(stack), sort_keys=True)
    if request.dynamic:  # one compiled model over every shape (kinds/dynamic.py)
        dynamic.refuse_if_unsupported(test)
        dynamic.run_shapes(test, test.build(positions_needed=max(seq for _, seq in request.shapes)))
        return
    built = test.build()
    if request.mode == "export":
        _export(test, built)
        return
    model, inputs, target = built.model, built.inputs, test.target
    grad_off = torch.no_grad if test.compiling else torch.inference_mode

    def eager_call():
        with grad_off():
            return model(**inputs)

    report = lowering.compile_report(backend)
    steady_call = eager_call
    if test.compiling:
        with report:
            outputs, eager_outputs, steady_call = _compiled_phases(test, model, inputs, eager_call)
    else:
        with test.first_call():
            outputs = _synced(eager_call, target)
        outputs = accuracy.as_vector(outputs)
        with test.steady():
            result.metrics.update(steady_figures(timed_calls(eager_call, request.measure, target.sync)))
        eager_outputs = None
    result.metrics["tokens_per_s"] = per_second(built.tokens_per_call, result.metrics.get("steady_median_s"))
    test.read_memory()

    test.audit(eager_call)
    test.profile(steady_call)
    _note_partitioner(result, report.fallback_ops())
    # A model that draws random numbers in its forward (random masking: ViTMAE) cannot be
    # compared with a reference: two eager calls on the same inputs tell.
    first = eager_outputs if eager_outputs is not None else outputs
    again = stage(result, "steady", "fail_to_run", lambda: accuracy.as_vector(_synced(eager_call, target)))
    if not accuracy.repeatable(first, again, built.dtype, "forward"):
        accuracy.not_comparable(result, first, again)
        return
    _baseline_reference(test, built, outputs)
    _compare(test, built, outputs, eager_outputs)
    _note_stack_detail(result, report.detail())


def _synced(fn: Any, target: Any) -> Any:
    value = fn()
    target.sync()
    return value


def _compiled_phases(test: ModelTest, model: Any, inputs: dict[str, Any],
                     eager_call: Any) -> tuple[Any, Any, Any]:
    """Compile mode: eager first call, compiled first call (prepare), steady in alternating blocks.

    Returns (compiled outputs, eager outputs) as CPU float64 vectors and the compiled call.
    """
    result, target = test.result, test.target
    with recorded(result, "prepare", handle=test.eager_call_failed):
        eager_outputs = accuracy.as_vector(_synced(eager_call, target))
    compiled = stage(result, "compile", "harness_error",
                     lambda: compiler.compile_callable(model, test.request, target))

    def compiled_call():
        with torch.no_grad():
            return compiled(**inputs)

    with test.first_call():
        outputs = _synced(compiled_call, target)
    outputs = accuracy.as_vector(outputs)
    with test.steady():
        result.metrics.update(alternating_steady(compiled_call, eager_call, test.request.measure, target.sync))
    return outputs, eager_outputs, compiled_call


def _export(test: ModelTest, built: Built) -> None:
    """Mode export: eager first call (the baseline), then export, lower, load, run; steady
    in alternating blocks of stack and eager calls; the audit; compare. The artifact lives
    in a temporary directory (under the compile cache directory when there is one)."""
    result, request, target = test.result, test.request, test.target
    key = target.lowering
    module = lowering.LogitsModule.wrap(built.model)
    inputs = built.inputs

    def eager_call():
        with torch.inference_mode():
            return module(**inputs)

    with recorded(result, "prepare", handle=test.eager_call_failed):
        eager_outputs = accuracy.as_vector(eager_call())
    if key == "aoti":
        stage(result, "compile", "harness_error", lambda: compiler.configure_cache(request))
    workdir = tempfile.mkdtemp(prefix="compatlab-export-", dir=request.compile.cache_dir or None)
    try:
        start = time.perf_counter()
        program, strict = stage(result, "export", "fail_to_compile",
                                lambda: lowering.export_program(module, inputs))
        export_s = time.perf_counter() - start
        result.metrics.update(export_s=export_s, export_strict=int(strict))

        def lower_failed(exc: Exception) -> None:
            result.fail("fail_to_compile", "lower", exc)
            if isinstance(exc, lowering.LoweringFailed):
                result.metrics["unconverted_ops"] = json.dumps(exc.ops)

        start = time.perf_counter()
        with recorded(result, "lower", handle=lower_failed):
            lowered = lowering.lower(key, program, inputs, workdir)
        lower_s = time.perf_counter() - start
        result.metrics.update(lower_s=lower_s, artifact_bytes=lowered.artifact_bytes)
        start = time.perf_counter()
        call = stage(result, "load", "fail_to_run", lowered.load)
        load_s = time.perf_counter() - start
        result.metrics.update(load_s=load_s, prepare_s=export_s + lower_s + load_s)

        def stack_call():
            with torch.no_grad():
                return call(inputs)

        outputs = accuracy.as_vector(stage(result, "run", "fail_to_run", stack_call))
        with test.steady():
            result.metrics.update(alternating_steady(stack_call, eager_call, request.measure, target.sync))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result.metrics["tokens_per_s"] = per_second(built.tokens_per_call, result.metrics.get("steady_median_s"))
    test.read_memory()
    test.audit(eager_call)
    test.profile(stack_call)
    _note_partitioner(result, lowered.fallback_ops)
    again = stage(result, "steady", "fail_to_run", lambda: accuracy.as_vector(eager_call()))
    if not accuracy.repeatable(eager_outputs, again, built.dtype, "forward"):
        accuracy.not_comparable(result, eager_outputs, again)
        return
    exported = copy.copy(built)
    exported.model = module
    _compare(test, exported, outputs, eager_outputs)
    _note_stack_detail(result, lowered.detail)


def _note_partitioner(result: Result, fallback_ops: dict[str, int] | None) -> None:
    """A stack's own report of the ops it left off its accelerated path (its partitioner:
    ExecuTorch's XNNPACK, OpenVINO's torch.compile backend) replaces the CPU-fallback audit's
    verdict; None (the stack has no such report) leaves the audit's."""
    if fallback_ops is not None:
        result.metrics.update(fallback_audit="partitioner", ops_executed=None,
                              fallback_ops=lowering.fallback_ops_json(fallback_ops))


def _note_stack_detail(result: Result, detail: str) -> None:
    """A passing row's status_detail gains the stack's own account (partitions, what it
    left to PyTorch) after whatever the verdicts already said there."""
    if detail and result.status == "pass":
        result.set_status("pass", "; ".join(t for t in (result.status_detail, detail) if t))


def _baseline_reference(test: ModelTest, built: Built, outputs: Any) -> None:
    """A code model's output against its baseline's reference (baseline_*): the stock class
    transformers registers for its architecture (code_model.stock_class), built from the
    variant's config with the variant's weights, on the same inputs, CPU float64. Never
    fails the test: a stock model that cannot be had says why in baseline_ref_class."""
    if not test.request.model_id.startswith(code_model.PREFIX):
        return
    result = test.result
    try:
        stock = code_model.stock_class(test.request.model_type, type(built.model))
        if stock is None:
            result.metrics["baseline_ref_class"] = "none: no stock class registered for its type"
            return
        variant = cpu_copy(built.model, torch.float64)
        with torch.device("cpu"):
            ref = stock(copy.deepcopy(variant.config)).to(torch.float64).eval()
        ref.load_state_dict(variant.state_dict())
        with torch.inference_mode():
            value = accuracy.as_vector(ref(**reference_inputs(built.cpu_inputs, torch.float64)))
        if value.numel() != outputs.numel():
            raise ValueError(f"{value.numel()} values against the variant's {outputs.numel()}")
        result.metrics.update(baseline_ref_class=stock.__name__,
                              baseline_max_abs_err=float((outputs - value).abs().max()) if value.numel() else 0.0,
                              baseline_cosine=accuracy.cosine(outputs, value))
    except Exception as exc:  # the comparison is extra information; the test's own verdict stands
        result.metrics["baseline_ref_class"] = f"failed: {type(exc).__name__}: {exc}"[:300]


def _compare(test: ModelTest, built: Built, outputs: Any, eager_outputs: Any) -> None:
    """acc_* metrics against the CPU reference (float64, float32 when float64 fails:
    accuracy.reference_with_fallback); fail_accuracy at stage compare."""

    def run_at(dtype):
        ref = cpu_copy(built.model, dtype)
        with torch.inference_mode():
            return accuracy.as_vector(ref(**reference_inputs(built.cpu_inputs, dtype)))

    with test.reference():
        ref = accuracy.reference_with_fallback(run_at, lambda value: accuracy.reference_nonfinite(outputs, value),
                                               test.reference_is_target)
        if ref["value"] is not None and eager_outputs is None and not test.target.is_cpu:
            # Eager on a device: judged against the CPU's eager run at the same precision.
            cpu_model = cpu_copy(built.model, built.dtype)
            with torch.inference_mode():
                eager_outputs = accuracy.as_vector(cpu_model(**built.cpu_inputs))
    if not test.use_reference(ref):
        return
    acc = accuracy.compare(outputs, ref["value"], eager_outputs, built.dtype, "forward", baseline=test.is_baseline)
    test.verdict(acc, accuracy.describe)
