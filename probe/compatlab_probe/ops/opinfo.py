"""The installed torch's OpInfo database, read through its own API (never a copy of it).

An entry is named by its exact (name, variant_test_name) pair, written `name` or
`name:variant` on the wire (doc/ops.md, "Op keys"). PyTorch's own skips for the
comparison compatlab makes are the entry's DecorateInfos active for TestCommon's
test_compare_cpu (the device-against-CPU test) on the device type and dtype, plus its
device-type-only decorators (onlyCUDA, onlyCPU, onlyNativeDeviceTypes).
"""

from __future__ import annotations

import inspect
import re
from typing import Any

_KEY_PART = re.compile(r"^[A-Za-z0-9_.\-]*$")
# The PyTorch test whose skips, xfails and tolerances apply to a device-against-CPU comparison.
COMPARE_TEST = ("TestCommon", "test_compare_cpu")
# test_compare_cpu's own tolerances (test/test_ops.py: assertEqual(atol=1e-3, rtol=1e-3)).
COMPARE_ATOL = 1e-3
COMPARE_RTOL = 1e-3
NATIVE_DEVICE_TYPES = ("cpu", "cuda", "meta", "mps", "xpu")


def op_db() -> list[Any]:
    """torch's op_db (imported once; the zygote imports the module before forking)."""
    from torch.testing._internal.common_methods_invocations import op_db as db

    return db


def key_of(op: Any) -> str:
    return f"{op.name}:{op.variant_test_name}" if op.variant_test_name else op.name


def split_key(key: str) -> tuple[str, str]:
    """(name, variant) of `name` or `name:variant`; ValueError for a malformed key."""
    name, _, variant = key.partition(":")
    if not name or not _KEY_PART.match(name) or not _KEY_PART.match(variant):
        raise ValueError(f"bad op key {key!r}")
    return name, variant


def by_key() -> dict[str, Any]:
    """Every entry by its exact key."""
    return {key_of(op): op for op in op_db()}


def dtype_name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


def supported_dtypes(op: Any, device_type: str) -> list[str]:
    """The dtypes the entry declares for `device_type` (OpInfo.supported_dtypes), sorted names."""
    return sorted(dtype_name(d) for d in op.supported_dtypes(device_type))


def _reason_of(decorator: Any) -> str:
    """unittest.skip's reason, read from its closure; "" when it has none."""
    try:
        return str(inspect.getclosurevars(decorator).nonlocals.get("reason", ""))
    except (TypeError, ValueError):
        return ""


def _active_infos(op: Any, device_type: str, dtype: Any) -> list[Any]:
    from torch.testing._internal.opinfo.core import DecorateInfo

    infos = []
    for info in op.decorators:
        if isinstance(info, DecorateInfo) and info.is_active(*COMPARE_TEST, device_type, dtype, {}):
            infos.append(info)
    return infos


def _device_only(op: Any, device_type: str) -> str:
    """The reason a device-type-only decorator of the entry rules `device_type` out, else ""."""
    for decorator in op.decorators:
        name = getattr(decorator, "__name__", "")
        if name == "onlyCUDA" and device_type != "cuda":
            return "onlyCUDA"
        if name == "onlyCPU" and device_type != "cpu":
            return "onlyCPU"
        if name == "onlyNativeDeviceTypes" and device_type not in NATIVE_DEVICE_TYPES:
            return "onlyNativeDeviceTypes"
    return ""


def pytorch_skip(op: Any, device_type: str, dtype: Any) -> tuple[str, str] | None:
    """("skip" or "xfail", reason) when PyTorch's own data rules the case out, else None:
    a dtype the entry does not declare for the device type, a device-type-only decorator,
    a skip or expectedFailure active for test_compare_cpu."""
    if dtype not in op.supported_dtypes(device_type):
        return "skip", f"dtype {dtype_name(dtype)} is not among the OpInfo's dtypes for {device_type}"
    only = _device_only(op, device_type)
    if only:
        return "skip", f"the OpInfo is decorated {only}"
    for info in _active_infos(op, device_type, dtype):
        for decorator in info.decorators:
            qualname = getattr(decorator, "__qualname__", "")
            if qualname.startswith("skip"):
                reason = _reason_of(decorator) or "skipped"
                return "skip", f"DecorateInfo skip for {'.'.join(COMPARE_TEST)}: {reason}"
            if getattr(decorator, "__name__", "") == "expectedFailure":
                return "xfail", f"DecorateInfo expectedFailure for {'.'.join(COMPARE_TEST)}"
    return None


def tolerance(op: Any, device_type: str, dtype: Any) -> tuple[float, float, str]:
    """(atol, rtol, source) of the comparison: a toleranceOverride active for
    test_compare_cpu, else the entry's precisionOverride (atol), else test_compare_cpu's own
    1e-3 each, never tighter than torch.testing's default for the dtype."""
    from torch.testing._comparison import default_tolerances
    from torch.testing._internal.common_device_type import precisionOverride, toleranceOverride

    rtol0, atol0 = default_tolerances(dtype)
    atol, rtol, source = max(COMPARE_ATOL, atol0), max(COMPARE_RTOL, rtol0), "test_compare_cpu"
    for info in _active_infos(op, device_type, dtype):
        for decorator in info.decorators:
            if isinstance(decorator, toleranceOverride) and dtype in decorator.d:
                return decorator.d[dtype].atol, decorator.d[dtype].rtol, "toleranceOverride"
    for decorator in op.decorators:
        if isinstance(decorator, precisionOverride) and dtype in decorator.d:
            return decorator.d[dtype], rtol, "precisionOverride"
    return atol, rtol, source
