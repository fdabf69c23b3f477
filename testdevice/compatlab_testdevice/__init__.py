"""ctest: compatlab's test device, a PrivateUse1 backend built for its tests.

The C++ library (testdevice/csrc, built by `make testdevice` into
build/testdevice/compatlab_testdevice.so) gives the device memory of its own
with allocator statistics, real kernels for a short whitelist of ATen ops and
a counting boxed CPU fallback for every other op. This module loads it, names
the device "ctest", registers `torch.ctest` (the device module torch looks
up for a renamed PrivateUse1 backend) and the torch.compile backend "ctest".
See doc/test-device.md.

    import compatlab_testdevice as ctest
    ctest.load()
    x = torch.ones(3, device="ctest")

Op names follow the dispatcher's schema form: "aten::add.Tensor",
"aten::tanh.out", "aten::mm" (no overload name when it is empty).
"""
from __future__ import annotations

import os
import pathlib
import threading
import types

import torch

__all__ = [
    "BACKEND",
    "STRUCTURAL_OPS",
    "UnsupportedOpError",
    "compile_backend",
    "compile_allowed_ops",
    "fallback_counts",
    "is_available",
    "library_path",
    "load",
    "max_memory_allocated",
    "memory_allocated",
    "memory_stats",
    "registered_kernels",
    "reset_fallback_counts",
    "reset_peak_memory_stats",
    "synchronize",
]

BACKEND = "ctest"
LIBRARY_ENV = "COMPATLAB_TESTDEVICE_LIB"
_ROOT = pathlib.Path(__file__).resolve().parents[2]

# Ops the compile backend accepts besides the device's own kernels: ATen ops
# whose only kernel for ctest is a CompositeExplicitAutograd one that reduces
# to view/as_strided or to empty + copy_, all of them ctest kernels, so they
# run without the fallback (the tests check each one).
STRUCTURAL_OPS = frozenset({
    "aten::_to_copy",
    "aten::_unsafe_view",
    "aten::alias",
    "aten::clone",
    "aten::detach",
    "aten::empty_like",
    "aten::expand",
    "aten::permute",
    "aten::select.int",
    "aten::slice.Tensor",
    "aten::squeeze.dim",
    "aten::squeeze.dims",
    "aten::t",
    "aten::transpose.int",
    "aten::unsqueeze",
})

_lock = threading.Lock()
_loaded = False


class UnsupportedOpError(RuntimeError):
    """The ctest compile backend refuses a graph holding ops it has no kernel for."""


def library_path() -> pathlib.Path:
    """Where load() looks for the library: $COMPATLAB_TESTDEVICE_LIB, else the build tree."""
    env = os.environ.get(LIBRARY_ENV)
    if env:
        return pathlib.Path(env)
    return _ROOT / "build" / "testdevice" / "compatlab_testdevice.so"


def load(path: str | os.PathLike | None = None) -> None:
    """Loads the library and registers the "ctest" device and compile backend.

    Idempotent. Raises FileNotFoundError when the library is not built (run
    `make testdevice`) and RuntimeError when PrivateUse1 already carries
    another backend's name (one process holds one PrivateUse1 backend).
    Loading runs no torch op, so a fork server may load before forking.
    """
    global _loaded
    with _lock:
        if _loaded:
            return
        current = torch._C._get_privateuse1_backend_name()
        if current not in ("privateuseone", BACKEND):
            raise RuntimeError(f"PrivateUse1 is already the {current!r} backend in this process")
        lib = pathlib.Path(path) if path is not None else library_path()
        if not lib.is_file():
            raise FileNotFoundError(f"ctest library not built: {lib} (run `make testdevice`)")
        torch.ops.load_library(str(lib))
        if current != BACKEND:
            torch.utils.rename_privateuse1_backend(BACKEND)
            torch.utils.generate_methods_for_privateuse1_backend()
        if not hasattr(torch, BACKEND):
            torch._register_device_module(BACKEND, _device_module())
        _register_compile_backend()
        _loaded = True


def is_available() -> bool:
    """True once load() has succeeded in this process."""
    return _loaded


def _ops():
    if not _loaded:
        raise RuntimeError("ctest is not loaded: call compatlab_testdevice.load() first")
    return torch.ops.compatlab_testdevice


def memory_stats() -> dict[str, int]:
    """The allocator's statistics: allocated_bytes (live now), peak_bytes (since the
    last reset), num_allocs and num_frees (ever)."""
    allocated, peak, allocs, frees = _ops().memory_stats()
    return {"allocated_bytes": allocated, "peak_bytes": peak, "num_allocs": allocs,
            "num_frees": frees}


def memory_allocated(device=None) -> int:
    """Bytes of ctest memory held by live tensors now."""
    return memory_stats()["allocated_bytes"]


def max_memory_allocated(device=None) -> int:
    """Highest memory_allocated() since the last reset_peak_memory_stats() (or load)."""
    return memory_stats()["peak_bytes"]


