"""What the model kinds (forward, generate, train) share below their phase skeleton
(phases.py): stages, building a model and its inputs for a request, a CPU reference
copy, and steady-state timing of a compiled and an eager callable in alternating blocks.

    built = build_model_and_inputs(request, result, dtype, target.device)
    out = stage(result, "steady", "fail_to_run", lambda: built.model(**built.inputs))
    # a failed stage raises StageFailed: the result already says what happened
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import os
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

from ..measure.timing import go_on, percentiles, steady_figures
from ..models import code_model, factory, heads, hub
from ..models.inputs import make_inputs, uncallable_reason
from ..protocol import stage_marks
from ..protocol.request import DEFAULT_SEQ_LEN, MeasureSettings, TestRequest
from ..protocol.result import Result, is_out_of_memory

_INPUT_WORDS = {"pixel_values": "image", "pixel_values_videos": "video", "input_features": "audio feature",
                "input_values": "audio", "hidden_states": "image patch"}


def dtype_of(name: str) -> Any:
    """The torch dtype of a request's (canonical) dtype name."""
    import torch

    return getattr(torch, name)


class StageFailed(Exception):
    """The kind ends here: a stage failed (or the test was skipped) and the result already says how."""


@contextmanager
def recorded(result: Result, name: str, status: str = "",
             handle: Callable[[Exception], None] | None = None) -> Iterator[None]:
    """A stage as a context manager: an exception in it is recorded in `result` as `status`
    at stage `name` (or by `handle(exc)`, which then says how), a refused allocation
    (MemoryError, torch's OutOfMemoryError: result.is_out_of_memory) as oom at `name`;
    either way the kind ends (StageFailed). Entering and leaving it are stage marks
    (stage_marks: where a child that dies in it was)."""
    stage_marks.enter(name)
    try:
        yield
    except StageFailed:
        raise
    except Exception as exc:
        if is_out_of_memory(exc):
            result.fail("oom", name, exc)
            raise StageFailed() from exc
        if handle is not None:
            handle(exc)
        else:
            result.fail(status, name, exc)
        raise StageFailed() from exc
    finally:
        stage_marks.leave()


def stage(result: Result, name: str, status: str, fn: Callable[[], Any]) -> Any:
    """Runs fn() as stage `name` (see `recorded`) and returns its value."""
    with recorded(result, name, status):
        return fn()


def skip(result: Result, reason: str) -> NoReturn:
    """Marks the test skipped with `reason` and raises StageFailed."""
    result.set_status("skipped", reason)
    raise StageFailed()


class Built:
    """A built test: model (on the device), inputs (on the device), and how they were made."""

    def __init__(self, **kw: Any):
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
        self.hinted = kw.get("hinted") or set()  # inputs overrides.json gave (inputs.unbuilt_input_reason)
        self.hints = kw.get("hints")  # overrides.json's inputs (make_inputs' hints)
        self.own_inputs = kw.get("own_inputs", False)  # a code model's inputs are its own

    @property
    def tokens_per_call(self) -> int | None:
        """batch * seq_len of one forward call for token models, else None."""
        ids = self.cpu_inputs.get("input_ids")
        if ids is None:
            ids = self.cpu_inputs.get("decoder_input_ids")
        return int(ids.numel()) if ids is not None and self.token_inputs else None


def resolve_class(request: TestRequest, result: Result) -> tuple[type, str]:
    """(modelling class, head kind) for the request, at stage import (fail_to_load).

    A registered model type with no modelling class at all is skipped.
    """
    model_type, model_path, model_class = request.model_type, request.model_path, request.model_class
    if not model_path and not model_class and model_type in heads.registered_model_types() \
            and not factory.head_class_name(model_type)[0]:
        skip(result, f"model type {model_type} has no modelling class "
                     "(a configuration-only entry, e.g. a sub-model config)")

    def resolve():
        if request.model_id.startswith(code_model.PREFIX):
            _check_code_files(request, result)
            return code_model.model_class(request.model_path, request.model_type,
                                          request.kind_params.seed)
        if model_path and code_model.auto_map(model_path):
            if not request.kind_params.trust_remote_code:
                raise PermissionError(f"checkpoint {model_path} names custom code (config.json auto_map); "
                                      "planned without --trust-remote-code")
            return code_model.remote_class(model_path)
        if model_path:
            return factory.checkpoint_class(model_path, model_class)
        class_name, head_kind = factory.head_class_name(model_type, model_class)
        if not class_name:
            raise LookupError(f"model type {model_type!r} has no modelling class")
        return factory.import_class(model_type, class_name), head_kind

    cls, head_kind = stage(result, "import", "fail_to_load", resolve)
    result.model_class = cls.__name__
    return cls, head_kind


