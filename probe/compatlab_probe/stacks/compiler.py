"""torch.compile for the kinds: the backend and options of a request, the compile caches,
dynamo's counters and how to tell a compile error from a run error.

    configure_cache(request)                 # before anything compiles
    stats = DynamoStats.snapshot()
    compiled = compile_callable(model, request, target)
    ... first call ...
    result.metrics.update(stats.delta())     # graph_breaks, unique_graphs, captured_calls, reasons,
                                             # recompiles and their reasons
    hits, misses = cache_counters()

Counter names are those of torch 2.13 (torch._dynamo.utils.counters):
stats.unique_graphs, stats.calls_captured, graph_break[reason] (one entry per
distinct reason, counting its occurrences), inductor.fxgraph_cache_hit/miss,
aot_autograd.autograd_cache_hit/miss; recompiles from the compilation metrics
(torch._dynamo.utils.get_compilation_metrics: a frame compiled with a recompile_reason),
since torch 2.13 counts them in no counter.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..protocol.request import TestRequest

if TYPE_CHECKING:
    from .target import Target

GRAPH_BREAK_REASONS_MAX = 20
GRAPH_BREAK_REASON_CHARS = 300

CACHE_HIT_COUNTERS = (("inductor", "fxgraph_cache_hit"), ("aot_autograd", "autograd_cache_hit"))
CACHE_MISS_COUNTERS = (("inductor", "fxgraph_cache_miss"), ("aot_autograd", "autograd_cache_miss"))

# Inductor's compile threads. The zygote compiles with one (ZYGOTE_COMPILE_THREADS): a
# thread pool would make its fork unsafe. A test child compiles with its share of the cores
# (`child_compile_threads`: the request's torch_num_threads, cores / --jobs), so `--jobs N`
# children use the cores for compiling as for running and no more. On the CPU, inductor's
# C++ kernels of one graph are built by a ThreadPoolExecutor of that size (each thread runs
# the C++ compiler); its threads start at the first compile, after the fork, and cost no
# interpreter start-up. The subprocess worker pool of fresh interpreters is Triton's only
# (started where the triton package is installed, as torch does for any user).
ZYGOTE_COMPILE_THREADS = 1

# Exception class names (anywhere in the cause/context chain) that mean the compile itself failed.
_COMPILE_ERROR_NAMES = {"UnsupportedOpError", "BackendCompilerFailed", "InductorError", "LoweringException",
                        "CppCompileError", "Unsupported", "UserError", "InternalTorchDynamoError",
                        "TorchRuntimeError", "UncapturedHigherOrderOpError"}


def configure_cache(request: TestRequest) -> str:
    """Points every compile cache at the request's compile_cache_dir ("": torch's defaults).

    Sets the compile threads (`child_compile_threads`) and TORCHINDUCTOR_CACHE_DIR (inductor's FX graph cache, AOTAutograd cache and
    compiled kernels live under it) and TRITON_CACHE_DIR, turns the local FX graph
    and AOTAutograd caches on (and the remote ones off), and clears inductor's
    in-process memo of the old directory. Returns the directory or "".
    """
    directory = request.compile.cache_dir
    set_compile_threads(child_compile_threads(request))
    if not directory:
        return ""
    directory = os.path.abspath(directory)
    os.makedirs(directory, exist_ok=True)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = directory
    os.environ["TRITON_CACHE_DIR"] = os.path.join(directory, "triton")
    os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "1"
    os.environ["TORCHINDUCTOR_AUTOGRAD_CACHE"] = "1"
    try:
        import torch._functorch.config as functorch_config
        import torch._inductor.config as inductor_config

        inductor_config.fx_graph_cache = True
        functorch_config.enable_autograd_cache = True
        configure_remote_cache(request, inductor_config, functorch_config)
    except (ImportError, AttributeError):  # a torch without inductor: the env vars are all there is
        pass
    try:
        from torch._inductor.utils import clear_caches

        clear_caches()
    except ImportError:
        pass
    return directory


def configure_remote_cache(request: TestRequest, inductor_config: Any, functorch_config: Any) -> None:
    """Inductor's Redis remote caches as the request's target profile says (`redis_cache`),
    else off. The config is set as well as the environment: inductor read its
    TORCHINDUCTOR_*_REMOTE_CACHE variables when the zygote imported it. RedisRemoteCacheBackend
    reads TORCHINDUCTOR_REDIS_HOST/PORT when a cache is made (TORCHINDUCTOR_REDIS_URL first:
    removed, so the profile's host and port are the ones used)."""
    profile = request.target_profile
    redis = profile.redis_cache if profile is not None else None
    fx_graph = bool(redis and redis.fx_graph)
    aot_autograd = bool(redis and redis.aot_autograd)
    os.environ["TORCHINDUCTOR_FX_GRAPH_REMOTE_CACHE"] = "1" if fx_graph else "0"
    os.environ["TORCHINDUCTOR_AUTOGRAD_REMOTE_CACHE"] = "1" if aot_autograd else "0"
    os.environ.pop("TORCHINDUCTOR_REDIS_URL", None)
    if redis is not None:
        os.environ["TORCHINDUCTOR_REDIS_HOST"] = redis.host
        os.environ["TORCHINDUCTOR_REDIS_PORT"] = str(redis.port)
    inductor_config.fx_graph_remote_cache = fx_graph
    functorch_config.enable_remote_autograd_cache = aot_autograd


def child_compile_threads(request: TestRequest) -> int:
    """A test child's compile threads: its compile_threads, else its torch_num_threads (the
    sweep's cores / --jobs; a reduced model is timed with one intra-op thread but compiled
    with its share of the cores), else 1 (a request without a thread count shares the
    machine with unknown others)."""
    return max(1, request.compile_threads or request.torch_num_threads)


def set_compile_threads(threads: int) -> None:
    """Inductor compiles with `threads` threads in this process (1: in the calling thread,
    no pool) and starts no progress-bar monitor thread (tqdm's, started by the first
    compile): with 1, a process that compiled is still single-threaded, so the zygote can
    compile and fork."""
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = str(threads)
    try:
        import torch._inductor.config as inductor_config

        inductor_config.compile_threads = threads
    except (ImportError, AttributeError):
        pass
    try:
        import tqdm

        tqdm.tqdm.monitor_interval = 0
    except ImportError:
        pass


def single_threaded_compile() -> None:
    """set_compile_threads(ZYGOTE_COMPILE_THREADS): the zygote's and the calibration's."""
    set_compile_threads(ZYGOTE_COMPILE_THREADS)


def _import_compile_stack() -> None:
    """Imports what the first torch.compile would import: dynamo, AOTAutograd, inductor's
    lowering, scheduler, C++ code generation and code cache (no thread starts)."""
    import torch._dynamo  # noqa: F401
    import torch._functorch.aot_autograd  # noqa: F401
    import torch._inductor.codecache  # noqa: F401
    import torch._inductor.codegen.cpp  # noqa: F401
    import torch._inductor.compile_fx  # noqa: F401
    import torch._inductor.cpu_vec_isa  # noqa: F401
    import torch._inductor.lowering  # noqa: F401
    import torch._inductor.scheduler  # noqa: F401


def _calibration_function(x: Any) -> Any:
    """The calibration compile's function: a pointwise op and a reduction, no model."""
    return (x.sin() + 1).sum(-1)


def _vec_isa_candidates() -> list[Any]:
    """The vector ISAs inductor's `valid_vec_isa_list` would build and load on this x86 CPU
    (those whose flags the CPU has), in its order; [] elsewhere."""
    import platform

    from torch._inductor import cpu_vec_isa

    if platform.machine() not in ("x86_64", "AMD64"):
        return []
    flags = cpu_vec_isa.x86_isa_checker()
    return [isa for isa in cpu_vec_isa.supported_vec_isa_list
            if all(flag in flags for flag in str(isa).split())]


def _probe_vec_isas_at_once() -> None:
    """Runs inductor's build-and-load check of every candidate ISA (`bool(isa)`, memoised
    per ISA by inductor) on its own thread, up to one per core this process may use, and
    joins them: each check is a compiler process or two of its own (the ISA's test kernel,
    then its bf16 or VNNI kernel), one after another in `pick_vec_isa`. The pick that follows
    reads the memoised answers. The same checks as inductor's, with the same results; only
    their order differs. The threads end before the zygote forks."""
    from concurrent.futures import ThreadPoolExecutor

    candidates = _vec_isa_candidates()
    if len(candidates) < 2:
        return
    workers = min(len(candidates), len(os.sched_getaffinity(0)))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="vec-isa") as pool:
        list(pool.map(bool, candidates))


