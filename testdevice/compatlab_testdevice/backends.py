"""Test-only torch.compile backends (not registered by name; pass them as
"compatlab_testdevice.backends:perturb" in a request's `backend`).

perturb    compiles with aot_eager, then adds Gaussian noise to every floating
           output of the graph: a backend that compiles and runs but gives wrong
           numbers, so tests can show `fail_accuracy`. The noise is
           PERTURB_SCALE times the output's standard deviation (cosine to the
           true output about 0.7), from a generator seeded with PERTURB_SEED.
bias_grad  compiles with aot_eager; the forward is exact, the backward adds a
           fixed-sign bias of GRAD_BIAS (2 %) of its RMS to one weight's
           gradient (the largest dense 2-D one, chosen at the first call): a
           systematic error AdamW cannot normalise away (a per-weight scale such
           as x 0.98 it would: Adam's step is invariant to it), too small for
           the 3-step train check, caught by the learning rule over many steps.

Importing this module does not load the ctest library: it works on any target.
"""
from __future__ import annotations

import os

import torch

PERTURB_SCALE = float(os.environ.get("COMPATLAB_PERTURB_SCALE", "1.0"))
PERTURB_SEED = 1234
GRAD_BIAS = 0.02


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


def _biased_backward(fx_g: torch.fx.GraphModule, example_inputs):
    """aot_eager's backward with one weight's gradient biased (see bias_grad)."""
    from torch._dynamo.backends.debugging import boxed_nop

    inner = boxed_nop(fx_g, example_inputs)
    chosen = {}

    def run(args):
        grads = list(inner(args))
        if "index" not in chosen:
            # The largest dense 2-D gradient of the first call (no weight whose rows are
            # mostly zero, as an embedding's unused rows), fixed for the run.
            dense = [(g.numel(), i) for i, g in enumerate(grads)
                     if isinstance(g, torch.Tensor) and g.is_floating_point() and g.dim() == 2
                     and float((g != 0).float().mean()) > 0.5]
            chosen["index"] = max(dense)[1] if dense else None
            if chosen["index"] is not None:
                gen = torch.Generator().manual_seed(PERTURB_SEED)
                shape = grads[chosen["index"]].shape
                chosen["sign"] = torch.randint(0, 2, shape, generator=gen).float() * 2 - 1
        index = chosen["index"]
        if index is not None:
            g = grads[index]
            rms = g.detach().float().pow(2).mean().sqrt()
            grads[index] = g + (GRAD_BIAS * rms * chosen["sign"].to(g.device)).to(g.dtype)
        return grads

    run._boxed_call = True
    return run


def bias_grad(gm: torch.fx.GraphModule, example_inputs):
    """aot_eager whose backward adds a fixed-sign bias of GRAD_BIAS x its RMS to one weight's
    gradient: the forward is exact, the backward systematically wrong."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._dynamo.backends.debugging import boxed_nop

    return aot_autograd(fw_compiler=boxed_nop, bw_compiler=_biased_backward)(gm, example_inputs)
