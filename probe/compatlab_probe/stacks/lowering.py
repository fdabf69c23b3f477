"""Mode export's lowerings (doc/targets.md, "Mode export"): a profile names one by key
(`"lowering": "onnxruntime"`), and this module maps the key to code. A profile never
carries Python for it.

    program, strict = export_program(module, inputs)       # torch.export, non-strict first
    lowered = lower(key, program, inputs, workdir)          # LoweringFailed names unconverted ops
    call = lowered.load()                                   # the runtime, ready
    outputs = call(inputs)                                  # a tuple of CPU tensors

Keys: "" (the exported program itself, saved and loaded again with torch.export: target
cpu), "onnxruntime" (torch.onnx.export(dynamo=True), ONNX Runtime's CPU provider),
"openvino" (OpenVINO's converter, its CPU plugin in float32), "executorch"
(to_edge_transform_and_lower with the XNNPACK partitioner, the ExecuTorch runtime;
op nodes left on the portable kernels are the fallback ops), "aoti" (AOTInductor:
aoti_compile_and_package, aoti_load_package).

Mode compile on a stack's torch.compile backend (openvino) has its own report of what it
left to PyTorch: `compile_report(backend)` (OpenVinoCompileReport: the partitioner's
output, and the graphs the backend gave up on and handed to inductor).
"""

from __future__ import annotations

import collections
import importlib.metadata
import inspect
import json
import os
import re
from collections.abc import Callable
from typing import Any

# The packages whose versions identify each lowering's stack (stack_versions).
STACK_PACKAGES: dict[str, tuple[str, ...]] = {
    "": (),
    "onnxruntime": ("onnxruntime", "onnxscript", "onnx", "onnx-ir"),
    "openvino": ("openvino",),
    "executorch": ("executorch", "torchao", "flatbuffers"),
    "aoti": (),
}
LOWERINGS = tuple(STACK_PACKAGES)
# The torch.compile backends whose registration lives in a stack's package.
COMPILE_BACKEND_MODULES = {"openvino": "openvino.torch"}
# OpenVINO's CPU plugin runs float32 models in bf16/f16 where the CPU has such units unless told.
OPENVINO_CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}
# An op name in a converter's report: aten::cumsum, aten.cumsum.default, aten::add.Tensor.
_OP_NAME = re.compile(r"\b(aten|prims|quantized)(?:::|\.)([A-Za-z0-9_]+)(?:\.([A-Za-z0-9_]+))?")
_NOT_CORE_ATEN = re.compile(r"Operator (?:torch\._ops\.)?(\S+) is not in Core ATen opset")
# The node an FX-graph converter failed on: an aten/prims op, or a custom op of any namespace
# under torch.ops (transformers' own `transformers.grouped_mm_fallback` in its MoE layers).
_FX_TARGET = re.compile(r"target=(?:torch\.ops\.([A-Za-z_]\w*)|(aten|prims))\.(\w+)(?:\.(\w+))?")


class LoweringFailed(Exception):
    """A converter refused the program; `ops` are the op names its own report gave."""

    def __init__(self, message: str, ops: list[str]):
        super().__init__(message)
        self.ops = ops


def stack_versions(key: str) -> dict[str, str]:
    """{package: version} of the lowering's stack ("not installed" for a missing one)."""
    versions = {}
    for package in STACK_PACKAGES.get(key, ()):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions


class LogitsModule:
    """Builds the export wrapper of a transformers model: keyword inputs in, its tensor
    outputs out as a tuple (no cache: use_cache=False where the forward takes it)."""

    @staticmethod
    def wrap(model: Any) -> Any:
        import torch

        takes_cache = "use_cache" in inspect.signature(model.forward).parameters

        class Exported(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, **inputs):
                extra = {"use_cache": False} if takes_cache else {}
                return tensors_of(self.inner(**inputs, **extra))

        return Exported(model).eval()


def tensors_of(output: Any) -> tuple[Any, ...]:
    """The tensors of a model output (ModelOutput, tuple, tensor) in order, as a tuple."""
    import torch

    if isinstance(output, torch.Tensor):
        return (output,)
    if hasattr(output, "values") and callable(output.values):
        values = list(output.values())
    else:
        values = list(output)
    return tuple(v for v in values if isinstance(v, torch.Tensor))


