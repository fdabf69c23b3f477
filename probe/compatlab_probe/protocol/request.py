"""The test request (doc/worker-protocol.md, "The test request"), parsed once into typed parts.

    request = parse_request(raw)     # raw: the JSON object the supervisor sent; BadRequest if malformed
    request.kind, request.seq_len, request.measure.warmup, request.kind_params.new_tokens, ...

Every default of the request is here, once: a field the wire leaves out (or sends
as null) takes the value of its dataclass field below. Nothing outside this module
reads the raw dict. The wire format is the protocol's; unknown keys are ignored (a
version-1 peer may send fields this probe does not know), a known key of the wrong
type or out of range is a BadRequest, which the child answers with harness_error.

Nothing here imports torch: the zygote and the reproduction-script generator parse too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

# dtype names of the wire -> the canonical name (torch's attribute).
DTYPES = {"float32": "float32", "fp32": "float32", "float16": "float16", "fp16": "float16",
          "bfloat16": "bfloat16", "bf16": "bfloat16", "float64": "float64", "fp64": "float64"}
MODES = ("eager", "compile", "export")
MEMORY_LIMIT_METHODS = ("", "cgroup_v1", "cgroup_v2", "rlimit")
# torch.compile keyword arguments a request's compile_options (or a profile's compile.options) may carry.
COMPILE_KWARGS = ("dynamic", "fullgraph", "mode", "options")
# The sequence length of a model whose inputs do not depend on it (images, fixed audio features).
DEFAULT_SEQ_LEN = 32
_TARGET_NAME = re.compile(r"^[a-z][a-z0-9_:-]*$")
_BAD_VALUE_CHARS = 200


class BadRequest(ValueError):
    """A malformed request; str() says which field and why (the harness_error's detail)."""


# --------------------------------------------------------------------------- typed parts


@dataclass(frozen=True)
class MeasureSettings:
    """`measure`: warm-up calls, then calls until both min_iters and min_time_s are reached,
    then on until the median's confidence interval is tight (doc/probe.md, "Steady state").
    max_time_s (the sweep's --max-measure-s) is the budget of the whole measurement, counted
    from the first warm-up call: once spent, with at least one measured call, no further call
    starts, minimums or not (budget_spent). 0 (a request that states none, the probe's own
    tests): no budget, and no extension past the minimums."""

    warmup: int = 3
    min_iters: int = 10
    min_time_s: float = 1.0
    max_time_s: float = 0.0

    def budget_spent(self, begin: float, now: float) -> bool:
        """True when a budget is set and `now - begin` (perf_counter seconds) reached it."""
        return self.max_time_s > 0 and now - begin >= self.max_time_s

    def clamped(self, most: Mapping[str, int]) -> MeasureSettings:
        """These settings with each field named in `most` at most that value."""
        return replace(self, **{k: min(getattr(self, k), v) for k, v in most.items()})


PROFILE_MODES = ("", "steady", "prepare")


@dataclass(frozen=True)
class ProfileSettings:
    """`profile` (doc/worker-protocol.md; doc/probe.md, "Profile"): mode "" (none), "steady"
    (torch.profiler over a window of steady calls after the measured ones) or "prepare" (the
    first call); the gzip Chrome trace goes to trace_path ("" keeps none), at most
    trace_max_bytes of it (a larger one is not kept)."""

    mode: str = ""
    trace_path: str = ""
    trace_max_bytes: int = 0


@dataclass(frozen=True)
class MemoryLimit:
    """`memory_limit`: method "" (none), cgroup_v1/cgroup_v2 (join cgroup_procs) or rlimit (RLIMIT_AS bytes)."""

    method: str = ""
    bytes: int = 0
    cgroup_procs: str = ""


@dataclass(frozen=True)
class KindParams:
    """`kind_params` (strings on the wire) as typed values; `given` keeps the wire's strings, all keys."""

    seed: int = 0                 # every model kind
    new_tokens: int = 16          # generate: tokens each call makes
    steps: int = 3                # train: K
    bytes: int = 100 * 1000 * 1000  # flood: bytes to each of stdout and stderr
    pid: int = 0                  # kill-zygote: 0 = the zygote that forked the child
    requests: int = 32            # load: requests of the workload
    scenario: str = "offline"     # load: single_stream, offline or server (rate, slo: kinds/load.py)
    size: str = "reduced"         # model kinds: reduced or full (doc/model-factory.md, "Sizes")
    weights: str = ""             # model kinds: "" (random) or pretrained (the Hub repo's own)
    # A reduction rerun (size full): the memory budget, bytes; full size only when its estimate
    # fits, else the milder reduction (doc/model-factory.md, "Reduction reruns"); offline.
    fit_bytes: int = 0
    trust_remote_code: bool = False  # checkpoints: their auto_map code may be imported (--trust-remote-code)
    given: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LoadBase:
    """Kind load, a server row: the offline throughput its rate multiplies, measured by the
    offline row of its group (run `run_id`); the sweep sends it once that row passed."""

    offline_requests_per_s: float
    run_id: str = ""


@dataclass(frozen=True)
class LoadSlo:
    """Kind load, an offline or server row without kind_params slo: the goodput objectives
    (seconds) of its group's single_stream row (run `run_id`), so that every row of a group is
    judged by one objective; the sweep sends them once that row passed."""

    ttft_s: float
    itl_s: float
    run_id: str = ""


@dataclass(frozen=True)
class DeviceMemory:
    """A profile's `memory`: functions resetting and reading the allocator's peak, and its name."""

    reset_peak: str = ""
    peak: str = ""
    method: str = ""


@dataclass(frozen=True)
class CompileSpec:
    """A profile's `compile`: the torch.compile backend and keyword arguments."""

    backend: str = "inductor"
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RedisCache:
    """A profile's `redis_cache`: inductor's Redis remote cache at host:port, for the FX graph
    cache and the AOTAutograd cache (doc/compile-cache.md, "Inductor's Redis remote cache")."""

    host: str
    port: int
    fx_graph: bool = True
    aot_autograd: bool = True


@dataclass(frozen=True)
class TargetProfile:
    """A target profile (doc/targets.md); a field the profile leaves out takes these values."""

    name: str = "cpu"
    description: str = ""
    verified: bool = False
    device: str = "cpu"
    pythonpath: tuple[str, ...] = ()
    imports: tuple[str, ...] = ()  # the profile's "import"
    setup: str = ""
    available: str = ""
    synchronize: str = ""
    memory: DeviceMemory | None = None
    dispatch_key: str = ""
    fallback_counts: str = ""
    reset_fallback_counts: str = ""
    compile: CompileSpec = field(default_factory=CompileSpec)
    lowering: str = ""             # mode export: the lowering's key (lowering.py); "": the exported program
    modes: tuple[str, ...] = MODES  # the modes the target takes; the others are skipped
    ranks_backend: str = ""        # a test over several ranks: the process group's backend ("": by device)
    dynamic_refused: str = ""  # why the backend refuses dynamic shapes; "": it takes them
    redis_cache: RedisCache | None = None  # None: inductor's remote caches stay off


# The built-in profile of a request without target_profile (targets/cpu.json says the same).
CPU_PROFILE = TargetProfile(name="cpu", description="The host CPU through PyTorch's CPU kernels", verified=True,
                            compile=CompileSpec("inductor", {"dynamic": False, "fullgraph": False}))


@dataclass(frozen=True)
class CompileSettings:
    """Mode compile: backend ("" = the profile's), options (None = the profile's), compile caches."""

    backend: str = ""
    options: Mapping[str, Any] | None = None
    cache_dir: str = ""    # "" = torch's default caches
    cache_phase: str = ""  # cold, warm or "": informational
    store_dir: str = ""    # the compile store's entries to load one from ("" none; doc/compile-cache.md)
    entry_out: str = ""    # where a cold compile's entry is written ("" none)


@dataclass(frozen=True)
class TestRequest:
    """One test request, typed. `parse_request` builds it; the defaults are the fields' own."""

    __test__ = False  # not a pytest test class

    kind: str = ""
    run_id: str = ""
    test_id: str = ""
    model_id: str = ""
    model_type: str = ""
    model_class: str = ""
    model_path: str = ""
    target: str = "cpu"
    target_profile: TargetProfile | None = None  # None: the built-in cpu profile (or targets/<target>.json)
    mode: str = "eager"
    dtype: str = "float32"  # canonical (DTYPES' values)
    batch_size: int = 1
    seq_len: int = DEFAULT_SEQ_LEN
    kind_params: KindParams = field(default_factory=KindParams)
    compile: CompileSettings = field(default_factory=CompileSettings)
    measure: MeasureSettings = field(default_factory=MeasureSettings)
    memory_limit: MemoryLimit = field(default_factory=MemoryLimit)
    timeout_s: float = 0.0
    torch_num_threads: int = 0  # 0: torch's default
    compile_threads: int = 0  # inductor's compile threads; 0: torch_num_threads
    supervisor_pid: int = 0     # 0: none given
    load_base: LoadBase | None = None  # None: a server row measures its own offline throughput
    load_slo: LoadSlo | None = None  # None: a row without kind_params slo calibrates its own objective
    profile: ProfileSettings = field(default_factory=ProfileSettings)
    # Dynamic shapes (doc/probe.md, "Dynamic shapes"): "" static, "true" or "mark"; the
    # (batch_size, seq_len) shapes a dynamic test runs in order (the first is batch_size, seq_len).
    dynamic: str = ""
    shapes: tuple[tuple[int, int], ...] = ()

    ranks: int = 1  # processes of one group the test runs as (doc/ranks.md)
    rank: int = 0   # this process's rank among them (set by worker/group.py, never sent)

    @property
    def in_group(self) -> bool:
        """The test runs as a process group (doc/ranks.md): over several ranks, or a group of
        one (kind_params parallel given with one rank)."""
        return self.ranks > 1 or "parallel" in self.kind_params.given

    @property
    def compiling(self) -> bool:
        return self.mode == "compile"


# --------------------------------------------------------------------------- the parser


def _show(value: Any) -> str:
    return f"{value!r}"[:_BAD_VALUE_CHARS]


class _Fields:
    """Typed reads of one JSON object; `where` prefixes the field names in errors ("measure.")."""

    def __init__(self, raw: Any, where: str = ""):
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise BadRequest(f"{where.rstrip('.') or 'the request'} must be an object, not {_show(raw)}")
        self.raw = raw
        self.where = where

    def has(self, key: str) -> bool:
        return self.raw.get(key) is not None

    def value(self, key: str) -> Any:
        return self.raw.get(key)

    def bad(self, key: str, why: str = "") -> BadRequest:
        return BadRequest(f"bad {self.where}{key} {_show(self.raw.get(key))}{f': {why}' if why else ''}")

    def string(self, key: str, default: str) -> str:
        value = self.raw.get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.bad(key, "not a string")
        return value

    def integer(self, key: str, default: int, minimum: int | None = None) -> int:
        value = self.raw.get(key)
        if value is None:
            return default
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool) or (minimum is not None and value < minimum):
            raise self.bad(key)
        return value

    def number(self, key: str, default: float, minimum: float = 0.0) -> float:
        value = self.raw.get(key)
        if value is None:
            return default
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < minimum:
            raise self.bad(key)
        return float(value)

    def boolean(self, key: str, default: bool) -> bool:
        value = self.raw.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.bad(key, "not a boolean")
        return value

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.raw.get(key)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.bad(key, "not a list of strings")
        return tuple(value)

    def compile_options(self, key: str) -> dict[str, Any] | None:
        value = self.raw.get(key)
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise self.bad(key, "not an object")
        unknown = sorted(set(value) - set(COMPILE_KWARGS))
        if unknown:
            raise BadRequest(f"unknown compile options {unknown} in {self.where}{key} "
                             f"(torch.compile takes {list(COMPILE_KWARGS)})")
        return dict(value)


