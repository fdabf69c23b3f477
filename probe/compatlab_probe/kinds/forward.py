"""Kind `forward`: build a model on the target, call it once (prepare), measure steady-state
calls, audit CPU fallbacks, and compare the output with a CPU float64 reference.

Modes: `eager`, and `compile` (torch.compile with the request's backend and
options; the eager model's calls are timed interleaved with the compiled ones).

Stages and statuses:
  import   resolving and importing the modelling class          -> fail_to_load
  build    config reduction, construction, inputs, to device     -> fail_to_load
  prepare  the first (eager) forward call                        -> fail_to_run
  compile  compile mode: the first compiled call raising a dynamo,
           inductor or backend error                             -> fail_to_compile
           (another error of that call: fail_to_run at prepare;
           dynamo capturing no graph: harness_error at compile)
  steady   warm-up and measured calls                            -> fail_to_run
  compare  the output against the reference                      -> fail_accuracy
A MemoryError anywhere (an allocation refused under an rlimit) -> oom. Skipped:
a target that cannot run here, a configuration-only model type, a seq_len the
architecture cannot take, a seq_len other than 32 for inputs without a sequence.

Order in one child (doc/probe.md): build; eager first call; [compile mode:
first compiled call = prepare]; steady (eager mode: eager calls; compile mode:
compiled and eager calls alternated); one un-timed audited eager call; the
reference on the CPU. Device peak memory and host peak RSS are read before the
audit and the reference, so neither distorts them.
"""

import time

import torch

from .. import accuracy, compiler
from ..measure import measure_params, steady_state
from .common import (
    audit_call,
    begin,
    build_model_and_inputs,
    cpu_copy,
    dtype_of,
    first_call,
    interleaved_steady,
    reference_failed,
    reference_inputs,
    require_capture,
    stage,
)

__all__ = ["run", "dtype_of"]


def run(request, result, context=None):
    """The kind: fills `result`; a failed stage ends it with StageFailed (child.run_test)."""
    mode = request.get("mode", "eager")
    dtype = dtype_of(request.get("dtype", "float32"))
    target, peak = begin(request, result)
    if mode == "compile":
        stage(result, "compile", "harness_error", lambda: compiler.configure_cache(request))

    built = build_model_and_inputs(request, result, dtype, target.device)
    model, inputs = built.model, built.inputs
    grad_off = torch.inference_mode if mode == "eager" else torch.no_grad

    def eager_call():
        with grad_off():
            return model(**inputs)

    target.reset_peak_memory()
    peak.start()  # host high-water mark from here: the measured phases, not the build
    params = measure_params(request)
    if mode == "compile":
        outputs, eager_outputs = _compiled_phases(request, result, target, model, inputs, eager_call, params)
    else:
        start = time.perf_counter()
        outputs = stage(result, "prepare", "fail_to_run", lambda: _synced(eager_call, target))
        result.metrics["prepare_s"] = time.perf_counter() - start
        outputs = accuracy.as_vector(outputs)
        median, p90, iters, fastest = stage(result, "steady", "fail_to_run",
                                            lambda: steady_state(eager_call, params, target.sync))
        result.metrics.update(steady_median_s=median, steady_p90_s=p90, steady_iters=iters, steady_min_s=fastest)
        eager_outputs = None
    tokens = built.tokens_per_call
    median = result.metrics.get("steady_median_s")
    result.metrics["tokens_per_s"] = tokens / median if tokens and median else None
    result.metrics["host_peak_rss_bytes"] = peak.read()
    result.metrics["device_peak_bytes"] = target.peak_memory()
    result.metrics["device_memory_method"] = target.memory_method

    audit_call(result, target, eager_call)
    # A model that draws random numbers in its forward (random masking: ViTMAE) cannot be
    # compared with a reference: two eager calls on the same inputs tell.
    first = eager_outputs if eager_outputs is not None else outputs
    again = stage(result, "steady", "fail_to_run", lambda: accuracy.as_vector(_synced(eager_call, target)))
    if not accuracy.repeatable(first, again, dtype, "forward"):
        accuracy.not_comparable(result, first, again)
        return
    _compare(result, target, built, outputs, eager_outputs)


def _synced(fn, target):
    value = fn()
    target.sync()
    return value


def _compiled_phases(request, result, target, model, inputs, eager_call, params):
    """Compile mode: eager first call, compiled first call (prepare), interleaved steady.

    Returns (compiled outputs, eager outputs) as CPU float64 vectors.
    """
    eager_outputs = accuracy.as_vector(stage(result, "prepare", "fail_to_run",
                                             lambda: _synced(eager_call, target)))
    compiled = stage(result, "compile", "harness_error",
                     lambda: compiler.compile_callable(model, request, target))

    def compiled_call():
        with torch.no_grad():
            return compiled(**inputs)

    stats = compiler.DynamoStats.snapshot()
    hits, misses = compiler.cache_counters()
    start = time.perf_counter()
    outputs = first_call(result, lambda: _synced(compiled_call, target), compiling=True)
    result.metrics["prepare_s"] = time.perf_counter() - start
    hits2, misses2 = compiler.cache_counters()
    result.metrics.update(cache_hits=hits2 - hits, cache_misses=misses2 - misses)
    first = stats.delta()
    result.metrics.update(first)
    require_capture(result, first)
    outputs = accuracy.as_vector(outputs)
    steady = stage(result, "steady", "fail_to_run",
                   lambda: interleaved_steady(compiled_call, eager_call, params, target.sync))
    result.metrics.update(steady)
    result.metrics.update(stats.delta())  # recompiles and breaks of the steady phase count too
    return outputs, eager_outputs


def _reference(model, inputs):
    """(CPU outputs in float64, "float64"), or in float32 where float64 does not run."""
    last = None
    for dtype in (torch.float64, torch.float32):
        try:
            ref = cpu_copy(model, dtype)
            with torch.inference_mode():
                return accuracy.as_vector(ref(**reference_inputs(inputs, dtype))), accuracy.dtype_name(dtype)
        except MemoryError:
            raise
        except Exception as exc:  # noqa: BLE001 - try the next precision
            last = exc
    raise last


def _compare(result, target, built, outputs, eager_outputs):
    """acc_* metrics against the CPU reference; fail_accuracy at stage compare."""
    try:
        reference, ref_dtype = _reference(built.model, built.cpu_inputs)
        if eager_outputs is None and not target.is_cpu:
            # Eager on a device: judged against the CPU's eager run at the same precision.
            cpu_model = cpu_copy(built.model, built.dtype)
            with torch.inference_mode():
                eager_outputs = accuracy.as_vector(cpu_model(**built.cpu_inputs))
    except Exception as exc:  # noqa: BLE001 - MemoryError included: reference_failed decides
        reference_failed(result, exc)
        return
    acc = accuracy.compare(outputs, reference, eager_outputs, built.dtype, "forward")
    acc["acc_ref_dtype"] = ref_dtype
    result.metrics.update(acc)
    if accuracy.passed(acc):
        result.set_status("pass")
        return
    result.set_status("fail_accuracy", accuracy.describe(acc), "compare")
