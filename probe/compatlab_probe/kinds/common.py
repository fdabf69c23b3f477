"""What the model kinds (forward, generate, train) share: stages, building a model and
its inputs for a request, a CPU reference copy, and interleaved steady-state timing.

    try:
        built = build_model_and_inputs(request, result, dtype, target.device)
        out = stage(result, "prepare", "fail_to_run", lambda: built.model(**built.inputs))
    except StageFailed:
        return          # the result already says what happened
"""

import copy
import time

from .. import factory, heads
from ..inputs import make_inputs
from ..measure import percentiles

DTYPES = {"float32": "float32", "fp32": "float32", "float16": "float16", "fp16": "float16",
          "bfloat16": "bfloat16", "bf16": "bfloat16", "float64": "float64", "fp64": "float64"}
# The sequence length of a model whose inputs do not depend on it (images, fixed audio features).
DEFAULT_SEQ_LEN = 32
_INPUT_WORDS = {"pixel_values": "image", "pixel_values_videos": "video", "input_features": "audio feature",
                "input_values": "audio", "hidden_states": "image patch"}


def dtype_of(name):
    """The torch dtype for a request's dtype name, or None if unknown."""
    import torch

    attr = DTYPES.get(name)
    return getattr(torch, attr) if attr else None


class StageFailed(Exception):
    """A stage failed (or the test was skipped) and the result already says how."""


def stage(result, name, status, fn):
    """Runs fn() and returns its value; on an exception records it in `result` as
    `status` at stage `name` (MemoryError: oom) and raises StageFailed."""
    try:
        return fn()
    except StageFailed:
        raise
    except MemoryError as exc:
        result.fail("oom", name, exc)
    except Exception as exc:
        result.fail(status, name, exc)
    raise StageFailed()


def skip(result, reason):
    """Marks the test skipped with `reason` and raises StageFailed."""
    result.set_status("skipped", reason)
    raise StageFailed()


def kind_param(request, name, default):
    """A kind_params value (strings on the wire) as the type of `default`."""
    value = (request.get("kind_params") or {}).get(name, default)
    return type(default)(value)


class Built:
    """A built test: model (on the device), inputs (on the device), and how they were made."""

    def __init__(self, **kw):
        self.model = kw["model"]                # on the target device, eval mode, in dtype
        self.inputs = kw["inputs"]              # {name: tensor} on the target device
        self.cpu_inputs = kw["cpu_inputs"]      # the same inputs on the CPU (float ones in dtype)
        self.cls = kw["cls"]
        self.head_kind = kw["head_kind"]
        self.config = kw["config"]              # the reduced configuration (None for checkpoints)
        self.dtype = kw["dtype"]
        self.seed = kw["seed"]
        self.build_s = kw["build_s"]
        self.token_inputs = kw["token_inputs"]  # True when the inputs are token ids
        self.position_changes = kw.get("position_changes") or {}

    @property
    def tokens_per_call(self):
        """batch * seq_len of one forward call for token models, else None."""
        ids = self.cpu_inputs.get("input_ids")
        if ids is None:
            ids = self.cpu_inputs.get("decoder_input_ids")
        return int(ids.numel()) if ids is not None and self.token_inputs else None


def resolve_class(request, result):
    """(modelling class, head kind) for the request, at stage import (fail_to_load).

    A registered model type with no modelling class at all is skipped.
    """
    model_type = request.get("model_type", "")
    model_path = request.get("model_path", "")
    if not model_path and not request.get("model_class") and model_type in heads.registered_model_types() \
            and not factory.head_class_name(model_type)[0]:
        skip(result, f"model type {model_type} has no modelling class "
                     "(a configuration-only entry, e.g. a sub-model config)")

    def resolve():
        if model_path:
            return factory.checkpoint_class(model_path, request.get("model_class", ""))
        class_name, head_kind = factory.head_class_name(model_type, request.get("model_class", ""))
        if not class_name:
            raise LookupError(f"model type {model_type!r} has no modelling class")
        return factory.import_class(model_type, class_name), head_kind

    cls, head_kind = stage(result, "import", "fail_to_load", resolve)
    result.model_class = cls.__name__
    return cls, head_kind


