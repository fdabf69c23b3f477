"""The compile store's child side (doc/compile-cache.md): the key of a compiled test, the
entry a model-cold compile leaves, and a stored entry loaded before the first call.

    parts = key_parts(request, target)          # readable: torch, backend, device, ...
    metrics.update(load_entry(request, parts))  # before compiling: prepare_state, cache_bundle
    stats = CacheStats.snapshot(); ... first call ...; metrics.update(stats.delta())
    save_entry(request, parts, out_dir, graph_details)  # after a complete, successful cold compile

An entry is a directory named by the SHA-256 of its `key.json` (the key parts as canonical
JSON): `key.json`, `artifacts.bin` (torch.compiler.save_cache_artifacts(): the FX graph,
AOTAutograd and autotune caches' entries of the compile), `kernels/` (the compiled kernels
inductor built into the test's cache directory: the bundle holds their source only, and a
CPU kernel not found there would be compiled again), `fx_graph_details.json` (inductor's own
cache-key details of each graph, graph_details.py, when any were captured) and `entry.json`
(each file's size and SHA-256). The C++ side (src/cache) checks an entry before it keeps, pushes or pulls it.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..protocol.request import TestRequest

if TYPE_CHECKING:
    from .target import Target

ENTRY_FORMAT = 1
KEY_FILE, ARTIFACTS_FILE, MANIFEST_FILE, KERNELS_DIR = "key.json", "artifacts.bin", "entry.json", "kernels"
DETAILS_FILE = "fx_graph_details.json"
# Directories of inductor's cache directory that are not compiled kernels: the bundle holds
# the FX graph and AOTAutograd entries; the locks are inductor's own.
_NOT_KERNELS = {"fxgraph", "aotautograd", "locks", "triton", "precompiled_headers"}
# A kernel file as inductor names it: a two-character subdirectory, a plain file name.
_KERNEL_DIR = re.compile(r"^[a-z0-9]{2}$")
_KERNEL_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}$")
# Per-cache counters: (field prefix, dynamo counter group, hit name, miss name).
DYNAMO_CACHES = (("fx_graph", "inductor", "fxgraph_cache_hit", "fxgraph_cache_miss"),
                 ("aot_autograd", "aot_autograd", "autograd_cache_hit", "autograd_cache_miss"))
# Inductor's autotune caches count in its cache_stats (torch._inductor.remote_cache), by class.
_AUTOTUNE_STAT = "Autotune"
# Inductor's Redis remote caches (a profile's redis_cache), by class in cache_stats: (field
# prefix, class). dynamo's fxgraph_cache_hit counts a local and a remote hit alike.
REMOTE_CACHES = (("fx_graph_remote", "RemoteFxGraphCache"), ("aot_autograd_remote", "RemoteAOTAutogradCache"))


def _torch_versions() -> tuple[str, str]:
    import torch

    return str(torch.__version__), str(getattr(torch.version, "git_version", "") or "")


def _backend_version(backend: str, torch_version: str) -> str:
    """inductor and torch's own backends: torch's version; a package's backend: its version."""
    from importlib import metadata

    from .lowering import COMPILE_BACKEND_MODULES

    module = COMPILE_BACKEND_MODULES.get(backend) or (backend.split(":")[0] if ":" in backend else "")
    if not module:
        return torch_version
    try:
        return metadata.version(module.split(".")[0])
    except metadata.PackageNotFoundError:
        return ""


def device_model(target: Target) -> str:
    """The device a compile is for: a GPU's name, or "cpu " and the vector ISA inductor picks
    (cpu_vec_isa.pick_vec_isa, memoised by the calibration), "cpu none" without one."""
    if not target.is_cpu:
        import torch

        try:
            return f"{target.device.type} {torch.cuda.get_device_name(target.device)}"
        except Exception:  # noqa: BLE001 - a device torch.cuda does not know: its type
            return target.device.type
    try:
        from torch._inductor.cpu_vec_isa import pick_vec_isa

        isa = str(pick_vec_isa()) or "none"
    except Exception:  # noqa: BLE001 - no inductor: the machine's architecture
        isa = "none"
    return f"cpu {platform.machine()} {isa}"


