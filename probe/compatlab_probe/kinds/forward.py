"""Kind `forward`: build a model, call it once (prepare), then measure steady-state calls.

Stages and statuses:
  import   resolving and importing the modelling class       -> fail_to_load
  build    config reduction, construction, inputs             -> fail_to_load
  prepare  the first forward call                             -> fail_to_run
  steady   warm-up and measured forward calls                 -> fail_to_run
A MemoryError anywhere (an allocation refused under an rlimit) -> oom. A
registered model type with no modelling class at all (a configuration-only
entry) is skipped.
"""

import time

from .. import factory, heads
from ..inputs import make_inputs
from ..measure import PeakRss, measure_params, steady_state

_DTYPES = {"float32": "float32", "fp32": "float32", "float16": "float16", "fp16": "float16",
           "bfloat16": "bfloat16", "bf16": "bfloat16", "float64": "float64", "fp64": "float64"}


def dtype_of(name):
    """The torch dtype for a request's dtype name, or None if unknown."""
    import torch

    attr = _DTYPES.get(name)
    return getattr(torch, attr) if attr else None


class _StageFailed(Exception):
    """A stage failed and the result already says how."""


def _stage(result, stage, status, fn):
    """Runs fn(); on an exception records it in `result` and raises _StageFailed."""
    try:
        return fn()
    except MemoryError as exc:
        result.fail("oom", stage, exc)
    except Exception as exc:
        result.fail(status, stage, exc)
    raise _StageFailed()


def run(request, result, context):
    try:
        _run(request, result)
    except _StageFailed:
        pass


def _run(request, result):
    import torch

    dtype = dtype_of(request.get("dtype", "float32"))
    batch, seq_len = int(request.get("batch_size", 1)), int(request.get("seq_len", 32))
    seed = int((request.get("kind_params") or {}).get("seed", 0))
    model_type = request.get("model_type", "")
    model_path = request.get("model_path", "")
    overrides = factory.model_overrides(model_type) if model_type and not model_path else {}
    peak = PeakRss()
    peak.start()
    result.metrics["memory_method"] = peak.method
    result.metrics["torch_num_threads"] = torch.get_num_threads()

    if not model_path and not request.get("model_class") and model_type in heads.registered_model_types() \
            and not factory.head_class_name(model_type)[0]:
        result.set_status("skipped", f"model type {model_type} has no modelling class "
                                     "(a configuration-only entry, e.g. a sub-model config)")
        return

    def resolve():
        if model_path:
            return factory.checkpoint_class(model_path, request.get("model_class", ""))
        class_name, head_kind = factory.head_class_name(model_type, request.get("model_class", ""))
        if not class_name:
            raise LookupError(f"model type {model_type!r} has no modelling class")
        return factory.import_class(model_type, class_name), head_kind

    cls, head_kind = _stage(result, "import", "fail_to_load", resolve)
    result.model_class = cls.__name__

    def build():
        if model_path:
            model = cls.from_pretrained(model_path, local_files_only=True, dtype=dtype).eval()
        else:
            model = factory.build_model(cls, factory.reduce_config(model_type, overrides), dtype, seed)
        inputs = make_inputs(model, model.config, head_kind, batch, seq_len, seed, overrides.get("inputs"))
        inputs = {k: v.to(dtype) if v.is_floating_point() else v for k, v in inputs.items()}
        return model, inputs

    start = time.perf_counter()
    model, inputs = _stage(result, "build", "fail_to_load", build)
    result.metrics["build_s"] = time.perf_counter() - start
    result.metrics["param_count"] = sum(p.numel() for p in model.parameters())

    def call():
        with torch.inference_mode():
            return model(**inputs)

    start = time.perf_counter()
    _stage(result, "prepare", "fail_to_run", call)
    result.metrics["prepare_s"] = time.perf_counter() - start

    median, p90, iters = _stage(result, "steady", "fail_to_run",
                                lambda: steady_state(call, measure_params(request)))
    result.metrics.update(steady_median_s=median, steady_p90_s=p90, steady_iters=iters)
    result.metrics["host_peak_rss_bytes"] = peak.read()
    result.set_status("pass")