def calibrate(seed_dir: str) -> dict[str, Any]:
    """The sweep's calibration compile (doc/probe.md, "Compiler start-up"), run once in the
    zygote before it forks any test: every start-up cost of torch.compile with inductor on
    the CPU that is not a model's, paid here and inherited by each child.

    1. imports of the compile stack (`_import_compile_stack`), compile_threads 1;
    2. inductor's vector-ISA probe (cpu_vec_isa.pick_vec_isa: compiles and loads a test
       kernel per ISA; the ISAs' checks run at once, `_probe_vec_isas_at_once`) with
       TORCHINDUCTOR_CACHE_DIR = `seed_dir`: its build is the one
       artifact inductor keeps per cache directory that holds no graph, and the seed each
       test's cache directory starts from;
    3. one compile and first call of `_calibration_function` in a scratch cache directory
       (removed after): dynamo, AOTAutograd and inductor's lazily built state (decomposition
       and pattern tables), the compiler's version probe, and the C++ prefix header: its
       preprocessing (memoised per process) and its precompiled header, which inductor keeps
       in its global header directory, not per cache directory (built when absent: that is
       the machine-cold part).
    Then dynamo is reset, inductor's in-memory code caches and dynamo's counters cleared,
    and the cache directory variable restored, so no graph of the calibration reaches a test.

    Returns {"compiler_startup_s": seconds of 1-3, "compiler_startup_phases": {phase: s}};
    on an error {"compiler_startup_error": "Type: message"} (the tests then start up themselves).
    """
    import torch

    phases: dict[str, float] = {}
    scratch = seed_dir.rstrip("/") + ".calibration"
    old_dir = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    old_threads = torch.get_num_threads()
    start = time.perf_counter()
    try:
        single_threaded_compile()
        _import_compile_stack()
        phases["imports"] = time.perf_counter() - start
        from torch._inductor.cpu_vec_isa import pick_vec_isa
        from torch._inductor.utils import clear_caches

        mark = time.perf_counter()
        shutil.rmtree(seed_dir, ignore_errors=True)
        os.makedirs(seed_dir)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.abspath(seed_dir)
        clear_caches()
        _probe_vec_isas_at_once()
        pick_vec_isa()
        phases["vec_isa"] = time.perf_counter() - mark

        mark = time.perf_counter()
        shutil.rmtree(scratch, ignore_errors=True)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.abspath(scratch)
        clear_caches()
        torch.set_num_threads(1)  # no intra-op pool in the zygote
        compiled = torch.compile(_calibration_function, backend="inductor", dynamic=False)
        compiled(torch.ones(4, 8))
        phases["compile"] = time.perf_counter() - mark
        total = time.perf_counter() - start
    except Exception as exc:  # noqa: BLE001 - reported; the tests then start up on their own
        return {"compiler_startup_error": f"{type(exc).__name__}: {exc}"[:500]}
    finally:
        torch.set_num_threads(old_threads)
        try:
            torch._dynamo.reset()
            from torch._dynamo.utils import counters
            from torch._inductor.utils import clear_caches

            clear_caches()
            counters.clear()
        except ImportError:
            pass
        if old_dir is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = old_dir
        shutil.rmtree(scratch, ignore_errors=True)
    return {"compiler_startup_s": total, "compiler_startup_phases": {k: round(v, 3) for k, v in phases.items()}}


