"""Mode export end to end: a tiny gpt2 forward through each export target (doc/targets.md,
"Mode export and the deployment stacks") by the real binary: export, lower, load, run,
compare, and the row's figures. AOTInductor (a C++ compile of the whole model: minutes
here) runs in `make test-slow` only.
"""

import importlib.util
import json

import pytest

from .conftest import Compatlab

MODEL = "gpt2"
STACKS = {"onnxruntime": "onnxruntime", "openvino": "openvino", "executorch": "executorch"}
MISSING = [m for m in STACKS.values() if importlib.util.find_spec(m) is None]
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"stack packages not installed: {MISSING}")
EXPORT_TARGETS = ("cpu", *STACKS)
STACK_PACKAGES = {"cpu": set(), "onnxruntime": {"onnxruntime", "onnxscript", "onnx", "onnx-ir"},
                  "openvino": {"openvino"}, "executorch": {"executorch", "torchao", "flatbuffers"},
                  "aoti": set()}


def _sweep(compatlab_bin, tmp, targets, modes, timeout):
    cli = Compatlab(compatlab_bin, tmp)
    db = tmp / "store.db"
    cli.sweep("--models", MODEL, "--targets", ",".join(targets), "--modes", ",".join(modes),
              "--kinds", "forward", "--seq-lens", "8", "--jobs", "2", "--db", db, timeout=timeout)
    return cli, db, {(r["target"], r["mode"]): r for r in cli.runs(db)}


@pytest.fixture(scope="module")
def rows(compatlab_bin, tmp_path_factory):
    """{(target, mode): row} of gpt2 forward, modes eager and export, on cpu and each stack."""
    _, _, rows = _sweep(compatlab_bin, tmp_path_factory.mktemp("export"), EXPORT_TARGETS, ("eager", "export"),
                        timeout=600)
    assert len(rows) == 2 * len(EXPORT_TARGETS)
    return rows


def _check_exported_row(row, target):
    where = (target, row["status"], row["status_detail"], row["stage"], row["error_message"][:2000])
    assert row["status"] == "pass", where
    assert row["export_strict"] == 0, where
    for name in ("export_s", "lower_s", "load_s", "artifact_bytes", "steady_median_s", "eager_steady_median_s",
                 "speedup", "tokens_per_s", "build_s"):
        assert row[name] is not None and row[name] > 0, (name, where)
    assert abs(row["prepare_s"] - (row["export_s"] + row["lower_s"] + row["load_s"])) < 1e-6, where
    assert row["acc_rule"] in ("allclose", "rmse_ratio", "cosine") and row["acc_max_abs_err"] < 1e-3, where
    assert row["acc_ref_dtype"] == "float64", where
    assert row["unconverted_ops"] == "", where
    assert set(json.loads(row["stack_versions"])) == STACK_PACKAGES[target], where
    assert "not installed" not in row["stack_versions"], where


def test_gpt2_forward_runs_exported_on_every_export_target(rows):
    for target in EXPORT_TARGETS:
        _check_exported_row(rows[(target, "export")], target)
    assert rows[("cpu", "export")]["fallback_audit"] == "not_applicable"
    assert rows[("onnxruntime", "export")]["fallback_ops"] == ""


def test_executorch_names_the_ops_left_on_portable_kernels(rows):
    row = rows[("executorch", "export")]
    assert row["fallback_audit"] == "partitioner"
    ops = json.loads(row["fallback_ops"])
    assert ops and all(isinstance(n, int) and n > 0 for n in ops.values())
    assert "aten::embedding" in ops  # gather: not among XNNPACK's partitioned ops
    assert "XNNPACK partition(s)" in row["status_detail"]
    assert f"{sum(ops.values())} op node(s) on portable kernels" in row["status_detail"]


def test_export_only_targets_skip_other_modes_and_openvino_says_which_it_takes(rows):
    for target in ("onnxruntime", "executorch"):
        row = rows[(target, "eager")]
        assert row["status"] == "skipped" and row["status_detail"] == "export-only target", row
    row = rows[("openvino", "eager")]
    assert row["status"] == "skipped" and row["status_detail"] == "target openvino takes modes compile, export, not eager"
    assert rows[("cpu", "eager")]["status"] == "pass" and rows[("cpu", "eager")]["stack_versions"] == ""


@pytest.mark.slow
def test_gpt2_forward_runs_through_aotinductor_and_openvino_compile(compatlab_bin, tmp_path):
    _, _, rows = _sweep(compatlab_bin, tmp_path, ("aoti", "openvino"), ("compile", "export"), timeout=1200)
    _check_exported_row(rows[("aoti", "export")], "aoti")
    assert rows[("aoti", "compile")]["status_detail"] == "export-only target"
    compiled = rows[("openvino", "compile")]
    assert compiled["backend"] == "openvino"
    assert compiled["status"] in ("pass", "fail_to_compile"), compiled