def export_program(module: Any, inputs: dict[str, Any]) -> tuple[Any, bool]:
    """(torch.export's program, strict): non-strict first, strict only when it fails; when
    both fail the non-strict error is raised (the strict one chained to it)."""
    import torch

    try:
        return torch.export.export(module, (), kwargs=inputs, strict=False), False
    except Exception as first:  # noqa: BLE001 - strict is the second try
        try:
            return torch.export.export(module, (), kwargs=inputs, strict=True), True
        except Exception as second:  # noqa: BLE001
            raise first from second


class Lowered:
    """A lowered program: its artifact on disk, what fell back, and how to load it."""

    def __init__(self, artifact_paths: list[str], load: Callable[[], Callable[[dict[str, Any]], Any]],
                 fallback_ops: dict[str, int] | None = None, detail: str = ""):
        self.artifact_bytes = sum(os.path.getsize(p) for p in artifact_paths if os.path.exists(p))
        self.fallback_ops = fallback_ops
        self.detail = detail
        self._load = load

    def load(self) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
        call = self._load()
        return lambda inputs: tensors_of(call(inputs))


def lower(key: str, program: Any, inputs: dict[str, Any], workdir: str) -> Lowered:
    """The program lowered onto the stack `key`; LoweringFailed when its converter names ops."""
    if key not in STACK_PACKAGES:
        raise ValueError(f"unknown lowering {key!r} (known: {', '.join(repr(k) for k in LOWERINGS)})")
    os.makedirs(workdir, exist_ok=True)
    return {"": _eager, "onnxruntime": _onnxruntime, "openvino": _openvino, "executorch": _executorch,
            "aoti": _aoti}[key](program, inputs, workdir)


def _eager(program: Any, inputs: dict[str, Any], workdir: str) -> Lowered:
    import torch

    path = os.path.join(workdir, "program.pt2")
    torch.export.save(program, path)

    def load():
        module = torch.export.load(path).module()
        return lambda x: module(**x)

    return Lowered([path], load)


def _chain_text(exc: BaseException) -> str:
    parts, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        parts.append(str(exc))
        exc = exc.__cause__ or exc.__context__
    return "\n".join(parts)


def _onnxruntime(program: Any, inputs: dict[str, Any], workdir: str) -> Lowered:
    import torch

    path = os.path.join(workdir, "model.onnx")
    try:
        onnx_program = torch.onnx.export(program, (), kwargs=inputs, dynamo=True, verbose=False)
    except torch.onnx.errors.OnnxExporterError as exc:
        ops = fx_target_ops(_chain_text(exc))
        if ops:
            raise LoweringFailed(f"torch.onnx.export cannot convert {', '.join(ops)}: {exc}"[:4000], ops) from exc
        raise
    onnx_program.save(path)
    paths = [os.path.join(workdir, name) for name in os.listdir(workdir)]

    def load():
        import onnxruntime

        session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        return lambda x: [torch.from_numpy(o) for o in session.run(None, {n: x[n].numpy() for n in names})]

    return Lowered(paths, load)


def op_names(text: str) -> list[str]:
    """The op names in a converter's report, as the dispatcher writes them (aten::cumsum,
    aten::add.Tensor: ".default" dropped), sorted, each once."""
    names = set()
    for namespace, op, overload in _OP_NAME.findall(text):
        names.add(f"{namespace}::{op}" + (f".{overload}" if overload and overload != "default" else ""))
    return sorted(names)


def fx_target_ops(text: str) -> list[str]:
    """The ops of the FX nodes a converter's report names (`target=torch.ops.NS.op.overload`),
    as the dispatcher writes them (NS::op, ".default" dropped), sorted, each once."""
    names = set()
    for custom, builtin, op, overload in _FX_TARGET.findall(text):
        names.add(f"{custom or builtin}::{op}" + (f".{overload}" if overload and overload != "default" else ""))
    return sorted(names)