def backend_name(request: TestRequest, target: Target) -> str:
    """The compile backend's name as given: the request's backend, else the target profile's
    ("inductor", "openvino", "pkg.mod:fn"); nothing is imported."""
    return request.compile.backend or target.compile_backend


def backend_of(request: TestRequest, target: Target) -> Any:
    """The compile backend: backend_name's, with "pkg.mod:fn" imported."""
    backend = backend_name(request, target)
    if ":" in backend:
        from .target import resolve

        return resolve(backend)
    return backend


def options_of(request: TestRequest, target: Target) -> dict[str, Any]:
    """torch.compile keyword arguments: the request's compile_options, else the profile's
    (the parser has checked both against request.COMPILE_KWARGS)."""
    options = request.compile.options
    return dict(target.compile_options if options is None else options)


def compile_callable(fn_or_module: Any, request: TestRequest, target: Target) -> Any:
    """torch.compile(fn_or_module) with the request's backend and options; a backend a stack's
    package registers (openvino) has that package imported first."""
    import importlib

    import torch

    from .lowering import COMPILE_BACKEND_MODULES, OPENVINO_CONFIG

    backend = backend_of(request, target)
    options = options_of(request, target)
    if isinstance(backend, str) and backend in COMPILE_BACKEND_MODULES:
        importlib.import_module(COMPILE_BACKEND_MODULES[backend])
    if backend == "openvino" and "options" not in options:
        # The probe's own settings for the backend (never a profile's strings): the CPU plugin in float32.
        options["options"] = {"device": "CPU", "config": dict(OPENVINO_CONFIG)}
    return torch.compile(fn_or_module, backend=backend, **options)


