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

from compatlab_probe import lowering

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
