"""Where a test's time goes: torch.profiler over a bounded window (doc/probe.md, "Profile").

    tracker = ProfileTracker(target, warmup=PROFILE_WARMUP)
    with tracker:                       # torch.profiler: the target's activities, shapes, stacks
        for _ in range(PROFILE_CALLS):
            tracker.call(fn)            # one synchronised call, timed (wall and thread CPU)
    result.metrics.update(tracker.metrics(fallback_names))
    tracker.write_trace(path, max_bytes)  # the gzip Chrome trace, when it fits

The steady window runs after the measured steady calls (so steady_median_s is never
taken under the profiler) and after the fallback audit (whose fallback ops name the
fallback category); mode "prepare" profiles the first call instead. The activities
are those torch.profiler.supported_activities() offers for the target's device type
(CPU always; CUDA or PrivateUse1 when the target's device is one and the build offers it).

The window's time per profiled call is split into five categories that add up to its
wall time on a target whose work runs on the host (cpu, ctest), each in seconds per call:

  fallback   inclusive time of the outermost ops the fallback audit names (CPU fallback)
  copy       inclusive time of the outermost copies (aten::copy_, _to_copy, to, _copy_from)
             outside fallback ops, on a target other than the CPU (host-device copies and
             copies on the device: the profiler does not record tensors' devices);
             with device activities: the device's memcpy and memset time
  compute    self time of every other op (and inductor's generated kernels' calls);
             with device activities: the device's kernel time
  idle       wall time of the window that no profiled event covers (waits between calls;
             with device activities: the wall time the other four leave, never below 0)
  framework  the rest: Python, modules, dispatch between and around the ops
             (with device activities: the host thread's CPU time outside fallback ops)

On a busy machine an op's time includes the time its thread waited for a core: the
categories are wall time, as steady_median_s is. With device activities the host and
the device overlap, so the five need not add up to the wall time.
"""

from __future__ import annotations

import collections
import gzip
import json
import os
import shutil
import statistics
import time
from collections.abc import Callable, Iterable
from typing import Any

PROFILE_CALLS = 5   # steady calls profiled (mode steady)
PROFILE_WARMUP = 1  # calls under the profiler before them, not kept (its own start-up)
TOP_OPS = 10        # ops kept by self time
TOP_LINES = 10      # source lines kept by self time
STACK_DEPTH = 16    # frames of each op's Python stack searched for the model's own line
SHAPES_CHARS = 200  # an op's input shapes, as text, cut to this
CATEGORIES = ("compute", "copy", "fallback", "framework", "idle")
COPY_OPS = frozenset({"aten::copy_", "aten::_to_copy", "aten::to", "aten::_copy_from",
                      "aten::_copy_from_and_resize"})
# Frames of the framework, not of the model: an op's source line is its first other frame.
_FRAMEWORK_FRAMES = ("torch/", "<built-in", "contextlib.py", "compatlab_probe/", "functools.py")
_INDUCTOR_KERNELS = ("cpp_fused", "triton_")


def activities_for(device_type: str) -> list[Any]:
    """The activities torch.profiler.supported_activities() offers for `device_type`: CPU, and
    the device's own (CUDA for "cuda", PrivateUse1 for a PrivateUse1 backend's name) when offered."""
    import torch

    supported = torch.profiler.supported_activities()
    wanted = {torch.profiler.ProfilerActivity.CPU}
    if device_type == "cuda":
        wanted.add(torch.profiler.ProfilerActivity.CUDA)
    elif device_type not in ("cpu", "meta") and device_type == torch._C._get_privateuse1_backend_name():
        wanted.add(getattr(torch.profiler.ProfilerActivity, "PrivateUse1", None))
    return sorted((a for a in supported if a in wanted), key=lambda a: int(a.value))