@contextmanager
def compile_stage_marks(compiling: bool) -> Iterator[None]:
    """While it is open (compile mode's first call), stage mark `compile` from the start to
    the end of each dynamo compilation (torch._dynamo's compile callbacks: tracing, the
    backend, inductor's code generation), so that a child that dies there (the deadline) is
    a row at stage compile, and one that dies running the compiled code stays at prepare."""
    if not compiling:
        yield
        return
    import torch._dynamo

    from ..protocol import stage_marks

    handler = torch._dynamo.callback_handler

    def start(_args: Any) -> None:
        stage_marks.enter("compile")

    def end(_args: Any) -> None:
        stage_marks.leave()

    handler.register_start_callback(start)
    handler.register_end_callback(end)
    try:
        yield
    finally:
        handler.remove_start_callback(start)
        handler.remove_end_callback(end)


def reset_dynamo() -> None:
    """Forgets compiled graphs and guards in this process (not the counters)."""
    import torch

    torch._dynamo.reset()


def _counters():
    from torch._dynamo.utils import counters

    return counters


# Dynamo keeps its compilation metrics (one per frame compiled) in a bounded deque of 64
# (torch._dynamo.utils.DEFAULT_COMPILATION_METRICS_LIMIT); a test counting its recompiles
# keeps this many, so that none it counts is dropped before it is counted.
COMPILATION_METRICS_KEPT = 4096


def _compilation_metrics() -> list[Any]:
    """Dynamo's compilation metrics of this process (torch 2.13: torch._dynamo.utils
    get_compilation_metrics; each has recompile_reason, None for a first compile)."""
    from torch._dynamo import utils

    if getattr(utils, "_compilation_metrics", None) is not None and \
            (utils._compilation_metrics.maxlen or 0) < COMPILATION_METRICS_KEPT:
        utils.set_compilation_metrics_limit(COMPILATION_METRICS_KEPT)
    return utils.get_compilation_metrics()