def reset_peak_memory_stats(device=None) -> None:
    """Sets the peak to what is allocated now."""
    _ops().reset_peak_memory_stats()


def synchronize(device=None) -> None:
    """Waits for ctest work: every ctest kernel is complete when it returns."""
    _ops().synchronize()


def fallback_counts() -> dict[str, int]:
    """Op name -> calls the CPU fallback handled since the last reset. The name is
    the overload that reached the fallback: for structured ops that is usually the
    .out variant (torch.tanh on ctest counts "aten::tanh.out")."""
    names, counts = _ops().fallback_counts()
    return dict(zip(names, counts, strict=False))


def reset_fallback_counts() -> None:
    _ops().reset_fallback_counts()


def registered_kernels() -> frozenset[str]:
    """Op names with a kernel registered for PrivateUse1, read from the dispatcher
    (so they include kernels torch itself registers there, e.g. c10d's)."""
    _ops()
    return frozenset(torch._C._dispatch_get_registrations_for_dispatch_key("PrivateUse1"))


def compile_allowed_ops() -> frozenset[str]:
    """The ops a graph may hold for the ctest compile backend to accept it."""
    return registered_kernels() | STRUCTURAL_OPS


# --- the torch.compile backend ------------------------------------------------

def _op_name(target) -> str | None:
    """Schema-form name of an ATen-level graph target, or None when the target is
    not an operator overload (operator.getitem and other Python glue)."""
    if isinstance(target, torch._ops.OpOverload):
        schema = target._schema
        return f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name
    if isinstance(target, torch._ops.HigherOrderOperator):
        return f"higher_order::{target.name()}"
    return None


def _check_graph(gm: torch.fx.GraphModule, what: str) -> None:
    allowed = compile_allowed_ops()
    refused: dict[str, int] = {}
    for node in gm.graph.nodes:
        if node.op == "call_function":
            name = _op_name(node.target)
            if name is not None and name not in allowed:
                refused[name] = refused.get(name, 0) + 1
        elif node.op in ("call_method", "call_module"):
            # aot_autograd graphs call operator overloads only; anything else is a
            # construct this backend cannot lower.
            key = f"{node.op}:{node.target}"
            refused[key] = refused.get(key, 0) + 1
    if refused:
        listed = ", ".join(sorted(refused))
        raise UnsupportedOpError(
            f"ctest cannot compile the {what} graph: no ctest kernel for {listed}")


def _compile_backend():
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.partitioners import default_partition

    def fw_compiler(gm, example_inputs):
        _check_graph(gm, "forward")
        return make_boxed_func(gm.forward)

    def bw_compiler(gm, example_inputs):
        _check_graph(gm, "backward")
        return make_boxed_func(gm.forward)

    def partition_fn(joint_module, joint_inputs, **kwargs):
        # The joint graph holds the backward too: refusing here fails the compile
        # at torch.compile time, not at the first .backward().
        _check_graph(joint_module, "joint forward/backward")
        return default_partition(joint_module, joint_inputs, **kwargs)

    return aot_autograd(fw_compiler=fw_compiler, bw_compiler=bw_compiler,
                        partition_fn=partition_fn)


def compile_backend(gm: torch.fx.GraphModule, example_inputs):
    """The "ctest" torch.compile backend. It lowers dynamo's graph with aot_autograd
    (functionalized ATen ops, CompositeImplicitAutograd ops decomposed, no other
    decomposition table), refuses with UnsupportedOpError any graph holding an op
    outside compile_allowed_ops(), naming the ops, and otherwise runs the ATen
    graph as it is, op by op on the device's kernels."""
    return _compile_backend()(gm, example_inputs)


def _register_compile_backend() -> None:
    from torch._dynamo.backends.registry import register_backend

    try:
        register_backend(compiler_fn=compile_backend, name=BACKEND)
    except RuntimeError as e:  # registered by an earlier copy of this module
        if "duplicate" not in str(e):
            raise


# --- torch.ctest ----------------------------------------------------------------

def _device_module() -> types.ModuleType:
    """The module torch finds as torch.ctest (lazy init, seeding, AMP queries)."""
    mod = types.ModuleType(f"torch.{BACKEND}")
    mod.is_available = is_available
    mod.is_initialized = lambda: True
    mod._lazy_init = lambda: None
    mod.device_count = lambda: 1
    mod.current_device = lambda: 0
    mod.synchronize = synchronize
    mod.memory_allocated = memory_allocated
    mod.max_memory_allocated = max_memory_allocated
    mod.reset_peak_memory_stats = reset_peak_memory_stats
    mod.memory_stats = memory_stats
    # Random ops run through the CPU fallback on the CPU generator, which
    # torch.manual_seed already seeds.
    mod._is_in_bad_fork = lambda: False
    mod.manual_seed_all = lambda seed: None
    mod.manual_seed = lambda seed: None
    mod.get_amp_supported_dtype = lambda: [torch.float16, torch.bfloat16]
    return mod