def openvino_unconverted_ops(message: str) -> list[str]:
    """The op names of an OpenVINO conversion failure's own report ("No conversion rule
    found for operations: aten.diff.default, ..."; "-- aten::x with a message: ...")."""
    report = message.split("Summary:", 1)[-1]
    return op_names(report)


def _openvino(program: Any, inputs: dict[str, Any], workdir: str) -> Lowered:
    import openvino
    import torch

    try:
        model = openvino.convert_model(program)
    except Exception as exc:
        ops = openvino_unconverted_ops(str(exc)) if type(exc).__name__ == "OpConversionFailure" else []
        if ops:
            raise LoweringFailed(f"OpenVINO cannot convert {', '.join(ops)}: {exc}"[:4000], ops) from exc
        raise
    xml = os.path.join(workdir, "model.xml")
    openvino.save_model(model, xml, compress_to_fp16=False)

    def load():
        compiled = openvino.Core().compile_model(model, "CPU", OPENVINO_CONFIG)
        order = list(inputs)
        return lambda x: [torch.from_numpy(v) for v in compiled([x[k].numpy() for k in order]).values()]

    return Lowered([xml, xml[:-4] + ".bin"], load)


def executorch_fallback_ops(graph_module: Any) -> tuple[int, dict[str, int]]:
    """(XNNPACK partitions, {op name: nodes}) of a lowered edge program: every call outside
    a delegate runs on ExecuTorch's portable kernels."""
    import operator

    partitions, ops = 0, collections.Counter()
    for node in graph_module.graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem:
            continue
        name = _edge_op_name(node.target)
        if name == "executorch_call_delegate":
            partitions += 1
        else:
            ops[name] += 1
    return partitions, dict(sorted(ops.items()))


def _edge_op_name(target: Any) -> str:
    op = getattr(target, "_op", target)  # an EdgeOpOverload wraps the aten overload
    name = getattr(op, "name", None)
    if callable(name):
        try:
            text = name()  # "aten::cumsum" (+ ".overload") for an OpOverload
            overload = getattr(op, "_overloadname", "")
            return text if not overload or overload == "default" or "." in text else f"{text}.{overload}"
        except Exception:  # noqa: BLE001 - fall back to the str form
            pass
    # An op without an overload packet (scalar_tensor): the first op name in its str form.
    match = _OP_NAME.search(str(target))
    if match:
        return op_names(match.group(0))[0]
    return getattr(target, "__name__", None) or str(target)


def _executorch(program: Any, inputs: dict[str, Any], workdir: str) -> Lowered:
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    try:
        edge = to_edge_transform_and_lower(program, partitioner=[XnnpackPartitioner()])
    except Exception as exc:
        # The edge dialect's verifier: an op outside core ATen has no ExecuTorch kernel.
        ops = op_names(" ".join(_NOT_CORE_ATEN.findall(str(exc)))) if type(exc).__name__ == "SpecViolationError" \
            else []
        if ops:
            raise LoweringFailed(f"ExecuTorch cannot lower {', '.join(ops)}: {exc}"[:4000], ops) from exc
        raise
    partitions, fallback = executorch_fallback_ops(edge.exported_program().graph_module)
    path = os.path.join(workdir, "model.pte")
    with open(path, "wb") as f:
        f.write(edge.to_executorch().buffer)

    def load():
        from executorch.runtime import Runtime

        method = Runtime.get().load_program(path).load_method("forward")
        order = list(inputs)
        return lambda x: method.execute([x[k] for k in order])

    detail = (f"executorch: {partitions} XNNPACK partition(s), {sum(fallback.values())} op node(s) on "
              f"portable kernels (fallback_ops)")
    return Lowered([path], load, fallback, detail)


def _aoti(program: Any, inputs: dict[str, Any], workdir: str) -> Lowered:
    import torch

    path = torch._inductor.aoti_compile_and_package(program, package_path=os.path.join(workdir, "model.pt2"))

    def load():
        runner = torch._inductor.aoti_load_package(path)
        return lambda x: runner(**x)

    return Lowered([path], load)


