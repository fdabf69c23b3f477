"""Kind forward with dynamic shapes (doc/probe.md, "Dynamic shapes"): mode compile, one
compiled model, every shape of the request's `shapes` in one process.

    refused  the target profile's dynamic_refused    -> fail_to_compile at compile (its reason)
    build    the model, with positions for the longest shape; the inputs of every shape
    prepare  per shape in order: the eager first call (the comparison's eager run), then the
             compiled first call, timed: dyn_prepare (the first shape's is prepare_s and holds
             the compile; a later one's holds a recompile where dyn_recompiles says so),
             dyn_recompiles and dyn_graphs from dynamo's compilation metrics and counters
    steady   per shape: compiled and eager calls in alternating blocks (dyn_steady_median,
             dyn_eager_steady_median); the row's steady_* are the first shape's
    audit    one eager call at the first shape; memory read before it
    compare  the CPU reference at every shape, each judged by forward's rule (dyn_acc_max_abs_err,
             dyn_acc_passed); the row's acc_* and verdict are the first failing shape's, else
             those of the shape with the largest error

`dynamic` "true" compiles with dynamic=True (the request's compile options say so); "mark"
keeps dynamic=False and marks, on every input tensor, dim 0 when the shapes' batch sizes vary
and dim 1 when their sequence lengths vary (torch._dynamo.mark_dynamic), so only those dims
are symbolic. A compile or recompile error at any shape is fail_to_compile at compile.
"""

from __future__ import annotations

import json
from typing import Any

import torch

from ..measure import accuracy
from ..stacks import compiler
from .common import (
    Built,
    StageFailed,
    alternating_steady,
    cpu_copy,
    inputs_for_shape,
    recorded,
    reference_inputs,
    stage,
)
from .phases import ModelTest, per_second

__all__ = ["refuse_if_unsupported", "run_shapes"]


class DynamicShapesRefused(RuntimeError):
    """The target profile says its backend refuses dynamic shapes (its dynamic_refused)."""


def refuse_if_unsupported(test: ModelTest) -> None:
    """fail_to_compile at compile, with the profile's reason, when the target refuses dynamic
    shapes: the test ends (StageFailed) before anything is built."""
    reason = test.target.profile.dynamic_refused
    if reason:
        exc = DynamicShapesRefused(f"target {test.target.name} refuses dynamic shapes (its profile's "
                                   f"dynamic_refused): {reason}")
        test.result.fail("fail_to_compile", "compile", exc)
        raise StageFailed()


def _mark(inputs: dict[str, Any], shape: tuple[int, int], dims: tuple[bool, bool]) -> None:
    """mark_dynamic on dim 0 (batch) and dim 1 (sequence) of each input tensor of that size,
    where `dims` says the dim varies over the test's shapes."""
    for value in inputs.values():
        if not isinstance(value, torch.Tensor):
            continue
        for dim, (size, varies) in enumerate(zip(shape, dims, strict=True)):
            if varies and value.dim() > dim and value.shape[dim] == size:
                torch._dynamo.mark_dynamic(value, dim)


class _Shape:
    """One shape of the test: its inputs, calls and figures."""

    def __init__(self, test: ModelTest, built: Built, index: int, shape: tuple[int, int]):
        self.index, self.shape = index, shape
        if index == 0:
            self.cpu_inputs, self.inputs = built.cpu_inputs, built.inputs
        else:
            self.cpu_inputs, self.inputs = stage(test.result, "build", "fail_to_load",
                                                 lambda: inputs_for_shape(built, *shape, test.target.device))
        self.outputs = self.eager_outputs = None
        self.prepare_s = 0.0
        self.recompiles = self.graphs = 0
        self.figures: dict[str, Any] = {}
        self.acc: dict[str, Any] | None = None

    @property
    def label(self) -> str:
        return f"{self.shape[0]}x{self.shape[1]}"


