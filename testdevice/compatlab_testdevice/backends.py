"""Test-only torch.compile backends (not registered by name; pass them as
"compatlab_testdevice.backends:perturb" in a request's `backend`).

perturb    compiles with aot_eager, then adds Gaussian noise to every floating
           output of the graph: a backend that compiles and runs but gives wrong
           numbers, so tests can show `fail_accuracy`. The noise is
           PERTURB_SCALE times the output's standard deviation (cosine to the
           true output about 0.7), from a generator seeded with PERTURB_SEED.

Importing this module does not load the ctest library: it works on any target.
"""
from __future__ import annotations

import os

import torch

PERTURB_SCALE = float(os.environ.get("COMPATLAB_PERTURB_SCALE", "1.0"))
PERTURB_SEED = 1234


def _noisy(value, gen):
    if isinstance(value, torch.Tensor) and value.is_floating_point() and value.numel() > 0:
        noise = torch.randn(value.shape, generator=gen, dtype=torch.float32).to(value.device, value.dtype)
        scale = float(value.detach().float().std()) if value.numel() > 1 else 1.0
        return value + noise * (PERTURB_SCALE * (scale + 1e-3))
    return value


def perturb(gm: torch.fx.GraphModule, example_inputs):
    """aot_eager with noise added to the graph's floating outputs."""
    from torch._dynamo.backends.debugging import aot_eager

    compiled = aot_eager(gm, example_inputs)
    gen = torch.Generator().manual_seed(PERTURB_SEED)

    def run(*args):
        out = compiled(*args)
        if isinstance(out, (list, tuple)):
            return type(out)(_noisy(v, gen) for v in out)
        return _noisy(out, gen)

    return run