def _cast_inputs(inputs, dtype):
    return {k: v.to(dtype) if v.is_floating_point() else v for k, v in inputs.items()}


def build_model_and_inputs(request, result, dtype, device, positions_needed=None):
    """Builds the request's model and inputs on `device`; returns a Built.

    Stages import and build (fail_to_load). Skips (StageFailed with status skipped):
    configuration-only model types; a sequence length beyond the architecture's
    position limit where the reducer cannot raise it; a seq_len other than
    DEFAULT_SEQ_LEN on a model whose inputs do not depend on it.
    `positions_needed`: positions the test uses (default seq_len; generate passes
    seq_len + new tokens). Sets result.model_class and metrics build_s and param_count.
    """
    batch, seq_len = int(request.get("batch_size", 1)), int(request.get("seq_len", DEFAULT_SEQ_LEN))
    seed = kind_param(request, "seed", 0)
    model_type = request.get("model_type", "")
    model_path = request.get("model_path", "")
    overrides = factory.model_overrides(model_type) if model_type and not model_path else {}
    cls, head_kind = resolve_class(request, result)
    needed = int(positions_needed or seq_len)

    def make_config():
        config = factory.reduce_config(model_type, overrides)
        return config, factory.fit_positions(config, needed, overrides)

    start = time.perf_counter()
    config, changes = (None, {}) if model_path else stage(result, "build", "fail_to_load", make_config)
    if isinstance(changes, str):  # the reducer cannot give the architecture that many positions
        skip(result, changes)

    def build():
        if model_path:
            model = cls.from_pretrained(model_path, local_files_only=True, dtype=dtype).eval()
        else:
            model = factory.build_model(cls, config, dtype, seed)
        inputs = make_inputs(model, model.config, head_kind, batch, seq_len, seed, overrides.get("inputs"))
        other = make_inputs(model, model.config, head_kind, batch, seq_len + 1, seed, overrides.get("inputs"))
        varies = any(k not in other or tuple(v.shape) != tuple(other[k].shape) for k, v in inputs.items())
        return model, _cast_inputs(inputs, dtype), varies

    model, cpu_inputs, varies = stage(result, "build", "fail_to_load", build)
    if not varies and seq_len != DEFAULT_SEQ_LEN:
        main = next((k for k in cpu_inputs if k in _INPUT_WORDS), next(iter(cpu_inputs), "its"))
        skip(result, f"seq_len does not apply to {_INPUT_WORDS.get(main, main)} inputs "
                     f"(model {model_type or model_path} takes no sequence; only seq_len {DEFAULT_SEQ_LEN} runs)")
    token_inputs = "input_ids" in cpu_inputs or "decoder_input_ids" in cpu_inputs

    def to_device():
        return model.to(device), {k: v.to(device) for k, v in cpu_inputs.items()}

    model, inputs = stage(result, "build", "fail_to_load", to_device)
    build_s = time.perf_counter() - start
    result.metrics["build_s"] = build_s
    result.metrics["param_count"] = sum(p.numel() for p in model.parameters())
    return Built(model=model, inputs=inputs, cpu_inputs=cpu_inputs, cls=cls, head_kind=head_kind, config=config,
                 dtype=dtype, seed=seed, build_s=build_s, token_inputs=token_inputs, position_changes=changes)


def cpu_copy(model, dtype=None):
    """A deep copy of `model` on the CPU (in `dtype` when given) with the same weights and
    buffers; `model` itself is untouched, and device tensors are copied straight to the
    CPU (no second copy on the device)."""
    import torch

    memo = {}
    for p in model.parameters():
        if p.device.type != "cpu":
            memo[id(p)] = torch.nn.Parameter(p.detach().to("cpu"), requires_grad=p.requires_grad)
    for b in model.buffers():
        if b.device.type != "cpu":
            memo[id(b)] = b.detach().to("cpu")
    ref = copy.deepcopy(model, memo)
    ref = ref.to("cpu")
    if dtype is not None:
        ref = ref.to(dtype)
    return ref.eval()