def key_parts(request: TestRequest, target: Target) -> dict[str, str]:
    """Everything that must match for a stored compile to be used, readable: torch's version
    and commit, Python's version, the backend and its version, the device model, inductor's
    C++ compiler, the compile options, dtype, shapes and the test id."""
    from ..host.runtime import build_info
    from .compiler import backend_name, options_of

    torch_version, torch_git = _torch_versions()
    backend = backend_name(request, target)
    return {
        "torch": torch_version,
        "torch_git": torch_git,
        "python": platform.python_version(),
        "backend": backend,
        "backend_version": _backend_version(backend, torch_version),
        "device": device_model(target),
        "cxx_compiler": str(build_info().get("cxx_compiler", "")),
        "compile_options": json.dumps(options_of(request, target), sort_keys=True, default=str),
        "dtype": request.dtype,
        "shapes": f"batch_size {request.batch_size}, seq_len {request.seq_len}",
        "test_id": request.test_id,
    }


def key_text(parts: dict[str, str]) -> str:
    """The key as canonical JSON (sorted keys, no spaces): `key.json`'s whole content."""
    return json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def key_id(parts: dict[str, str]) -> str:
    """An entry's name: the SHA-256 of its key text."""
    return hashlib.sha256(key_text(parts).encode()).hexdigest()


def _sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def kernel_files(cache_dir: str) -> list[str]:
    """The compiled kernels in inductor's cache directory `cache_dir`, as paths relative to it
    ("ab/cabc....so"): regular files two levels down, outside the graph caches and locks."""
    out = []
    for sub in sorted(os.listdir(cache_dir)):
        folder = os.path.join(cache_dir, sub)
        if sub in _NOT_KERNELS or not _KERNEL_DIR.match(sub) or not os.path.isdir(folder) \
                or os.path.islink(folder):
            continue
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if _KERNEL_NAME.match(name) and os.path.isfile(path) and not os.path.islink(path):
                out.append(f"{sub}/{name}")
    return out


def clear_recorded_artifacts() -> None:
    """Forgets the cache artifacts torch recorded in this process so far (the zygote's
    calibration compile's): a bundle saved later holds this test's compile only."""
    try:
        from torch.compiler._cache import CacheArtifactManager

        CacheArtifactManager.clear()
    except ImportError:
        pass


def save_entry(request: TestRequest, parts: dict[str, str], out_dir: str,
               graph_details: dict[str, Any] | None = None) -> str:
    """Writes this process's compile as an entry into `out_dir` (made; the C++ side checks and
    keeps it), with `graph_details` (GraphDetailsTracker.details()) when it holds a graph:
    returns "" or why nothing was written. Call it after a complete, successful cold compile
    only."""
    import torch

    saved = torch.compiler.save_cache_artifacts()
    if saved is None:
        return "no cache artifacts"
    bundle, info = saved
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(os.path.join(out_dir, KERNELS_DIR))
    files = []
    with open(os.path.join(out_dir, KEY_FILE), "w", encoding="ascii") as f:
        f.write(key_text(parts))
    with open(os.path.join(out_dir, ARTIFACTS_FILE), "wb") as f:
        f.write(bundle)
    files.append(ARTIFACTS_FILE)
    if graph_details and graph_details.get("graphs"):
        with open(os.path.join(out_dir, DETAILS_FILE), "w", encoding="ascii") as f:
            json.dump(graph_details, f, separators=(",", ":"))
        files.append(DETAILS_FILE)
    cache_dir = request.compile.cache_dir
    for rel in kernel_files(cache_dir) if cache_dir else []:
        os.makedirs(os.path.join(out_dir, KERNELS_DIR, rel.split("/")[0]), exist_ok=True)
        shutil.copyfile(os.path.join(cache_dir, rel), os.path.join(out_dir, KERNELS_DIR, rel))
        files.append(f"{KERNELS_DIR}/{rel}")
    manifest = {
        "format": ENTRY_FORMAT,
        "key_sha256": key_id(parts),
        "created_unix": int(time.time()),
        "artifacts": {kind: len(keys) for kind, keys in sorted(info.artifacts.items())},
        "files": [{"path": rel, "bytes": os.path.getsize(os.path.join(out_dir, rel)),
                   "sha256": _sha256_file(os.path.join(out_dir, rel))} for rel in files],
    }
    with open(os.path.join(out_dir, MANIFEST_FILE), "w", encoding="ascii") as f:
        json.dump(manifest, f, sort_keys=True)
    return ""