def _measure(raw: Any) -> MeasureSettings:
    f, d = _Fields(raw, "measure."), MeasureSettings()
    return MeasureSettings(warmup=f.integer("warmup", d.warmup, 0), min_iters=f.integer("min_iters", d.min_iters, 0),
                           min_time_s=f.number("min_time_s", d.min_time_s),
                           max_time_s=f.number("max_time_s", d.max_time_s))


def _profile(raw: Any) -> ProfileSettings:
    f, d = _Fields(raw, "profile."), ProfileSettings()
    mode = f.string("mode", d.mode)
    if mode not in PROFILE_MODES:
        raise f.bad("mode", f"not one of {list(PROFILE_MODES)}")
    return ProfileSettings(mode=mode, trace_path=f.string("trace_path", d.trace_path),
                           trace_max_bytes=f.integer("trace_max_bytes", d.trace_max_bytes, 0))


def _load_base(raw: Any) -> LoadBase | None:
    if raw is None:
        return None
    f = _Fields(raw, "load_base.")
    rps = f.number("offline_requests_per_s", 0.0)
    if not math.isfinite(rps) or rps <= 0:
        raise f.bad("offline_requests_per_s", "not a throughput above 0")
    return LoadBase(offline_requests_per_s=rps, run_id=f.string("run_id", ""))