def reference_inputs(inputs, dtype):
    """Inputs on the CPU, floating ones in `dtype` (the reference's)."""
    return {k: (v.to("cpu").to(dtype) if v.is_floating_point() else v.to("cpu")) for k, v in inputs.items()}


def interleaved_steady(compiled_fn, eager_fn, params, sync=lambda: None):
    """Steady state of a compiled and an eager callable of the same model, calls alternated.

    Each runs params["warmup"] times first; then compiled and eager calls alternate
    (each synchronised and timed alone) until both have min_iters iterations and
    min_time_s has passed. Returns the metrics dict: steady_median_s, steady_p90_s,
    steady_iters, steady_min_s (compiled), eager_steady_median_s, eager_steady_p90_s, speedup
    (eager median / compiled median).
    """
    for _ in range(params["warmup"]):
        compiled_fn()
        eager_fn()
    sync()
    compiled, eager = [], []
    begin = time.perf_counter()
    while len(compiled) < max(1, params["min_iters"]) or time.perf_counter() - begin < params["min_time_s"]:
        for fn, times in ((compiled_fn, compiled), (eager_fn, eager)):
            start = time.perf_counter()
            fn()
            sync()
            times.append(time.perf_counter() - start)
    median, p90 = percentiles(compiled)
    eager_median, eager_p90 = percentiles(eager)
    return {
        "steady_median_s": median, "steady_p90_s": p90, "steady_iters": len(compiled), "steady_min_s": min(compiled),
        "eager_steady_median_s": eager_median, "eager_steady_p90_s": eager_p90,
        "speedup": eager_median / median if median > 0 else None,
    }


# --------------------------------------------------------------------------- phases shared by the kinds


def begin(request, result):
    """The start of a model kind: (target, peak). Skips when the target cannot run here;
    starts the host peak-RSS phase (the kinds restart it after the build, with the device
    peak) and sets memory_method and torch_num_threads."""
    import torch

    from ..measure import PeakRss
    from ..target import Target

    target = Target.from_request(request)
    reason = target.check_available()
    if reason:
        skip(result, reason)
    peak = PeakRss()
    peak.start()
    result.metrics["memory_method"] = peak.method
    result.metrics["torch_num_threads"] = torch.get_num_threads()
    return target, peak


def first_call(result, fn, compiling):
    """Runs the first (preparing) call: in compile mode a dynamo/inductor/backend error is
    fail_to_compile at stage compile; any other error fail_to_run at prepare; MemoryError oom."""
    from ..compiler import is_compile_error

    try:
        return fn()
    except StageFailed:
        raise
    except MemoryError as exc:
        result.fail("oom", "prepare", exc)
    except Exception as exc:
        if compiling and is_compile_error(exc):
            result.fail("fail_to_compile", "compile", exc)
        else:
            result.fail("fail_to_run", "prepare", exc)
    raise StageFailed()


def require_capture(result, delta):
    """harness_error (stage compile) when a compile-mode first call captured no graph."""
    if delta["unique_graphs"] == 0 and delta["captured_calls"] == 0:
        result.set_status("harness_error", "compile mode: dynamo captured no graph (unique_graphs 0, "
                                           "captured_calls 0); the test would measure eager code", "compile")
        raise StageFailed()


def reference_failed(result, exc):
    """The CPU reference could not run: the verdict is unknown and the test's own result stands."""
    if isinstance(exc, MemoryError):
        result.fail("oom", "compare", exc)
        raise StageFailed() from exc
    result.metrics.update(acc_ref_dtype=None, acc_rule=None)
    result.set_status("pass", f"accuracy not measured: the CPU reference failed: {type(exc).__name__}: "
                              f"{str(exc)[:300]}")


def audit_call(result, target, call):
    """One un-timed call under the fallback audit; only the metrics where it does not apply."""
    from ..audit import OpAudit, unavailable

    if not target.audit_applicable:
        result.metrics.update(OpAudit(target).metrics())
        return
    try:
        with OpAudit(target) as op_audit:
            call()
        target.sync()
        result.metrics.update(op_audit.metrics())
    except Exception as exc:  # noqa: BLE001 - an audit failure never fails the test
        result.metrics.update(unavailable(f"{type(exc).__name__}: {exc}"[:300]))