def _cast_inputs(inputs, dtype):
    return {k: v.to(dtype) if v.is_floating_point() else v for k, v in inputs.items()}


def build_model_and_inputs(request: TestRequest, result: Result, dtype: Any, device: Any,
                           positions_needed: int | None = None) -> Built:
    """Builds the request's model and inputs on `device`; returns a Built.

    Stages import and build (fail_to_load). Skips (StageFailed with status skipped):
    configuration-only model types; a sequence length beyond the architecture's
    position limit where the reducer cannot raise it; a seq_len other than
    DEFAULT_SEQ_LEN on a model whose inputs do not depend on it.
    `positions_needed`: positions the test uses (default seq_len; generate passes
    seq_len + new tokens). Sets result.model_class and metrics build_s and param_count.
    """
    batch, seq_len, seed = request.batch_size, request.seq_len, request.kind_params.seed
    size, pretrained = request.kind_params.size, request.kind_params.weights == "pretrained"
    start = time.perf_counter()
    source = model_source(request, result, pretrained)
    if source.request is not None:
        request = source.request
    model_type, model_path = request.model_type, request.model_path
    overrides = factory.model_overrides(model_type) if model_type and not model_path else {}
    cls, head_kind = resolve_class(request, result)
    is_code = request.model_id.startswith(code_model.PREFIX)
    milder = ""  # a reduction rerun whose full size does not fit: why, in words

    def make_config():
        nonlocal milder
        config, milder = _config(request, source, cls, dtype, overrides)
        return config, factory.fit_positions(config, int(positions_needed or seq_len), overrides)

    config, changes = (None, {}) if model_path else stage(result, "build", "fail_to_load", make_config)
    if is_code:
        changes = {}
    if isinstance(changes, str):  # the reducer cannot give the architecture that many positions
        skip(result, changes)
    record_size(result, source, config, "reduced" if milder else size, pretrained)
    if milder:
        result.metrics["reduction"] = milder
    size = "reduced" if milder else size

    def build():
        model = _model(request, cls, config, source, dtype, size, seed)
        hints = overrides.get("inputs")
        inputs = make_inputs(model, model.config, head_kind, batch, seq_len, seed, hints)
        other = make_inputs(model, model.config, head_kind, batch, seq_len + 1, seed, hints)
        varies = any(k not in other or tuple(v.shape) != tuple(other[k].shape) for k, v in inputs.items())
        return model, _cast_inputs(inputs, dtype), varies, False

    if is_code:
        build = _code_build(request, result, dtype, batch, seq_len, seed)
        config = None
    model, cpu_inputs, varies, own_inputs = stage(result, "build", "fail_to_load", build)
    cls = _runnable_class(request, result, model, cls, cpu_inputs)
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
                 dtype=dtype, seed=seed, build_s=build_s, token_inputs=token_inputs, position_changes=changes,
                 hinted=set(overrides.get("inputs") or {}) - {"main_input"}, hints=overrides.get("inputs"),
                 own_inputs=own_inputs)


