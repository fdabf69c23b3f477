"""torch.compile for the kinds: the backend and options of a request, the compile caches,
dynamo's counters and how to tell a compile error from a run error.

    configure_cache(request)                 # before anything compiles
    stats = DynamoStats.snapshot()
    compiled = compile_callable(model, request, target)
    ... first call ...
    result.metrics.update(stats.delta())     # graph_breaks, unique_graphs, captured_calls, reasons
    hits, misses = cache_counters()

Counter names are those of torch 2.13 (torch._dynamo.utils.counters):
stats.unique_graphs, stats.calls_captured, graph_break[reason] (one entry per
distinct reason, counting its occurrences), inductor.fxgraph_cache_hit/miss,
aot_autograd.autograd_cache_hit/miss.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .request import TestRequest

if TYPE_CHECKING:
    from .target import Target

GRAPH_BREAK_REASONS_MAX = 20
GRAPH_BREAK_REASON_CHARS = 300

CACHE_HIT_COUNTERS = (("inductor", "fxgraph_cache_hit"), ("aot_autograd", "autograd_cache_hit"))
CACHE_MISS_COUNTERS = (("inductor", "fxgraph_cache_miss"), ("aot_autograd", "autograd_cache_miss"))

# Exception class names (anywhere in the cause/context chain) that mean the compile itself failed.
_COMPILE_ERROR_NAMES = {"UnsupportedOpError", "BackendCompilerFailed", "InductorError", "LoweringException",
                        "CppCompileError", "Unsupported", "UserError", "InternalTorchDynamoError",
                        "TorchRuntimeError", "UncapturedHigherOrderOpError"}


def configure_cache(request: TestRequest) -> str:
    """Points every compile cache at the request's compile_cache_dir ("": torch's defaults).

    Sets TORCHINDUCTOR_CACHE_DIR (inductor's FX graph cache, AOTAutograd cache and
    compiled kernels live under it) and TRITON_CACHE_DIR, turns the local FX graph
    and AOTAutograd caches on (and the remote ones off), and clears inductor's
    in-process memo of the old directory. Returns the directory or "".
    """
    directory = request.compile.cache_dir
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
        inductor_config.fx_graph_remote_cache = False
        functorch_config.enable_autograd_cache = True
        functorch_config.enable_remote_autograd_cache = False
    except (ImportError, AttributeError):  # a torch without inductor: the env vars are all there is
        pass
    try:
        from torch._inductor.utils import clear_caches

        clear_caches()
    except ImportError:
        pass
    return directory


def backend_of(request: TestRequest, target: Target) -> Any:
    """The compile backend: the request's backend, else the target profile's; "pkg.mod:fn" is imported."""
    backend = request.compile.backend or target.compile_backend
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
    """torch.compile(fn_or_module) with the request's backend and options."""
    import torch

    return torch.compile(fn_or_module, backend=backend_of(request, target), **options_of(request, target))


def reset_dynamo() -> None:
    """Forgets compiled graphs and guards in this process (not the counters)."""
    import torch

    torch._dynamo.reset()


def _counters():
    from torch._dynamo.utils import counters

    return counters


class DynamoStats:
    """Dynamo's counters since a snapshot: graph_breaks, unique_graphs, captured_calls, reasons."""

    def __init__(self, stats: dict[str, int], breaks: dict[str, int], skips: dict[str, int] | None = None):
        self._stats = stats
        self._breaks = breaks
        self._skips = skips or {}

    @classmethod
    def snapshot(cls) -> DynamoStats:
        c = _counters()
        return cls(dict(c["stats"]), dict(c["graph_break"]), dict(c["unimplemented"]))

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
        return {
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
    return False