def _load_slo(raw: Any) -> LoadSlo | None:
    if raw is None:
        return None
    f = _Fields(raw, "load_slo.")
    objectives = {}
    for key in ("ttft_s", "itl_s"):
        value = f.number(key, 0.0)
        if not math.isfinite(value) or value <= 0:
            raise f.bad(key, "not a time above 0")
        objectives[key] = value
    return LoadSlo(**objectives, run_id=f.string("run_id", ""))


def _memory_limit(raw: Any) -> MemoryLimit:
    f, d = _Fields(raw, "memory_limit."), MemoryLimit()
    limit = MemoryLimit(method=f.string("method", d.method), bytes=f.integer("bytes", d.bytes, 0),
                        cgroup_procs=f.string("cgroup_procs", d.cgroup_procs))
    if limit.method not in MEMORY_LIMIT_METHODS:
        raise BadRequest(f"unknown memory_limit method {limit.method!r}")
    if limit.method.startswith("cgroup") and not limit.cgroup_procs:
        raise BadRequest(f"memory_limit method {limit.method} needs cgroup_procs")
    if limit.method == "rlimit" and limit.bytes < 1:
        raise BadRequest("memory_limit method rlimit needs bytes > 0")
    return limit


def _kind_params(raw: Any) -> KindParams:
    f, d = _Fields(raw, "kind_params."), KindParams()
    given = {}
    for key, value in f.raw.items():
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            raise f.bad(key, "not a string")
        given[str(key)] = str(value)

    def integer(key: str, default: int, minimum: int | None) -> int:
        if key not in given:
            return default
        try:
            value = int(given[key])
        except ValueError:
            raise f.bad(key, "not an integer") from None
        if minimum is not None and value < minimum:
            raise f.bad(key, f"below {minimum}")
        return value

    if given.get("size", d.size) not in ("reduced", "full"):
        raise f.bad("size", "not reduced or full")
    if given.get("weights", d.weights) not in ("", "pretrained"):
        raise f.bad("weights", "not pretrained")
    if given.get("trust_remote_code", "false") not in ("true", "false"):
        raise f.bad("trust_remote_code", "not true or false")
    return KindParams(size=given.get("size", d.size), weights=given.get("weights", d.weights),
                      fit_bytes=integer("fit_bytes", d.fit_bytes, 0),
                      seed=integer("seed", d.seed, None), new_tokens=integer("new_tokens", d.new_tokens, 1),
                      steps=integer("steps", d.steps, 1), bytes=integer("bytes", d.bytes, 0),
                      pid=integer("pid", d.pid, 0), requests=integer("requests", d.requests, 1),
                      scenario=given.get("scenario", d.scenario),
                      trust_remote_code=given.get("trust_remote_code") == "true", given=given)