def inputs_for_shape(built: Built, batch_size: int, seq_len: int, device: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(CPU inputs, device inputs) of `built`'s model at another shape, made as its own were
    (same seed and hints; float inputs in its dtype): a dynamic test's later shapes."""
    cpu = _cast_inputs(make_inputs(built.model, built.model.config, built.head_kind, batch_size, seq_len,
                                   built.seed, built.hints), built.dtype)
    return cpu, {k: v.to(device) for k, v in cpu.items()}


def _config(request: TestRequest, source: Any, cls: type, dtype: Any, overrides: dict[str, Any]) -> tuple[Any, str]:
    """(the configuration to build, "" or why a full-size reduction rerun takes the milder
    reduction): a Hub model's own (reduced unless full size or pretrained), the type's default
    at full size, else the reduced default."""
    size, pretrained = request.kind_params.size, request.kind_params.weights == "pretrained"
    if source.config is not None:  # a Hub model's own configuration
        config = source.config if size == "full" or pretrained else \
            factory.reduce_given_config(source.config, overrides)
    elif size == "full":
        from transformers import CONFIG_MAPPING

        config = CONFIG_MAPPING[request.model_type]()
    else:
        config = factory.reduce_config(request.model_type, overrides)
    budget = request.kind_params.fit_bytes
    if not (size == "full" and not pretrained and budget > 0):
        return config, ""
    need = factory.full_size_bytes(cls, config, dtype)
    if need is not None and need <= budget:
        return config, ""
    milder = factory.milder_config(source.config, request.model_type, overrides)
    return milder, (f"milder reduction (full size needs "
                    f"{'an unknown amount' if need is None else _gib(need)} > budget {_gib(budget)}): "
                    f"the full config reduced {factory.describe_reduction(config, milder)}")


def _model(request: TestRequest, cls: type, config: Any, source: Any, dtype: Any, size: str, seed: int) -> Any:
    """The model in eval mode: a checkpoint's, the Hub's pretrained weights, or built seeded at `size`."""
    if request.model_path and request.kind_params.trust_remote_code:
        return cls.from_pretrained(request.model_path, local_files_only=True, dtype=dtype,
                                   trust_remote_code=True).eval()
    if request.model_path:
        return cls.from_pretrained(request.model_path, local_files_only=True, dtype=dtype).eval()
    if request.kind_params.weights == "pretrained":
        return cls.from_pretrained(source.snapshot_dir, config=config, local_files_only=True, dtype=dtype).eval()
    if size == "full":
        return factory.build_full_model(cls, config, dtype, seed)
    return factory.build_model(cls, config, dtype, seed)


def _runnable_class(request: TestRequest, result: Result, model: Any, cls: type, cpu_inputs: dict[str, Any]) -> type:
    """The class under test: a code model's own; else `cls`, once forward takes the inputs built
    for it (else harness_error: compatlab's own failure, its inputs or its choice of class, never
    counted against the model, doc/results-schema.md, "Blame")."""
    if request.model_id.startswith(code_model.PREFIX):
        result.model_class = type(model).__name__
        return type(model)
    if why := uncallable_reason(model, cpu_inputs):
        result.set_status("harness_error", why, "build")
        raise StageFailed()
    return cls


def _gib(nbytes: int) -> str:
    return f"{nbytes / (1 << 30):.2f} GiB"


class Source:
    """Where a request's model comes from: its Hub configuration, if any (model_source)."""

    def __init__(self, request: TestRequest | None = None, config: Any = None, snapshot_dir: str = ""):
        self.request = request        # the request with the Hub config's model_type, or None
        self.config = config          # the Hub model's own configuration, or None
        self.snapshot_dir = snapshot_dir


def _check_code_files(request: TestRequest, result: Result) -> None:
    """Records a code model's files (code_files: FILE and those it imports from its directory
    tree) and checks their hash against the id's before any of them runs: code edited since
    planning is another model (RuntimeError, fail_to_load at import)."""
    path, _ = code_model.split_spec(request.model_path)
    files = code_model.code_files(path)
    result.metrics["code_files"] = files
    digest = code_model.files_digest(files)
    planned = request.model_id.rpartition("@")[2]
    if not digest.startswith(planned):
        names = ", ".join(f["rel"] for f in files)
        raise RuntimeError(f"model code {path} changed since it was planned as {request.model_id}: "
                           f"its code files ({names}) now hash to {digest[:code_model.ID_HASH_CHARS]}; "
                           "plan it again")


def _code_build(request: TestRequest, result: Result, dtype: Any, batch: int, seq_len: int,
                seed: int) -> Callable[[], Any]:
    """The build step of a code model (code_model.py; its files checked at import): built
    (given the test's batch size and seq_len where its function takes them), inputs made
    unless the code gave its own."""
    spec = request.model_path

    def build():
        model, inputs, _ = code_model.build(spec, seed, shape={"batch_size": batch, "seq_len": seq_len})
        model = model.to(dtype=dtype).eval()
        own = inputs is not None
        if inputs is None:
            config = getattr(model, "config", None)
            kind = code_model.registered_head(request.model_type, type(model))[1]
            inputs = make_inputs(model, config, kind, batch, seq_len, seed, None)
            other = make_inputs(model, config, kind, batch, seq_len + 1, seed, None)
            varies = any(k not in other or tuple(v.shape) != tuple(other[k].shape) for k, v in inputs.items())
        else:
            varies = True  # the code's own inputs: seq_len is the code's business (it is given it)
        return model, _cast_inputs(inputs, dtype), varies, own

    return build


def model_source(request: TestRequest, result: Result, pretrained: bool) -> Source:
    """Metrics model_source (and for Hub models hub_repo_id, hub_commit, config_hash); for a
    `hub:` model its config through huggingface_hub (stage import, fail_to_load with the
    reason: missing repo, gated repo, no network) and, with `pretrained`, its weights (else
    skipped with the reason)."""
    if request.model_id.startswith(code_model.PREFIX):
        result.metrics.update(model_source="code", reduced=0,
                              reduction="the team's own code, as its function builds it")
        return Source()
    if request.model_path:
        result.metrics["model_source"] = "ckpt"
        path = os.path.join(request.model_path, "config.json")
        if os.path.isfile(path):
            with open(path, "rb") as f:
                result.metrics["config_hash"] = hashlib.sha256(f.read()).hexdigest()
        return Source()
    if not request.model_id.startswith(hub.HUB_PREFIX):
        result.metrics["model_source"] = "hf"
        return Source()
    result.metrics["model_source"] = "hub"
    try:
        repo, revision = hub.parse_hub_id(request.model_id)
        result.metrics["hub_repo_id"] = repo
        with hub.network(hub.child_online() and not request.kind_params.fit_bytes):  # a rerun: offline
            found = hub.fetch(repo, revision)
    except hub.HubError as exc:
        result.fail("fail_to_load", "import", exc, detail=str(exc))
        raise StageFailed() from exc
    result.metrics.update(hub_commit=found.commit, config_hash=found.config_hash)
    if pretrained:
        try:
            with hub.network(hub.child_online()):
                hub.fetch_weights(repo, found.commit)
        except hub.HubError as exc:
            skip(result, f"--weights: {exc}")

    def read():
        from transformers import AutoConfig

        return AutoConfig.from_pretrained(found.snapshot_dir, local_files_only=True)

    config = stage(result, "import", "fail_to_load", read)
    return Source(request=dataclasses.replace(request, model_type=config.model_type), config=config,
                  snapshot_dir=found.snapshot_dir)


def record_size(result: Result, source: Source, config: Any, size: str, pretrained: bool) -> None:
    """Metrics reduced (1 or 0) and reduction (how, in words)."""
    if result.metrics.get("model_source") == "code":
        return  # model_source said it
    if config is None:  # a local checkpoint, as stored
        result.metrics.update(reduced=0, reduction="checkpoint as stored (its own weights)")
    elif pretrained:
        result.metrics.update(reduced=0, reduction="full size, the repo's own weights (from_pretrained)")
    elif size == "full":
        origin = "the repo's config" if source.config is not None else "the architecture's default config"
        result.metrics.update(reduced=0, reduction=f"full size ({origin}), random weights, init skipped")
    elif source.config is not None:
        result.metrics.update(reduced=1, reduction="the repo's config reduced, features kept: "
                              + factory.describe_reduction(source.config, config))
    else:
        result.metrics.update(reduced=1, reduction="the architecture's default config reduced by the factory rules")


def cpu_copy(model: Any, dtype: Any = None) -> Any:
    """A deep copy of `model` on the CPU (in `dtype` when given) with the same weights and
    buffers; `model` itself is untouched, and device tensors are copied straight to the
    CPU (no second copy on the device)."""
    import torch

    from ..stacks.parallel import unsharded

    model = unsharded(model)  # a model split over ranks: the copy made before the split
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


def reference_inputs(inputs: dict[str, Any], dtype: Any) -> dict[str, Any]:
    """Inputs on the CPU, floating ones in `dtype` (the reference's)."""
    return {k: (v.to("cpu").to(dtype) if v.is_floating_point() else v.to("cpu")) for k, v in inputs.items()}


# Alternating blocks per kind of call (compiled, eager) at least: the measured phase is cut
# into this many compiled blocks and as many eager ones, so load drift hits both.
STEADY_BLOCKS = 4


def alternating_steady(compiled_fn: Callable[[], Any], eager_fn: Callable[[], Any], params: MeasureSettings,
                       sync: Callable[[], Any] = lambda: None, exact_calls: int | None = None) -> dict[str, Any]:
    """Steady state of a compiled and an eager callable of the same model, measured in
    alternating blocks of consecutive calls of one kind (doc/probe.md, "Steady state").

    Each runs params.warmup times first (all compiled calls, then all eager ones). Then
    blocks alternate, compiled first: a block is at least min_iters // STEADY_BLOCKS (at
    least 1) consecutive calls of one callable, each synchronised and timed alone, lasting at
    least min_time_s / (2 * STEADY_BLOCKS); pairs of blocks go on until each kind has
    min(STEADY_BLOCKS, min_iters) blocks and min_iters calls and min_time_s has passed.
    Per-call interleaving is avoided: switching kernels on every call slows the compiled
    calls by tens of percent on the CPU (doc/probe.md).
    `exact_calls` (train: its steps 2..K): exactly that many calls of each callable, in
    min(STEADY_BLOCKS, exact_calls) blocks as equal as can be, no time criterion.
    params.max_time_s (without exact_calls): once that budget, counted from the first
    warm-up call, is spent, warm-up stops and no further pair of blocks starts (at least one
    pair runs; a block ends after its first call past the budget).

    Returns the metrics dict: steady_median_s, steady_p90_s, steady_iters, steady_min_s,
    steady_ci_low_s, steady_ci_high_s (compiled calls: steady_figures over the compiled
    blocks' medians), eager_steady_median_s, eager_steady_p90_s (eager calls), speedup
    (median of the eager blocks' medians / median of the compiled blocks' medians).
    """
    started_at = time.perf_counter()

    def spent() -> bool:
        return exact_calls is None and params.budget_spent(started_at, time.perf_counter())

    for fn in (compiled_fn, eager_fn):
        for _ in range(params.warmup):
            if spent():
                break
            fn()
        sync()
    block_calls = max(1, params.min_iters // STEADY_BLOCKS)
    min_blocks = min(STEADY_BLOCKS, max(1, params.min_iters))
    block_s = params.min_time_s / (2 * STEADY_BLOCKS)
    calls: dict[str, list[float]] = {"compiled": [], "eager": []}
    medians: dict[str, list[float]] = {"compiled": [], "eager": []}
    begin = time.perf_counter()

    def block(name: str, fn: Callable[[], Any], calls_at_least: int, seconds_at_least: float) -> None:
        times = []
        started = time.perf_counter()
        while not times or not spent() and (len(times) < calls_at_least
                                            or time.perf_counter() - started < seconds_at_least):
            start = time.perf_counter()
            fn()
            sync()
            times.append(time.perf_counter() - start)
        calls[name].extend(times)
        medians[name].append(statistics.median(times))

    if exact_calls is not None:
        n_blocks = max(1, min(STEADY_BLOCKS, exact_calls))
        for i in range(n_blocks):
            count = max(1, exact_calls // n_blocks + (1 if i < exact_calls % n_blocks else 0))
            block("compiled", compiled_fn, count, 0.0)
            block("eager", eager_fn, count, 0.0)
    while exact_calls is None and (len(medians["compiled"]) < min_blocks and not spent()
                                   or go_on(calls["compiled"], params, time.perf_counter() - begin,
                                            spent())):
        block("compiled", compiled_fn, block_calls, block_s)
        block("eager", eager_fn, block_calls, block_s)
    eager_median, eager_p90 = percentiles(calls["eager"])
    compiled_blocks = statistics.median(medians["compiled"])
    return {
        **steady_figures(calls["compiled"], medians["compiled"]),
        "eager_steady_median_s": eager_median,
        "eager_steady_p90_s": eager_p90,
        "speedup": statistics.median(medians["eager"]) / compiled_blocks if compiled_blocks > 0 else None,
    }