class CompileReport:
    """What a torch.compile backend left to PyTorch, from the backend's own report; this
    base is a backend without one (inductor, aot_eager, a test backend): nothing to say."""

    def __enter__(self) -> CompileReport:
        return self

    def __exit__(self, *exc_info: Any) -> bool:
        return False

    def fallback_ops(self) -> dict[str, int] | None:
        return None

    def detail(self) -> str:
        return ""


class OpenVinoCompileReport(CompileReport):
    """OpenVINO's torch.compile backend (openvino.frontend.pytorch.torchdynamo): its
    Partitioner fuses the ops OpenVINO supports into `fused_N` submodules that OpenVINO
    runs; every op node left outside them runs in PyTorch. When the backend fails on a
    graph it logs at debug level and hands the whole graph to inductor (compile_fx): then
    every op of that graph ran off OpenVINO. Both are read from the backend itself, while
    this context is open (the child compiles once, so patching its classes is local)."""

    def __init__(self) -> None:
        self.partitions = 0
        self.left: collections.Counter[str] = collections.Counter()
        self.failures: list[str] = []
        self._undo: list[Callable[[], None]] = []

    def __enter__(self) -> OpenVinoCompileReport:
        import operator
        import sys

        from openvino.frontend.pytorch.torchdynamo import backend, partition

        make_partitions, compile_fx = partition.Partitioner.make_partitions, backend.compile_fx

        def partitioned(partitioner: Any, graph_module: Any, options: Any) -> Any:
            fused = make_partitions(partitioner, graph_module, options)
            for node in fused.graph.nodes:
                if node.op == "call_module" and "fused_" in node.name:
                    self.partitions += 1
                elif node.op == "call_function" and node.target is not operator.getitem:
                    self.left[_edge_op_name(node.target)] += 1
            return fused

        def handed_to_inductor(graph_module: Any, example_inputs: Any) -> Any:
            # Called from the backend's `except Exception` block: the exception is current.
            exc = sys.exc_info()[1]
            self.failures.append(f"{type(exc).__name__}: {exc}"[:300] if exc else "unknown")
            for node in graph_module.graph.nodes:
                if node.op in ("call_function", "call_method") and node.target is not operator.getitem:
                    self.left[_graph_op_name(node)] += 1
            return compile_fx(graph_module, example_inputs)

        partition.Partitioner.make_partitions = partitioned
        backend.compile_fx = handed_to_inductor
        self._undo = [lambda: setattr(partition.Partitioner, "make_partitions", make_partitions),
                      lambda: setattr(backend, "compile_fx", compile_fx)]
        return self

    def __exit__(self, *exc_info: Any) -> bool:
        for undo in self._undo:
            undo()
        self._undo = []
        return False

    def fallback_ops(self) -> dict[str, int] | None:
        return dict(sorted(self.left.items()))

    def detail(self) -> str:
        text = (f"openvino: {self.partitions} OpenVINO partition(s), {sum(self.left.values())} op node(s) "
                f"left to PyTorch (fallback_ops)")
        if self.failures:
            text += (f"; the backend failed on {len(self.failures)} graph(s) and handed them to inductor "
                     f"({self.failures[0]})")
        return text


def compile_report(backend: str | None) -> CompileReport:
    """The report of what `backend` (a torch.compile backend's name, None in eager mode) left
    to PyTorch: OpenVinoCompileReport for "openvino", else a report with nothing to say."""
    return OpenVinoCompileReport() if backend == "openvino" else CompileReport()


def compile_stack(backend: str | None) -> str | None:
    """The lowering key whose stack a torch.compile backend (its name) belongs to ("openvino"),
    else None."""
    return backend if backend in COMPILE_BACKEND_MODULES else None


def _graph_op_name(node: Any) -> str:
    """An op of a dynamo graph (torch-level): "aten::..." where the target is an op
    overload, else torch's own name ("torch.cumsum", "Tensor.view")."""
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    target = node.target
    if _OP_NAME.search(str(target)):
        return _edge_op_name(target)
    module = getattr(target, "__module__", None) or "torch"
    name = getattr(target, "__name__", None) or str(target)
    return f"{module}.{name}" if module not in ("builtins", "_operator") else name


def fallback_ops_json(ops: dict[str, int] | None) -> str | None:
    return json.dumps(ops, sort_keys=True) if ops is not None else None
