"""Mode export's lowerings (lowering.py) on small models holding an op a stack cannot take.

The ops come from the stacks' own op lists: aten::logcumsumexp is outside core ATen
(torch's `core` tag, the op set ExecuTorch's edge verifier admits), and OpenVINO's
converter has no rule for it; aten::cumsum is in core ATen but not among the ops the
XNNPACK partitioner takes (its ALL_PARTITIONER_CONFIGS), so ExecuTorch runs it on a
portable kernel. Each test checks the op is named for that target and not the others.
"""

import importlib.util
import json
import pathlib

import pytest
import torch

from compatlab_probe.stacks import lowering

REPO = pathlib.Path(__file__).resolve().parents[2]
STACKS = ("onnxruntime", "openvino", "executorch")
MISSING = [key for key, module in (("onnxruntime", "onnxruntime"), ("openvino", "openvino"),
                                    ("executorch", "executorch")) if importlib.util.find_spec(module) is None]
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"stack packages not installed: {MISSING}")
INPUTS = {"x": torch.randn(4, 8, generator=torch.Generator().manual_seed(0))}


class LogCumSumExp(torch.nn.Module):
    def forward(self, x):
        return (torch.logcumsumexp(x, dim=-1) * 2,)


class LinearCumSum(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        return (torch.cumsum(torch.relu(self.linear(x)), dim=-1),)


def _lowered(module, key, tmp_path):
    """(Lowered, None) or (None, LoweringFailed) for `module` on stack `key`."""
    program, strict = lowering.export_program(module.eval(), INPUTS)
    assert strict is False
    try:
        return lowering.lower(key, program, INPUTS, str(tmp_path / key)), None
    except lowering.LoweringFailed as exc:
        return None, exc


def test_the_ops_come_from_the_stacks_own_op_lists():
    from executorch.backends.xnnpack.partition.config import ALL_PARTITIONER_CONFIGS

    assert torch.Tag.core not in torch.ops.aten.logcumsumexp.default.tags
    assert torch.Tag.core in torch.ops.aten.cumsum.default.tags
    xnnpack = {config.target_name for config in ALL_PARTITIONER_CONFIGS}
    assert "cumsum.default" not in xnnpack and "linear.default" in xnnpack


def test_an_op_a_converter_cannot_take_is_named_unconverted_on_that_stack_only(tmp_path):
    module = LogCumSumExp()
    expected = module(**INPUTS)[0]
    refused = {}
    for key in STACKS:
        lowered, failed = _lowered(module, key, tmp_path)
        if failed is not None:
            refused[key] = failed.ops
            continue
        out = lowered.load()(INPUTS)
        assert torch.allclose(out[0], expected, atol=1e-5), key
        assert not lowered.fallback_ops or "aten::logcumsumexp" not in lowered.fallback_ops
    assert refused == {"openvino": ["aten::logcumsumexp"], "executorch": ["aten::logcumsumexp"]}


def test_an_op_the_partitioner_leaves_out_falls_back_on_executorch_only(tmp_path):
    module = LinearCumSum().eval()
    with torch.no_grad():
        expected = module(**INPUTS)[0]
    fallbacks = {}
    for key in STACKS:
        lowered, failed = _lowered(module, key, tmp_path)
        assert failed is None, (key, failed)
        with torch.no_grad():
            out = lowered.load()(INPUTS)
        assert torch.allclose(out[0], expected, atol=1e-5), key
        fallbacks[key] = lowered.fallback_ops
    assert fallbacks["onnxruntime"] is None and fallbacks["openvino"] is None
    assert fallbacks["executorch"].get("aten::cumsum") == 1
    assert "aten::linear" not in fallbacks["executorch"] and "aten::addmm" not in fallbacks["executorch"]
    assert lowering.fallback_ops_json(fallbacks["executorch"]) == json.dumps(fallbacks["executorch"], sort_keys=True)


def test_converter_reports_give_dispatcher_op_names():
    report = ("Check 'false' failed at src/frontends/common_translators/src/unconverted_ops_report.cpp:151:\n"
              "Model wasn't fully converted.\nSummary:\n-- No conversion rule found for operations: "
              "aten.logcumsumexp.default, aten::diff\n")
    assert lowering.openvino_unconverted_ops(report) == ["aten::diff", "aten::logcumsumexp"]
    assert lowering.op_names("target=torch.ops.aten.add.Tensor") == ["aten::add.Tensor"]
    # torch.onnx.export's ConversionError on a MoE layer (mixtral, qwen3_moe): the failing node is
    # transformers' own custom op, named whatever its namespace.
    onnx = ("Error when translating node %grouped_mm_fallback : [num_users=1] = call_function["
            "target=torch.ops.transformers.grouped_mm_fallback.default](args = (%index_1, %t, %cumsum))\n"
            "No ONNX function found for <OpOverload(op='transformers.grouped_mm_fallback', overload='default')>; "
            "call_function[target=torch.ops.aten.add.Tensor], call_function[target=operator.getitem]")
    assert lowering.fx_target_ops(onnx) == ["aten::add.Tensor", "transformers::grouped_mm_fallback"]


def test_stack_versions_name_each_stacks_installed_packages():
    assert lowering.stack_versions("") == {}
    versions = lowering.stack_versions("onnxruntime")
    assert set(versions) == {"onnxruntime", "onnxscript", "onnx", "onnx-ir"}
    assert versions["onnxruntime"] == importlib.metadata.version("onnxruntime")
    assert set(lowering.stack_versions("executorch")) == {"executorch", "torchao", "flatbuffers"}
    with pytest.raises(ValueError, match="unknown lowering"):
        lowering.lower("tvm", None, {}, "/nonexistent")


def test_every_export_profile_names_a_lowering_the_probe_knows():
    for name in ("onnxruntime", "openvino", "executorch", "aoti"):
        profile = json.loads((REPO / "targets" / f"{name}.json").read_text())
        assert profile["lowering"] in lowering.LOWERINGS and profile["lowering"] == name
        assert profile["pythonpath"] == [] and profile["import"] == [] and profile["setup"] == ""
        assert "export" in profile["modes"]


class LogCumSumExpThenMore(torch.nn.Module):
    """logcumsumexp between ops OpenVINO's partitioner takes (a lone supported op is no
    partition of its own: allows_single_node_partition is off outside its tests)."""

    def forward(self, x):
        y = torch.logcumsumexp(x.relu() * 3 + 1, dim=-1)
        return ((y * 2).relu() + 1,)


def _supported_by_openvino_compile(op: str) -> bool:
    from openvino.frontend.pytorch.torchdynamo.op_support import OperatorSupport

    return op in OperatorSupport({})._support_dict


def _compiled_with_report(module, backend):
    torch._dynamo.reset()
    with lowering.compile_report(backend) as report:
        kwargs = {"options": {"device": "CPU", "config": dict(lowering.OPENVINO_CONFIG)}} if backend == "openvino" else {}
        compiled = torch.compile(module, backend=backend, **kwargs)
        with torch.no_grad():
            out = compiled(**INPUTS)[0]
    return out, report


def test_openvino_compile_names_the_op_its_partitioner_left_to_pytorch_and_inductor_names_none():
    assert not _supported_by_openvino_compile("torch.ops.aten.logcumsumexp.default")
    assert _supported_by_openvino_compile("torch.ops.aten.relu.default")
    module = LogCumSumExpThenMore().eval()
    with torch.no_grad():
        expected = module(**INPUTS)[0]
    out, report = _compiled_with_report(module, "openvino")
    assert torch.allclose(out, expected, atol=1e-5)
    assert report.fallback_ops() == {"aten::logcumsumexp": 1}, report.fallback_ops()
    assert report.partitions == 2 and not report.failures
    assert "2 OpenVINO partition(s), 1 op node(s) left to PyTorch" in report.detail()
    # cumsum is among the ops it takes: nothing left (ExecuTorch's XNNPACK leaves it out).
    _, whole = _compiled_with_report(LinearCumSum().eval(), "openvino")
    assert whole.fallback_ops() == {} and whole.partitions == 1
    # A backend without such a report says nothing (the CPU-fallback audit speaks for it).
    _, inductor = _compiled_with_report(module, "aot_eager")
    assert inductor.fallback_ops() is None and inductor.detail() == ""


def test_a_graph_openvinos_backend_gives_up_on_is_named_whole_as_handed_to_inductor(monkeypatch):
    """The backend catches any failure of its own and compiles the graph with inductor
    instead, saying so only in a debug log; the report names every op of that graph."""
    from openvino.frontend.pytorch.torchdynamo import partition

    def planted(self, graph_module, options):
        raise RuntimeError("planted partitioner failure")

    monkeypatch.setattr(partition.Partitioner, "make_partitions", planted)
    module = LinearCumSum().eval()
    with torch.no_grad():
        expected = module(**INPUTS)[0]
    out, report = _compiled_with_report(module, "openvino")
    assert torch.allclose(out, expected, atol=1e-5)
    assert report.failures == ["RuntimeError: planted partitioner failure"]
    assert report.partitions == 0
    left = report.fallback_ops()
    assert any("cumsum" in op for op in left) and any("relu" in op for op in left), left
    assert "handed them to inductor (RuntimeError: planted partitioner failure)" in report.detail()
    # The report undoes its patches when it closes.
    assert partition.Partitioner.make_partitions is planted