def parse_target_profile(raw: Any) -> TargetProfile:
    """A target profile object (doc/targets.md) as a TargetProfile; BadRequest if malformed."""
    if not isinstance(raw, Mapping) or not raw.get("device") or not isinstance(raw.get("device"), str):
        raise BadRequest(f"bad target_profile {_show(raw)}")
    f, d = _Fields(raw, "target_profile."), TargetProfile()
    memory = None
    if f.has("memory"):
        m = _Fields(f.value("memory"), "target_profile.memory.")
        memory = DeviceMemory(reset_peak=m.string("reset_peak", ""), peak=m.string("peak", ""),
                              method=m.string("method", ""))
    c, dc = _Fields(f.value("compile"), "target_profile.compile."), CompileSpec()
    compile_spec = CompileSpec(backend=c.string("backend", "") or dc.backend,
                               options=c.compile_options("options") or {})
    return TargetProfile(
        name=f.string("name", "") or d.name, description=f.string("description", d.description),
        verified=f.boolean("verified", d.verified), device=f.string("device", d.device),
        pythonpath=f.strings("pythonpath"), imports=f.strings("import"), setup=f.string("setup", d.setup),
        available=f.string("available", d.available), synchronize=f.string("synchronize", d.synchronize),
        memory=memory, dispatch_key=f.string("dispatch_key", d.dispatch_key),
        fallback_counts=f.string("fallback_counts", d.fallback_counts),
        reset_fallback_counts=f.string("reset_fallback_counts", d.reset_fallback_counts), compile=compile_spec,
        lowering=f.string("lowering", d.lowering), modes=f.strings("modes") or d.modes,
        ranks_backend=f.string("ranks_backend", d.ranks_backend),
        dynamic_refused=f.string("dynamic_refused", d.dynamic_refused),
        redis_cache=_redis_cache(f.value("redis_cache")) if f.has("redis_cache") else None)


def _redis_cache(raw: Any) -> RedisCache:
    f = _Fields(raw, "target_profile.redis_cache.")
    host, port = f.string("host", ""), f.integer("port", 0, 1)
    if not host:
        raise f.bad("host", "not a host name or address")
    if port > 65535:
        raise f.bad("port", "not a TCP port")
    return RedisCache(host=host, port=port, fx_graph=f.boolean("fx_graph", True),
                      aot_autograd=f.boolean("aot_autograd", True))


