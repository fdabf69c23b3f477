"""A test over several ranks (doc/ranks.md), inside one rank process: the process group, the
model split over it, what the reference and the comparison read back whole.

    result = run_rank(request, store_path, run)   # worker/group.py: rendezvous, run, barrier
    plan = split(model, request)                   # tp: transformers' tp_plan, else the family's
                                                   # parallelize_module plan; dp: DDP (train)
    full(tensor)                                   # a DTensor gathered whole, else the tensor
    unsharded(model)                               # the model as built, before the split

The split keeps a copy of the model as built (same seed, same weights on every rank): the
CPU float64 reference of the comparison is made from it (kinds/common.cpu_copy), so a
sharded pass means the numbers of the split model match the single-device model's.
"""

from __future__ import annotations

import copy
import os
import weakref
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

from ..host.runtime import stack_info
from ..protocol import stage_marks
from ..protocol.request import TestRequest
from ..protocol.result import Result

# The process group's backend by device type, when the profile names none (ranks_backend).
BACKENDS = {"cpu": "gloo", "cuda": "nccl"}
# The rendezvous waits at most this long for the other ranks (the deadline ends it sooner).
RENDEZVOUS_S = 600.0

_unsharded: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def unsplittable_reason(model: Any, request: TestRequest) -> str:
    """Why split() cannot split `model` (the test is skipped), else "": tp needs transformers'
    tp_plan or a FAMILY_PLANS entry; dp takes kind train only."""
    if request.kind_params.given.get("parallel") == "dp":
        return "" if request.kind == "train" else f"--parallel dp takes kind train only, not {request.kind}"
    if request.ranks == 1 or _has_tp_plan(model):
        return ""
    family = getattr(getattr(model, "config", None), "model_type", "")
    if family in FAMILY_PLANS:
        return ""
    return (f"{type(model).__name__} has no tensor-parallel plan: its config has no base_model_tp_plan and "
            f"compatlab has no parallelize_module plan for {family or 'it'} (doc/ranks.md)")


def _has_tp_plan(model: Any) -> bool:
    return bool(getattr(model, "tp_plan", None)) and bool(getattr(model, "supports_tp_plan", False))


def backend_of(request: TestRequest) -> str:
    """The profile's ranks_backend, else gloo on the cpu and nccl on cuda; ValueError else."""
    profile = request.target_profile
    if profile is not None and profile.ranks_backend:
        return profile.ranks_backend
    device = (profile.device if profile is not None else "cpu").split(":")[0]
    if device not in BACKENDS:
        raise ValueError(f"target {request.target} (device {device}) names no ranks_backend")
    return BACKENDS[device]