class ProfileTracker:
    """torch.profiler over the calls made through `call` (or the block of `timed`) while active.
    `warmup` calls first are profiled and dropped (the profiler's schedule)."""

    def __init__(self, target: Any, warmup: int = 0):
        self.target = target
        self.warmup = warmup
        self.times: list[float] = []
        self.thread_cpu_s = 0.0
        self._calls = 0
        self._prof = None

    def __enter__(self) -> ProfileTracker:
        import torch
        from torch._C._profiler import _ExperimentalConfig

        schedule = torch.profiler.schedule(wait=0, warmup=self.warmup, active=1 << 30) if self.warmup else None
        self._prof = torch.profiler.profile(
            activities=activities_for(self.target.device.type), record_shapes=True, with_stack=True,
            schedule=schedule, experimental_config=_ExperimentalConfig(verbose=True))
        self._prof.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> bool:
        self._prof.__exit__(*exc_info)
        return False

    def call(self, fn: Callable[[], Any]) -> Any:
        """fn() and the target's sync, timed; a warm-up call is not kept."""
        keep = self._calls >= self.warmup
        self._calls += 1
        cpu, start = time.thread_time(), time.perf_counter()
        value = fn()
        self.target.sync()
        if keep:
            self.times.append(time.perf_counter() - start)
            self.thread_cpu_s += time.thread_time() - cpu
        if self.warmup:
            self._prof.step()
        return value

    def record(self, wall_s: float, thread_cpu_s: float) -> None:
        """A call made outside `call` (the first call of mode prepare): its wall and thread CPU seconds."""
        self.times.append(wall_s)
        self.thread_cpu_s += thread_cpu_s

    def metrics(self, fallback_names: Iterable[str], generated_dir: str = "") -> dict[str, Any]:
        """profile_calls, profile_median_s, profile_<category>_s, profile_top_ops,
        profile_top_lines, profile_fallback_ops (the metrics of doc/worker-protocol.md);
        `generated_dir`: the compile cache, whose files are COMPILED_CODE in the lines."""
        calls = len(self.times)
        if not calls:
            raise RuntimeError("no profiled call")
        events = list(self._prof.events())
        fallback = {name.split(".", 1)[0] for name in fallback_names}
        categories, fallback_calls = split_time(events, fallback, self.target.is_cpu,
                                                sum(self.times), self.thread_cpu_s)
        wall = sum(self.times)
        metrics: dict[str, Any] = {"profile_calls": calls, "profile_median_s": statistics.median(self.times)}
        metrics.update({f"profile_{name}_s": categories[name] / calls for name in CATEGORIES})
        metrics["profile_top_ops"] = json.dumps(top_ops(self._prof, calls, wall))
        metrics["profile_top_lines"] = json.dumps(top_lines(self._prof, calls, wall, generated_dir))
        metrics["profile_fallback_ops"] = json.dumps(
            {name: n / calls for name, n in sorted(fallback_calls.items())}, sort_keys=True)
        metrics["profile_collective_share"] = collective_share(events, wall)
        return metrics

    def write_trace(self, path: str, max_bytes: int) -> str:
        """The gzip Chrome trace at `path`; "" when kept, else why not (then no file is left)."""
        raw = f"{path}.json"
        try:
            self._prof.export_chrome_trace(raw)
            with open(raw, "rb") as src, gzip.open(path, "wb", compresslevel=6) as dst:
                shutil.copyfileobj(src, dst)
            size = os.path.getsize(path)
            if size > max_bytes:
                os.unlink(path)
                return f"trace not kept: {size} bytes over the limit of {max_bytes}"
            return ""
        finally:
            if os.path.exists(raw):
                os.unlink(raw)


# Ops of torch.distributed's collectives (c10d, its functional form, the backends' own).
COLLECTIVE_PREFIXES = ("c10d::", "_c10d_functional::", "c10d_functional::", "gloo:", "nccl:", "record_param_comms")