def parse_request(raw: Any) -> TestRequest:
    """The typed request of a raw request object; raises BadRequest naming the first bad field."""
    f, d = _Fields(raw), TestRequest()
    kind = f.value("kind")
    if not isinstance(kind, str) or not kind:
        raise BadRequest(f"unknown kind {_show(kind)}")
    target = f.value("target") if f.has("target") else d.target
    if not isinstance(target, str) or not _TARGET_NAME.match(target):
        raise BadRequest(f"bad target {_show(target)}")
    mode = f.string("mode", d.mode)
    if mode not in MODES:
        raise BadRequest(f"unknown mode {mode!r}")
    dtype = f.value("dtype") if f.has("dtype") else d.dtype
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise BadRequest(f"unknown dtype {_show(dtype)}")
    return TestRequest(
        kind=kind, run_id=f.string("run_id", d.run_id), test_id=f.string("test_id", d.test_id),
        model_id=f.string("model_id", d.model_id), model_type=f.string("model_type", d.model_type),
        model_class=f.string("model_class", d.model_class), model_path=f.string("model_path", d.model_path),
        target=target,
        target_profile=parse_target_profile(f.value("target_profile")) if f.has("target_profile") else None,
        mode=mode, dtype=DTYPES[dtype], batch_size=f.integer("batch_size", d.batch_size, 1),
        seq_len=f.integer("seq_len", d.seq_len, 1), kind_params=_kind_params(f.value("kind_params")),
        compile=CompileSettings(backend=f.string("backend", ""), options=f.compile_options("compile_options"),
                                cache_dir=f.string("compile_cache_dir", ""), cache_phase=f.string("cache_phase", ""),
                                store_dir=f.string("compile_store_dir", ""),
                                entry_out=f.string("compile_entry_out", "")),
        measure=_measure(f.value("measure")), memory_limit=_memory_limit(f.value("memory_limit")),
        timeout_s=f.number("timeout_s", d.timeout_s), torch_num_threads=f.integer("torch_num_threads", 0, 0),
        compile_threads=f.integer("compile_threads", 0, 0),
        supervisor_pid=f.integer("supervisor_pid", d.supervisor_pid, 0), load_base=_load_base(f.value("load_base")),
        load_slo=_load_slo(f.value("load_slo")), profile=_profile(f.value("profile")), ranks=_ranks(f),
        **_dynamic(f, mode, kind))


MAX_RANKS = 64  # core/limits.h, kMaxRanks


def _ranks(f: _Fields) -> int:
    ranks = f.integer("ranks", 1, 1)
    if ranks > MAX_RANKS:
        raise f.bad("ranks", f"at most {MAX_RANKS}")
    return ranks


MAX_DYNAMIC_SHAPES = 64  # core/limits.h, kMaxDynamicShapes
_SHAPE = re.compile(r"[1-9][0-9]{0,6}x[1-9][0-9]{0,6}")


def _dynamic(f: _Fields, mode: str, kind: str) -> dict[str, Any]:
    """dynamic and shapes: both or neither; a dynamic test is compile mode's kind forward with
    1 to MAX_DYNAMIC_SHAPES distinct BATCHxSEQ shapes, each dimension from 1 to 1048576."""
    dynamic = f.string("dynamic", "")
    if not dynamic and not f.has("shapes"):
        return {}
    if dynamic not in ("true", "mark") or mode != "compile" or kind != "forward":
        raise BadRequest(f"dynamic {_show(dynamic)}: true or mark, in mode compile, kind forward")
    text = f.string("shapes", "")
    parts = text.split(",") if text else []
    if not parts or len(parts) > MAX_DYNAMIC_SHAPES or not all(_SHAPE.fullmatch(p) for p in parts):
        raise BadRequest(f"shapes {_show(text)}: 1 to {MAX_DYNAMIC_SHAPES} shapes BATCHxSEQ,...")
    shapes = tuple(tuple(int(n) for n in p.split("x")) for p in parts)
    if len(set(shapes)) != len(shapes) or any(n > 1 << 20 for s in shapes for n in s):
        raise BadRequest(f"shapes {_show(text)}: a shape twice or a dimension past 1048576")
    return {"dynamic": dynamic, "shapes": shapes}


def supervisor_pid_of(raw: Any) -> int:
    """The request's supervisor_pid, 0 when absent or malformed (the zygote's child checks its
    parent before it parses the whole request; a malformed one is answered after the check)."""
    try:
        return _Fields(raw).integer("supervisor_pid", 0, 0)
    except BadRequest:
        return 0