def keep_after_test(request: TestRequest, status: str, metrics: dict[str, Any],
                    graph_details: dict[str, Any] | None = None) -> None:
    """After the kind: a complete, successful model-cold compile (status pass or
    fail_accuracy, the cold phase, no bundle loaded) written as an entry where the request
    says (compile_entry_out), with the first call's `graph_details`. A failure to write is
    noted in compile_entry, never the test's."""
    if not (request.compiling and request.compile.entry_out and request.compile.cache_phase == "cold"
            and metrics.get("compile_key") and status in ("pass", "fail_accuracy")
            and metrics.get("prepare_state") == "model-cold"):
        return
    try:
        why = save_entry(request, json.loads(metrics["compile_key"]), request.compile.entry_out, graph_details)
    except Exception as exc:  # noqa: BLE001 - the entry is a by-product: noted, never a failure
        why = f"{type(exc).__name__}: {exc}"[:300]
    metrics["compile_entry"] = f"not kept: {why}" if why else "written"


def load_entry(request: TestRequest, parts: dict[str, str]) -> dict[str, Any]:
    """Before the first call: the entry of this test's key in the request's compile store
    (entries checked when they were kept or pulled) loaded into the cache directory: its
    kernels copied in, its bundle through torch.compiler.load_cache_artifacts. Returns the
    metrics compile_key, prepare_state (warm-remote when a bundle loaded, else model-cold)
    and, with a store, cache_bundle (loaded, or none: WHY)."""
    metrics: dict[str, Any] = {"compile_key": key_text(parts), "prepare_state": "model-cold"}
    store, cache_dir = request.compile.store_dir, request.compile.cache_dir
    if not store or not cache_dir or request.compile.cache_phase != "cold":
        return metrics
    entry = os.path.join(store, key_id(parts))
    if not os.path.isfile(os.path.join(entry, MANIFEST_FILE)):
        metrics["cache_bundle"] = "none: no entry for this key (compatlab cache explain RUN_ID says why)"
        return metrics
    import torch

    with open(os.path.join(entry, MANIFEST_FILE), encoding="ascii") as f:
        manifest = json.load(f)
    for item in manifest["files"]:
        rel = item["path"]
        if rel.startswith(KERNELS_DIR + "/"):
            dest = os.path.join(cache_dir, rel[len(KERNELS_DIR) + 1:])
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copyfile(os.path.join(entry, rel), dest)
    with open(os.path.join(entry, ARTIFACTS_FILE), "rb") as f:
        info = torch.compiler.load_cache_artifacts(f.read())
    if info is None:
        metrics["cache_bundle"] = "none: the bundle did not load (torch refused it)"
        return metrics
    os.utime(os.path.join(entry, MANIFEST_FILE))  # least recently used: this one was used now
    metrics.update(prepare_state="warm-remote", cache_bundle="loaded")
    return metrics


def _cache_stats(match: Callable[[str], bool]) -> tuple[int, int]:
    """Hits and misses of inductor's cache_stats summed over the caches whose class `match`es."""
    try:
        from torch._inductor.remote_cache import cache_stats
    except ImportError:
        return 0, 0
    stats = [s for name, s in cache_stats._stats.items() if match(name)]
    return sum(s.hit for s in stats), sum(s.miss for s in stats)


class CacheStats:
    """Hits and misses per compile cache (FX graph, AOTAutograd: dynamo's counters; autotune:
    inductor's cache_stats; the Redis remote FX graph and AOTAutograd caches: cache_stats) since
    a snapshot."""

    def __init__(self, values: dict[str, int]):
        self._values = values

    @staticmethod
    def _now() -> dict[str, int]:
        from torch._dynamo.utils import counters

        out = {}
        for prefix, group, hit, miss in DYNAMO_CACHES:
            out[f"{prefix}_cache_hits"] = int(counters[group][hit])
            out[f"{prefix}_cache_misses"] = int(counters[group][miss])
        out["autotune_cache_hits"], out["autotune_cache_misses"] = _cache_stats(lambda n: _AUTOTUNE_STAT in n)
        for prefix, name in REMOTE_CACHES:
            out[f"{prefix}_cache_hits"], out[f"{prefix}_cache_misses"] = _cache_stats(name.__eq__)
        return out

    @classmethod
    def snapshot(cls) -> CacheStats:
        return cls(cls._now())

    def delta(self) -> dict[str, int]:
        """{fx_graph_cache_hits, fx_graph_cache_misses, aot_autograd_..., autotune_...}."""
        return {k: v - self._values.get(k, 0) for k, v in self._now().items()}


def bundle_verdict(metrics: dict[str, Any]) -> None:
    """After the first call: a bundle that loaded but gave no hit is `inert`, one that gave
    hits `hit` (cache_bundle)."""
    if metrics.get("cache_bundle") != "loaded":
        return
    hits = metrics.get("fx_graph_cache_hits", 0) + metrics.get("aot_autograd_cache_hits", 0)
    metrics["cache_bundle"] = "hit" if hits > 0 else "inert"
