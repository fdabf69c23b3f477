"""Test-only kernels planted on ctest (tests/e2e/test_ops.py): a target profile's `setup`
loads the test device, then registers, for PrivateUse1, a wrong `neg` (it returns its
input unchanged) and a `sigmoid` that kills its process with SIGSEGV. Registered with
torch.library, so the dispatcher (and the fallback audit) sees them as ctest kernels."""

from __future__ import annotations

import os
import signal

_LIBRARY = None


def _wrong_neg(x):
    import torch

    out = torch.empty_like(x)
    out.copy_(x)  # not -x
    return out


def _crashing_sigmoid(x):  # noqa: ARG001 - never returns
    os.kill(os.getpid(), signal.SIGSEGV)


def load() -> None:
    """compatlab_testdevice.load(), then the planted kernels (once per process)."""
    global _LIBRARY
    import torch

    import compatlab_testdevice

    compatlab_testdevice.load()
    if _LIBRARY is None:
        _LIBRARY = torch.library.Library("aten", "IMPL")
        _LIBRARY.impl("neg", _wrong_neg, "PrivateUse1")
        _LIBRARY.impl("sigmoid", _crashing_sigmoid, "PrivateUse1")