def run_rank(request: TestRequest, store_path: str, run: Callable[[TestRequest], dict[str, Any]]) -> dict[str, Any]:
    """One rank's work: its threads (the test's share), the rendezvous (a FileStore at
    `store_path`), `run(request)`, a barrier so that no rank leaves while another still
    works, the group destroyed. Returns the rank's result object."""
    import torch
    import torch.distributed as dist

    n, r = request.ranks, request.rank
    # Every call of the split model is a collective: every rank makes the same calls, so the
    # steady phase is exactly warmup + min_iters calls (no time minimum, no budget extension).
    request = replace(request, measure=replace(request.measure, min_time_s=0.0, max_time_s=0.0))
    os.environ.update(RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(n), LOCAL_WORLD_SIZE=str(n))
    if request.torch_num_threads > 0:
        torch.set_num_threads(max(1, request.torch_num_threads // n))
    stage_marks.enter("rendezvous")
    try:
        backend = backend_of(request)
        if backend == "nccl":
            torch.cuda.set_device(r % torch.cuda.device_count())
        dist.init_process_group(backend, store=dist.FileStore(store_path, n), rank=r, world_size=n,
                                timeout=timedelta(seconds=max(request.timeout_s, 1.0) or RENDEZVOUS_S))
    except Exception as exc:  # noqa: BLE001 - the group could not form: compatlab's failure
        return Result(stack_info()).fail("harness_error", "rendezvous", exc).to_dict()
    stage_marks.at("run")
    result = run(request)
    result.setdefault("metrics", {})["dist_backend"] = backend
    stage_marks.enter("barrier")
    dist.barrier()
    stage_marks.leave()
    dist.destroy_process_group()
    return result


def unsharded(model: Any) -> Any:
    """The model as built, before split() changed it; `model` itself when it was not split."""
    return _unsharded.get(model, model)


def full(value: Any) -> Any:
    """A DTensor gathered whole on every rank (a collective: every rank calls it); else `value`."""
    from torch.distributed.tensor import DTensor

    return value.full_tensor() if isinstance(value, DTensor) else value


def split(model: Any, request: TestRequest) -> str:
    """Splits `model` over the process group in place (kind_params parallel: tp, the default,
    or dp, train only) and keeps its unsplit copy (unsharded). Returns the plan in words
    (parallel_plan). REQUIRES: unsplittable_reason is ""."""
    original = copy.deepcopy(model)
    if request.ranks == 1:
        words = "none: a process group of one rank, the model whole"
    elif request.kind_params.given.get("parallel") == "dp":
        words = "dp: DistributedDataParallel, every rank the whole batch"
    else:
        words = _tensor_parallel(model, request.ranks)
    _unsharded[model] = original
    return words


def data_parallel(model: Any) -> Any:
    """dp: the module that trains `model` with its gradients averaged over the group
    (torch's DistributedDataParallel; the parameters stay `model`'s own)."""
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(model)


def _tensor_parallel(model: Any, ranks: int) -> str:
    """transformers' own plan (the model's tp_plan: base_model_tp_plan and the head's) through
    the path from_pretrained(tp_plan="auto") takes (DistributedConfig, prepare_distribute_model,
    maybe_distribute_model); else the family's parallelize_module plan (FAMILY_PLANS)."""
    plan = dict(getattr(model, "tp_plan", None) or {})
    if _has_tp_plan(model):
        from transformers.distributed import DistributedConfig

        config, _, mesh = type(model).prepare_distribute_model(DistributedConfig(tp_size=ranks, tp_plan="auto"))
        type(model).maybe_distribute_model(model, config, mesh)
        return f"tp: transformers tp_plan ({len(plan)} rules)"
    return FAMILY_PLANS[model.config.model_type](model, ranks)


def _gpt2_plan(model: Any, ranks: int) -> str:
    """gpt2's family (doc/ranks.md): each block's MLP split, c_fc by output columns and c_proj
    by input rows (its output summed over the ranks); attention and embeddings replicated.
    transformers' Conv1D keeps its weight as (in, out), so the shards are Shard(1) and Shard(0)
    of that weight, given to parallelize_module through its ParallelStyle interface."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import parallelize_module

    mesh = init_device_mesh(_mesh_device(), (ranks,))
    base = getattr(model, "transformer", model)
    blocks = getattr(base, "h", None)
    if blocks is None:
        raise ValueError(f"{type(model).__name__}: no transformer.h blocks for the gpt2 plan")
    colwise, rowwise = _conv1d_styles()
    plan = {}
    for i in range(len(blocks)):
        plan.update({f"h.{i}.mlp.c_fc": colwise(), f"h.{i}.mlp.c_proj": rowwise()})
    parallelize_module(base, mesh, plan)
    return f"tp: parallelize_module, compatlab's gpt2 plan ({len(plan)} modules: MLP split, attention replicated)"


def _mesh_device() -> str:
    import torch

    return torch._C._get_accelerator().type


def _conv1d_styles():
    """The Conv1D styles, made once torch.distributed is imported (only in a rank)."""
    from torch.distributed.tensor import Replicate, Shard, distribute_module, distribute_tensor
    from torch.distributed.tensor.parallel import ParallelStyle

    def shard(dims: dict[str, int]):
        def partition(name, module, mesh):
            for pname, param in list(module.named_parameters(recurse=False)):
                placement = Shard(dims[pname]) if pname in dims else Replicate()
                module.register_parameter(pname, _parameter(distribute_tensor(param, mesh, [placement],
                                                                              src_data_rank=None), param))
        return partition

    def to_local_input(placement):
        def prepare(module, inputs, mesh):
            from torch.distributed.tensor import DTensor

            x = inputs[0]
            return (x if isinstance(x, DTensor) else DTensor.from_local(x, mesh, [placement], run_check=False),
                    *inputs[1:])
        return prepare

    class Colwise(ParallelStyle):
        def _apply(self, module, mesh):
            return distribute_module(module, mesh, shard({"weight": 1, "bias": 0}),
                                     input_fn=to_local_input(Replicate()),
                                     output_fn=lambda module, out, mesh: out)

    class Rowwise(ParallelStyle):
        def _apply(self, module, mesh):
            def output(module, out, mesh):
                return out.redistribute(mesh, [Replicate()]).to_local() \
                    if out.placements != (Replicate(),) else out.to_local()
            return distribute_module(module, mesh, shard({"weight": 0}), input_fn=to_local_input(Shard(-1)),
                                     output_fn=output)

    return Colwise, Rowwise


def _parameter(tensor: Any, like: Any) -> Any:
    import torch

    return torch.nn.Parameter(tensor, requires_grad=like.requires_grad)


# compatlab's parallelize_module plans, by model type (doc/ranks.md): for families whose
# config has no base_model_tp_plan.
FAMILY_PLANS: dict[str, Callable[[Any, int], str]] = {"gpt2": _gpt2_plan}