def run_shapes(test: ModelTest, built: Built) -> None:
    """The dynamic test over every shape of the request, from the built model (module doc)."""
    request, result, target, model = test.request, test.result, test.target, built.model
    if built.own_inputs:
        test.skip("dynamic shapes: a code model's inputs are its own; compatlab makes inputs at other shapes "
                  "only for models it builds inputs for")
    shapes = [_Shape(test, built, i, tuple(s)) for i, s in enumerate(request.shapes)]
    dims = tuple(len({s.shape[d] for s in shapes}) > 1 for d in (0, 1))
    if request.dynamic == "mark":
        for s in shapes:
            _mark(s.inputs, s.shape, dims)

    def eager(s: _Shape):
        with torch.no_grad():
            return model(**s.inputs)

    compiled = stage(result, "compile", "harness_error", lambda: compiler.compile_callable(model, request, target))

    def call(s: _Shape):
        with torch.no_grad():
            return compiled(**s.inputs)

    for s in shapes:
        _first_calls(test, s, eager, call)
    with test.steady():
        for s in shapes:
            s.figures = alternating_steady(lambda s=s: call(s), lambda s=s: eager(s), request.measure, target.sync)
    first = shapes[0]
    result.metrics.update(first.figures)
    result.metrics["tokens_per_s"] = per_second(built.tokens_per_call, result.metrics.get("steady_median_s"))
    result.metrics.update(
        dyn_prepare=json.dumps([s.prepare_s for s in shapes]),
        dyn_steady_median=json.dumps([s.figures.get("steady_median_s") for s in shapes]),
        dyn_eager_steady_median=json.dumps([s.figures.get("eager_steady_median_s") for s in shapes]),
        dyn_recompiles=json.dumps([[s.index, s.recompiles] for s in shapes]),
        dyn_graphs=json.dumps([[s.index, s.graphs] for s in shapes]))
    test.read_memory()
    test.audit(lambda: eager(first))
    test.profile(lambda: call(first))
    again = stage(result, "steady", "fail_to_run", lambda: accuracy.as_vector(_synced(lambda: eager(first), target)))
    if not accuracy.repeatable(first.eager_outputs, again, built.dtype, "forward"):
        accuracy.not_comparable(result, first.eager_outputs, again)
        return
    _compare(test, built, shapes)


def _synced(fn: Any, target: Any) -> Any:
    value = fn()
    target.sync()
    return value


def _first_calls(test: ModelTest, s: _Shape, eager: Any, call: Any) -> None:
    """Shape `s`'s eager first call, then its compiled first call with its figures; the first
    shape's is the test's first call (prepare_s, caches, the capture check)."""
    import time

    result, target = test.result, test.target
    with recorded(result, "prepare", handle=test.eager_call_failed):
        s.eager_outputs = accuracy.as_vector(_synced(lambda: eager(s), target))
    stats = compiler.DynamoStats.snapshot()
    start = time.perf_counter()
    if s.index == 0:
        with test.first_call():
            outputs = _synced(lambda: call(s), target)
        s.prepare_s = result.metrics["prepare_s"]
    else:
        with test.warm_up():  # a recompile's failure is recorded as the first call's is
            outputs = _synced(lambda: call(s), target)
        s.prepare_s = time.perf_counter() - start
    s.outputs = accuracy.as_vector(outputs)
    delta = stats.delta()
    s.recompiles, s.graphs = delta["recompiles"], delta["unique_graphs"]


def _compare(test: ModelTest, built: Built, shapes: list[_Shape]) -> None:
    """Every shape against its CPU reference (float64, float32 when float64 fails); the row's
    verdict is the first failing shape's, else the one with the largest error's."""
    copies: dict[Any, Any] = {}

    def reference(s: _Shape) -> dict[str, Any]:
        def run_at(dtype):
            if dtype not in copies:
                copies[dtype] = cpu_copy(built.model, dtype)
            with torch.inference_mode():
                return accuracy.as_vector(copies[dtype](**reference_inputs(s.cpu_inputs, dtype)))

        return accuracy.reference_with_fallback(
            run_at, lambda value: accuracy.reference_nonfinite(s.outputs, value), test.reference_is_target)

    refs = []
    with test.reference():
        for s in shapes:
            refs.append(reference(s))
    for s, ref in zip(shapes, refs, strict=True):
        if ref["not_measured"] is not None:  # the first shape without a usable reference says why
            test.use_reference(ref)
            return
        s.acc = accuracy.compare(s.outputs, ref["value"], s.eager_outputs, built.dtype, "forward")
    test.result.metrics.update(
        dyn_acc_max_abs_err=json.dumps([s.acc.get("acc_max_abs_err") for s in shapes]),
        dyn_acc_passed=json.dumps([[s.index, int(accuracy.passed(s.acc))] for s in shapes]))
    failing = [s for s in shapes if not accuracy.passed(s.acc)]
    worst = failing[0] if failing else max(shapes, key=lambda s: s.acc.get("acc_max_abs_err") or 0.0)
    test.use_reference(refs[worst.index])
    test.verdict(worst.acc, lambda acc: f"at shape {worst.label}: {accuracy.describe(acc)}")
