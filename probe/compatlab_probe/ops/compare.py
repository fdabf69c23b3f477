"""A target's op outputs against the CPU reference (doc/ops.md, "Comparison").

Outputs are flattened with torch's pytree; tensors are compared with
torch.testing.assert_close at the case's tolerances, NaNs equal, the target's value cast
to the reference's dtype on the CPU; other leaves (Python numbers, bools, None, dtypes)
must be equal. The error against the reference is the largest absolute and relative
difference over the floating tensors' finite elements.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Comparison:
    ok: bool
    message: str = ""
    max_abs_err: float | None = None
    max_rel_err: float | None = None


def to_reference(obj: Any, ref_dtype: Any) -> Any:
    """A sample's tensors as the reference takes them: on the CPU, floating tensors in
    `ref_dtype` (complex ones in its complex counterpart), the rest as they are."""
    import torch

    if isinstance(obj, torch.dtype):  # a dtype argument (factory ops) follows the reference
        return ref_dtype if ref_dtype is not None and obj.is_floating_point else obj
    if not isinstance(obj, torch.Tensor):
        return obj
    t = obj.detach().to("cpu")
    if ref_dtype is not None and t.is_floating_point():
        return t.to(ref_dtype)
    if ref_dtype is not None and t.is_complex():
        return t.to(torch.complex128 if ref_dtype == torch.float64 else t.dtype)
    return t.clone()


def _errors(actual: Any, expected: Any) -> tuple[float, float] | None:
    import torch

    if not (expected.is_floating_point() or expected.is_complex()) or expected.numel() == 0:
        return None
    a, e = actual.to(expected.dtype), expected
    finite = torch.isfinite(a) & torch.isfinite(e)
    if not bool(finite.any()):
        return None
    diff = (a - e).abs()[finite]
    rel = diff / e.abs()[finite].clamp_min(torch.finfo(diff.dtype).tiny)
    return float(diff.max()), float(rel.max())


def compare(actual: Any, expected: Any, atol: float, rtol: float) -> Comparison:
    """Whether `actual` (the target's outputs) matches `expected` (the reference's)."""
    import torch
    from torch.utils._pytree import tree_flatten

    a_leaves, a_spec = tree_flatten(actual)
    e_leaves, e_spec = tree_flatten(expected)
    if a_spec != e_spec:
        return Comparison(False, f"output structure differs: {a_spec} against the reference's {e_spec}")
    result = Comparison(True)
    for i, (a, e) in enumerate(zip(a_leaves, e_leaves, strict=True)):
        if isinstance(e, torch.Tensor) != isinstance(a, torch.Tensor):
            return Comparison(False, f"output {i}: {type(a).__name__} against the reference's {type(e).__name__}")
        if not isinstance(e, torch.Tensor):
            if a != e and not (isinstance(a, float) and isinstance(e, float) and a != a and e != e):
                return Comparison(False, f"output {i}: {a!r} against the reference's {e!r}")
            continue
        a_cpu = a.detach().to("cpu")
        errors = _errors(a_cpu, e)
        if errors is not None:
            result.max_abs_err = max(result.max_abs_err or 0.0, errors[0])
            result.max_rel_err = max(result.max_rel_err or 0.0, errors[1])
        try:
            exact = not (e.is_floating_point() or e.is_complex())
            torch.testing.assert_close(a_cpu.to(e.dtype) if a_cpu.dtype != e.dtype else a_cpu, e,
                                       atol=0 if exact else atol, rtol=0 if exact else rtol,
                                       equal_nan=True, check_device=False, check_layout=False,
                                       check_stride=False)
        except AssertionError as exc:
            return Comparison(False, f"output {i}: {str(exc).strip()}"[:1000], result.max_abs_err,
                              result.max_rel_err)
    return result