class DynamoStats:
    """Dynamo's counters since a snapshot: graph_breaks, unique_graphs, captured_calls, reasons,
    recompiles (the frames compiled since with a recompile reason) and their reasons."""

    def __init__(self, stats: dict[str, int], breaks: dict[str, int], skips: dict[str, int] | None = None,
                 compiled: list[Any] | None = None):
        self._stats = stats
        self._breaks = breaks
        self._skips = skips or {}
        self._compiled = compiled or []  # held: their ids stay theirs

    @classmethod
    def snapshot(cls) -> DynamoStats:
        c = _counters()
        return cls(dict(c["stats"]), dict(c["graph_break"]), dict(c["unimplemented"]), _compilation_metrics())

    def recompile_reasons(self) -> list[str]:
        """The recompile reason of each frame dynamo recompiled since the snapshot, in order."""
        seen = {id(m) for m in self._compiled}
        return [str(m.recompile_reason) for m in _compilation_metrics()
                if id(m) not in seen and m.recompile_reason is not None]

    def skipped_frames(self) -> dict[str, int]:
        """{first line of the reason: count} of frames dynamo gave up on since the
        snapshot, e.g. "Dynamo recompile limit exceeded": those calls ran eagerly
        although the test is compiled."""
        c = _counters()
        # A graph break is also counted as "unimplemented": those are graph breaks
        # (their code runs eagerly between graphs), not frames dynamo gave up on.
        breaks = [" ".join(str(k).split()) for k in c["graph_break"]]
        out = {}
        for reason, count in c["unimplemented"].items():
            n = count - self._skips.get(reason, 0)
            if n <= 0:
                continue
            first = " ".join(str(reason).strip().splitlines()[0].split()) if str(reason).strip() else "unknown"
            if any(b.startswith(first) for b in breaks):
                continue
            out[first] = out.get(first, 0) + n
        return out

    def delta(self) -> dict[str, Any]:
        """The metrics dict: graph_breaks, unique_graphs, captured_calls (ints) and
        graph_break_reasons (JSON array text of distinct reasons, bounded)."""
        c = _counters()
        stats = {k: v - self._stats.get(k, 0) for k, v in c["stats"].items()}
        breaks = {k: v - self._breaks.get(k, 0) for k, v in c["graph_break"].items()}
        breaks = {k: v for k, v in breaks.items() if v > 0}
        # Frames dynamo gave up on (recompile limit, ...) come first: from then
        # on those calls run eagerly, which a compiled result must say.
        reasons = [f"frame run eagerly ({n}x): {first}"[:GRAPH_BREAK_REASON_CHARS]
                   for first, n in sorted(self.skipped_frames().items())]
        for reason in sorted(breaks, key=lambda r: (-breaks[r], r)):
            text = " ".join(str(reason).split())[:GRAPH_BREAK_REASON_CHARS]
            if text not in reasons:
                reasons.append(text)
            if len(reasons) >= GRAPH_BREAK_REASONS_MAX:
                break
        recompiled = self.recompile_reasons()
        distinct = list(dict.fromkeys(" ".join(r.split())[:GRAPH_BREAK_REASON_CHARS] for r in recompiled))
        return {
            "recompiles": len(recompiled),
            "recompile_reasons": json.dumps(distinct[:GRAPH_BREAK_REASONS_MAX]),
            "frames_run_eagerly": int(sum(self.skipped_frames().values())),
            "graph_breaks": int(sum(breaks.values())),
            "unique_graphs": int(stats.get("unique_graphs", 0)),
            "captured_calls": int(stats.get("calls_captured", 0)),
            "graph_break_reasons": json.dumps(reasons),
        }


def cache_counters() -> tuple[int, int]:
    """(hits, misses) of the FX graph cache plus the AOTAutograd cache in this process."""
    c = _counters()
    hits = sum(c[group][name] for group, name in CACHE_HIT_COUNTERS)
    misses = sum(c[group][name] for group, name in CACHE_MISS_COUNTERS)
    return int(hits), int(misses)


def cache_counter_detail() -> dict[str, int]:
    """{"inductor.fxgraph_cache_hit": n, ...}: every inductor/aot_autograd cache counter."""
    c = _counters()
    out = {}
    for group in ("inductor", "aot_autograd"):
        for name, value in c[group].items():
            if "cache" in name:
                out[f"{group}.{name}"] = int(value)
    return out


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def is_compile_error(exc: BaseException) -> bool:
    """True when `exc` (raised by a compiled callable's call) is a failure to compile:
    a dynamo, AOTAutograd, inductor or backend error (BackendCompilerFailed wraps the
    backend's own, e.g. the ctest backend's UnsupportedOpError), not an error of
    the compiled code running."""
    try:
        from torch._dynamo.exc import TorchDynamoException
    except ImportError:
        TorchDynamoException = ()
    for e in _chain(exc):
        if TorchDynamoException and isinstance(e, TorchDynamoException):
            return True
        if any(cls.__name__ in _COMPILE_ERROR_NAMES for cls in type(e).__mro__):
            return True
        if _raised_while_converting_a_frame(e):
            return True
    return False


_CONVERT_FRAME = os.path.join("torch", "_dynamo", "convert_frame.py")


def _raised_while_converting_a_frame(exc: BaseException) -> bool:
    """True when `exc` went up through dynamo's frame conversion (convert_frame.py: tracing,
    the backend's compile, building the guards), which runs only while compiling, never
    while compiled code runs. Dynamo does not wrap every error of its own: an IndexError
    from its guard building (OpenVINO's backend on llama: symbolic_shapes' issue_guard)
    reaches the caller bare."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.endswith(_CONVERT_FRAME):
            return True
        tb = tb.tb_next
    return False
