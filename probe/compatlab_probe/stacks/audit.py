"""CPU-fallback audit: which ops a test executes on the target, and which of them have
no kernel for the target's dispatch key (so they ran through the backend's CPU fallback).

    with OpAudit(target) as audit:
        model(**inputs)
    result.metrics.update(audit.metrics())

A TorchDispatchMode sees every op overload that reaches the dispatcher below
autograd (CompositeImplicitAutograd ops are already decomposed there). Each op
with a tensor on the target's device (argument or result) is counted and
classified once, by the dispatcher's own tables
(torch._C._dispatch_has_kernel_for_dispatch_key):

  kernel     the backend registers a kernel for the dispatch key
  composite  no backend kernel, but a CompositeExplicitAutograd /
             CompositeImplicitAutograd kernel: it decomposes into other ops
             (which the audit then sees, see below), not a fallback itself
  structured no backend kernel for the functional op but one for its `.out`
             overload, which its CompositeExplicitAutogradNonFunctional kernel calls
  fallback   none of these: the op ran through the backend's CPU fallback

A composite op's inner calls go back through the dispatcher below the mode, so
the audit runs the composite kernel itself with the mode active to see the ops
it decomposes into (embedding -> index_select). What a Python-level hook still
cannot see (a backend's own internal fallbacks) comes from the profile's
`fallback_counts` function, reported apart as backend_fallback_counts.
"""

from __future__ import annotations

import collections
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .target import Target

NOT_APPLICABLE = "not_applicable"
AUDITED = "audited"

_COMPOSITE_KEYS = ("CompositeExplicitAutograd", "CompositeImplicitAutograd")
_STRUCTURED_KEY = "CompositeExplicitAutogradNonFunctional"


def op_name(func: Any) -> str:
    """Schema-form name of an OpOverload: "aten::add.Tensor", "aten::mm" (empty overload name)."""
    schema = func._schema
    return f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name


def _has(name, key):
    import torch

    try:
        return bool(torch._C._dispatch_has_kernel_for_dispatch_key(name, key))
    except RuntimeError:  # not a registered operator name
        return False


def classify(name: str, dispatch_key: str) -> str:
    """"kernel", "composite", "structured" or "fallback" for op `name` on `dispatch_key`."""
    if _has(name, dispatch_key):
        return "kernel"
    if any(_has(name, key) for key in _COMPOSITE_KEYS):
        return "composite"
    if _has(name, _STRUCTURED_KEY):
        base = name.split(".", 1)[0]
        if _has(f"{base}.out", dispatch_key):
            return "structured"
    return "fallback"


def _tensors(obj, depth=0):
    import torch

    if isinstance(obj, torch.Tensor):
        yield obj
    elif depth < 3 and isinstance(obj, (list, tuple)):
        for value in obj:
            yield from _tensors(value, depth + 1)
    elif depth < 3 and isinstance(obj, dict):
        for value in obj.values():
            yield from _tensors(value, depth + 1)


def _make_mode_class():
    from torch.utils._python_dispatch import TorchDispatchMode

    class _AuditMode(TorchDispatchMode):
        def __init__(self, audit):
            super().__init__()
            self.audit = audit

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = op_name(func)
            audit = self.audit
            kind = audit._kind(name)
            if kind == "composite" and audit._decompose and name not in audit._decomposing:
                # Run the composite kernel with the mode active again, so the ops it
                # decomposes into are seen (and counted) one by one.
                out = audit._run_composite(self, func, name, args, kwargs)
                if out is not _NOTHING:
                    audit._count(name, args, out)
                    return out
            out = func(*args, **kwargs)
            audit._count(name, args, out)
            return out

    return _AuditMode


_NOTHING = object()


class OpAudit:
    """Context manager counting the op overloads executed on `target` while it is active."""

    def __init__(self, target: Target, decompose: bool = True):
        self.target = target
        self.applicable = bool(getattr(target, "audit_applicable", False))
        self.dispatch_key = getattr(target, "dispatch_key", "")
        self.device_type = target.device.type if self.applicable else ""
        self.counts = collections.Counter()
        self._classes = {}
        self._decompose = decompose
        self._decomposing = set()
        self._mode = None
        self._backend_before = None
        self._backend_after = None
        self.error = ""

    # -- bookkeeping used by the mode

    def _kind(self, name):
        kind = self._classes.get(name)
        if kind is None:
            kind = self._classes[name] = classify(name, self.dispatch_key)
        return kind

    def _count(self, name, args, out):
        for t in _tensors(args):
            if t.device.type == self.device_type:
                self.counts[name] += 1
                return
        for t in _tensors(out):
            if t.device.type == self.device_type:
                self.counts[name] += 1
                return

    def _run_composite(self, mode, func, name, args, kwargs):
        import torch

        for key_name in _COMPOSITE_KEYS:
            if _has(name, key_name):
                key = getattr(torch._C.DispatchKey, key_name)
                self._decomposing.add(name)  # a kernel that calls its own op runs it plainly
                try:
                    with mode:
                        return func._op_dk(key, *args, **kwargs)
                except Exception:  # noqa: BLE001 - let the op run plainly and report its own error
                    return _NOTHING
                finally:
                    self._decomposing.discard(name)
        return _NOTHING

    # -- context manager

    def __enter__(self):
        if not self.applicable:
            return self
        try:
            self._backend_before = self.target.fallback_counts()
        except Exception as exc:  # noqa: BLE001 - the audit must never fail the test
            self.error = f"fallback_counts failed: {type(exc).__name__}: {exc}"
        self._mode = _make_mode_class()(self)
        self._mode.__enter__()
        return self

    def __exit__(self, *exc_info):
        if self._mode is not None:
            self._mode.__exit__(*exc_info)
            self._mode = None
            try:
                self._backend_after = self.target.fallback_counts()
            except Exception as exc:  # noqa: BLE001
                self.error = f"fallback_counts failed: {type(exc).__name__}: {exc}"
        return False

    # -- results

    def fallback_ops(self) -> dict[str, int]:
        """{op name: calls} of executed ops classified "fallback"."""
        return {name: n for name, n in sorted(self.counts.items()) if self._kind(name) == "fallback"}

    def backend_counts(self) -> dict[str, int] | None:
        """The backend's own fallback counters over the audited block, or None without any."""
        if self._backend_after is None:
            return None
        before = self._backend_before or {}
        delta = {k: v - before.get(k, 0) for k, v in self._backend_after.items()}
        return {k: v for k, v in sorted(delta.items()) if v > 0}

    def metrics(self) -> dict[str, Any]:
        """fallback_audit, ops_executed, fallback_ops, backend_fallback_counts (contract names)."""
        if not self.applicable:
            return {"fallback_audit": NOT_APPLICABLE}
        backend = self.backend_counts()
        return {
            "fallback_audit": AUDITED if not self.error else f"{AUDITED} ({self.error})",
            "ops_executed": len(self.counts),
            "fallback_ops": json.dumps(self.fallback_ops(), sort_keys=True),
            "backend_fallback_counts": json.dumps(backend, sort_keys=True) if backend is not None else None,
        }


def unavailable(reason: str) -> dict[str, Any]:
    """The metrics of an audit that could not run."""
    return {"fallback_audit": f"unavailable: {reason}"}