def collective_share(events: list[Any], wall: float) -> float | None:
    """A test over several ranks (doc/ranks.md): the collectives' op self time (CPU) over the
    window's wall time; None in a process without a process group."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or wall <= 0:
        return None
    spent = sum(e.self_cpu_time_total for e in events if e.name.startswith(COLLECTIVE_PREFIXES)) / 1e6
    return spent / wall


def _op_event(event: Any) -> bool:
    return not event.is_python_function and "::" in event.name


def _kernel_call(event: Any) -> bool:
    return event.is_python_function and any(k in event.name for k in _INDUCTOR_KERNELS)


def _on_device(event: Any) -> bool:
    return event.device_type.name != "CPU"


def _outermost(event: Any, names: set[str]) -> bool:
    """No ancestor of `event` is an op event named in `names`."""
    parent, depth = event.cpu_parent, 0
    while parent is not None and depth < 256:
        if _op_event(parent) and parent.name in names:
            return False
        parent, depth = parent.cpu_parent, depth + 1
    return True


def _inside(event: Any, names: set[str]) -> bool:
    return not _outermost(event, names)


def _host_op_kind(event: Any, fallback: set[str], copies: set[str], boxed: set[str], device: bool) -> str:
    """The category a host event's time goes to ("" none): an outermost fallback op, an
    outermost copy (no device activities), an op or kernel call outside both (compute)."""
    if _on_device(event):
        return ""
    op = _op_event(event)
    if op and event.name in fallback and _outermost(event, boxed):
        return "fallback"
    if device:
        return ""
    if op and event.name in copies and _outermost(event, boxed):
        return "copy"
    if (op or _kernel_call(event)) and not _inside(event, boxed):
        return "compute"
    return ""


def split_time(events: list[Any], fallback: set[str], is_cpu: bool, wall_s: float,
               thread_cpu_s: float) -> tuple[dict[str, float], collections.Counter]:
    """The window's seconds by category (module docstring) and the outermost fallback ops' calls."""
    us = 1e-6
    copies = set() if is_cpu else set(COPY_OPS)
    boxed = fallback | copies
    device = [e for e in events if _on_device(e)]
    fallback_calls: collections.Counter = collections.Counter()
    seconds = dict.fromkeys(CATEGORIES, 0.0)
    for e in events:
        kind = _host_op_kind(e, fallback, copies, boxed, bool(device))
        if kind == "fallback":
            fallback_calls[e.name] += 1
        if kind:
            own = kind == "compute" and not _kernel_call(e)
            seconds[kind] += (e.self_cpu_time_total if own else e.cpu_time_total) * us
    if device:
        for e in device:
            kind = "copy" if e.name.startswith(("Memcpy", "Memset")) else "compute"
            seconds[kind] += e.device_time_total * us
        seconds["framework"] = max(0.0, thread_cpu_s - seconds["fallback"])
        seconds["idle"] = max(0.0, wall_s - sum(seconds[k] for k in ("compute", "copy", "fallback", "framework")))
    else:
        seconds["idle"] = max(0.0, wall_s - _covered_s(events))
        seconds["framework"] = max(0.0, wall_s - sum(seconds[k] for k in ("compute", "copy", "fallback", "idle")))
    return seconds, fallback_calls


def _covered_s(events: list[Any]) -> float:
    """Seconds of the host's timeline that its outermost events (the profiler's step marks
    left out) cover, overlaps counted once."""
    spans = sorted((e.time_range.start, e.time_range.end) for e in events
                   if e.cpu_parent is None and not _on_device(e) and not e.name.startswith("ProfilerStep#"))
    covered, end = 0.0, float("-inf")
    for start, stop in spans:
        if stop > end:
            covered += stop - max(start, end)
            end = stop
    return covered * 1e-6


def _self_us(avg: Any) -> float:
    device = getattr(avg, "self_device_time_total", 0.0) or 0.0
    return device if device > 0 else avg.self_cpu_time_total


def top_ops(prof: Any, calls: int, wall_s: float) -> list[dict[str, Any]]:
    """The TOP_OPS ops (by name and input shapes) with the most self time: name, shapes,
    calls and self_s per profiled call, share of the window's wall time."""
    rows = [a for a in prof.key_averages(group_by_input_shape=True) if "::" in a.key or a.device_type.name != "CPU"]
    rows.sort(key=_self_us, reverse=True)
    return [{"name": a.key[:SHAPES_CHARS], "shapes": str(a.input_shapes)[:SHAPES_CHARS],
             "calls": round(a.count / calls, 3), "self_s": _self_us(a) * 1e-6 / calls,
             "share": round(_self_us(a) * 1e-6 / wall_s, 4) if wall_s > 0 else 0.0}
            for a in rows[:TOP_OPS]]


COMPILED_CODE = "(compiled code)"


def source_line(stack: list[str], generated_dir: str = "") -> str:
    """The first frame of an op's stack (innermost first) that is the model's own, not the
    framework's (_FRAMEWORK_FRAMES): a source line "file(line): function" (the function's
    first line) or a module "nn.Module: NAME_INDEX"; COMPILED_CODE for a file of the
    compiler's output under `generated_dir` (the test's compile cache); "(framework)" when
    no frame is the model's."""
    for frame in stack:
        if generated_dir and frame.startswith(generated_dir.rstrip("/") + "/"):
            return COMPILED_CODE
        if not frame.startswith(_FRAMEWORK_FRAMES) and "/torch/" not in frame:
            return frame[:SHAPES_CHARS]
    return "(framework)"


def top_lines(prof: Any, calls: int, wall_s: float, generated_dir: str = "") -> list[dict[str, Any]]:
    """The TOP_LINES source lines (source_line of key_averages(group_by_stack_n=STACK_DEPTH))
    with the most op self time below them: line, self_s per profiled call, share of the wall."""
    by_line: collections.Counter = collections.Counter()
    for avg in prof.key_averages(group_by_stack_n=STACK_DEPTH):
        if "::" in avg.key:
            by_line[source_line(list(avg.stack or []), generated_dir)] += _self_us(avg) * 1e-6
    return [{"line": line, "self_s": s / calls, "share": round(s / wall_s, 4) if wall_s > 0 else 0.0}
            for line, s in by_line.most_common(TOP_LINES)]
