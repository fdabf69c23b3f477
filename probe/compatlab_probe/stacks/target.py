"""Target profiles: where a test runs, as data (targets/<name>.json, doc/targets.md).

The C++ core reads a profile and sends it whole in the request's target_profile;
the request parser (request.py) makes it a typed TargetProfile, and a request
without one runs on the built-in cpu profile. `Target.from_request` gives the
object the kinds use:

    target = Target.from_request(request)
    reason = target.check_available()   # imports, setup; None or why it cannot run
    model.to(target.device); target.sync(); target.peak_memory()

Function references in a profile are "pkg.mod:func" or a dotted path
("torch.cuda.synchronize": the longest importable module prefix, then
attributes).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from dataclasses import replace
from typing import Any

from ..protocol.request import CPU_PROFILE, TargetProfile, TestRequest, parse_target_profile

# The project root: probe/compatlab_probe/stacks/target.py -> ../../..
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TARGETS_DIR = os.path.join(ROOT, "targets")


class TargetUnavailable(Exception):
    """The target cannot run in this process; str() is the skip reason."""


def resolve(ref: str) -> Any:
    """The object a function reference names: "pkg.mod:attr.attr" or "pkg.mod.attr".

    Raises ImportError (ModuleNotFoundError) or AttributeError.
    """
    if ":" in ref:
        module_name, _, attrs = ref.partition(":")
        obj = importlib.import_module(module_name)
        for part in attrs.split(".") if attrs else []:
            obj = getattr(obj, part)
        return obj
    parts = ref.split(".")
    error = None
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError as exc:
            error = exc
            # A module that exists but fails to import for another reason is an error to report.
            if exc.name and not ".".join(parts[:cut]).startswith(exc.name):
                raise
            continue
        for part in parts[cut:]:
            obj = getattr(obj, part)
        return obj
    raise error or ImportError(f"cannot resolve {ref!r}")


def load_profile(name: str, directory: str = TARGETS_DIR) -> dict[str, Any]:
    """The profile object targets/<name>.json (tests and tools; the C++ sends profiles in requests)."""
    with open(os.path.join(directory, f"{name}.json")) as f:
        return json.load(f)


def _resolved(ref: str) -> Any:
    """resolve(ref), or None for an empty reference."""
    return resolve(ref) if ref else None


def _missing_module(exc: BaseException) -> str:
    return getattr(exc, "name", None) or str(exc)


class Target:
    """One target profile, ready for the kinds (`from_request`, or Target(parse_target_profile(obj)))."""

    def __init__(self, profile: TargetProfile):
        self.profile = profile
        self.name = profile.name
        self.device_name = profile.device
        self.memory_method = (profile.memory.method if profile.memory else "") or None
        self.dispatch_key = profile.dispatch_key
        self.audit_applicable = bool(self.dispatch_key)
        self.verified = profile.verified
        self.compile_backend = profile.compile.backend
        self.compile_options = dict(profile.compile.options)
        self.lowering = profile.lowering
        self.modes = profile.modes
        self._device = None
        self._sync = None
        self._reset_peak = None
        self._peak = None
        self._fallback_counts = None
        self._reset_fallback_counts = None
        self._ready = False

    @classmethod
    def from_request(cls, request: TestRequest) -> Target:
        """The request's target_profile, or the built-in cpu profile when it has none."""
        profile = request.target_profile
        if profile is None:
            name = request.target
            if name != "cpu":
                # An old-style request naming a target: use the shipped profile when there is one.
                try:
                    profile = parse_target_profile(load_profile(name))
                except (OSError, ValueError):
                    profile = replace(CPU_PROFILE, name=name, device=name)
            else:
                profile = CPU_PROFILE
        return cls(profile)

    # ------------------------------------------------------------------ availability

    def check_available(self) -> str | None:
        """Imports the profile's modules, runs its setup, asks `available`.

        Returns None when the target can run here, else the skip reason. Idempotent.
        """
        try:
            self.ensure_ready()
        except TargetUnavailable as exc:
            return str(exc)
        return None

    def ensure_ready(self) -> None:
        """Like check_available but raises TargetUnavailable(reason)."""
        if self._ready:
            return
        p = self.profile
        for rel in reversed(p.pythonpath):
            path = rel if os.path.isabs(rel) else os.path.join(ROOT, rel)
            if path not in sys.path:
                sys.path.insert(0, path)
        for module in p.imports:
            try:
                importlib.import_module(module)
            except ImportError as exc:
                raise TargetUnavailable(f"target {self.name}: module {_missing_module(exc)} is not installed "
                                        f"({type(exc).__name__}: {exc})") from exc
        if p.setup:
            try:
                resolve(p.setup)()
            except (ImportError, FileNotFoundError) as exc:
                raise TargetUnavailable(f"target {self.name}: setup {p.setup} failed: "
                                        f"{type(exc).__name__}: {exc}") from exc
        if p.available:
            try:
                ok = resolve(p.available)
                ok = ok() if callable(ok) else bool(ok)
            except ImportError as exc:
                raise TargetUnavailable(f"target {self.name}: module {_missing_module(exc)} is not installed") \
                    from exc
            if not ok:
                raise TargetUnavailable(f"target {self.name}: device not available ({p.available} is False)")
        self._sync = _resolved(p.synchronize)
        memory = p.memory
        self._reset_peak = _resolved(memory.reset_peak) if memory else None
        self._peak = _resolved(memory.peak) if memory else None
        self._fallback_counts = _resolved(p.fallback_counts)
        self._reset_fallback_counts = _resolved(p.reset_fallback_counts)
        import torch

        try:
            self._device = torch.device(self.device_name)
        except RuntimeError as exc:
            raise TargetUnavailable(f"target {self.name}: torch does not know device "
                                    f"{self.device_name!r}: {exc}") from exc
        self._ready = True

    # ------------------------------------------------------------------ use

    @property
    def device(self) -> Any:
        """The torch.device of model and inputs (after check_available)."""
        if self._device is None:
            import torch

            self._device = torch.device(self.device_name)
        return self._device

    @property
    def is_cpu(self) -> bool:
        return self.device.type == "cpu"

    def sync(self) -> None:
        """Waits for the device's queued work (nothing to do on the cpu)."""
        if self._sync is not None:
            self._sync()

    def reset_peak_memory(self) -> None:
        if self._reset_peak is not None:
            self._reset_peak()

    def peak_memory(self) -> int | None:
        """Device peak bytes since reset_peak_memory(), or None without allocator statistics."""
        if self._peak is None:
            return None
        return int(self._peak())

    def fallback_counts(self) -> dict[str, int] | None:
        """The backend's own {op name: count} CPU-fallback counters, or None when it has none."""
        if self._fallback_counts is None:
            return None
        return dict(self._fallback_counts())

    def reset_fallback_counts(self) -> None:
        if self._reset_fallback_counts is not None:
            self._reset_fallback_counts()

    def to_device(self, obj: Any) -> Any:
        """A tensor, a module or a dict/list/tuple of tensors moved to the target device."""
        import torch

        if isinstance(obj, (torch.Tensor, torch.nn.Module)):
            return obj.to(self.device)
        if isinstance(obj, dict):
            return {k: self.to_device(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return type(obj)(self.to_device(v) for v in obj)
        return obj

    def __repr__(self) -> str:
        return f"Target({self.name!r}, device={self.device_name!r})"
