"""Own modelling code (code_model.py): the spec, the build in a test child, the hash check,
and the reproduction script's refusals."""

import hashlib
import os
import shutil

import pytest
from kind_requests import assert_pass, run_kind

from compatlab_probe import repro
from compatlab_probe.models import code_model

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "model_code", "llama_attention.py")


def _copy(tmp_path):
    path = tmp_path / "llama_attention.py"
    shutil.copy(EXAMPLE, path)
    return str(path), hashlib.sha256(path.read_bytes()).hexdigest()


def test_split_spec_takes_the_last_colon_and_refuses_the_rest():
    assert code_model.split_spec("/a:b/m.py:build") == ("/a:b/m.py", "build")
    for bad in ("m.py", "m.py:", ":f", "m.py:a-b"):
        with pytest.raises(ValueError):
            code_model.split_spec(bad)


def test_a_code_model_runs_under_its_id_and_records_its_file(tmp_path):
    path, digest = _copy(tmp_path)
    result = run_kind("forward", "llama", model_id=f"code:llama_attention.build@{digest[:16]}",
                      model_path=f"{path}:build")
    assert_pass(result)
    assert result["metrics"]["model_source"] == "code"
    # FILE alone (it imports nothing from its directory): the id keeps FILE's own hash.
    assert result["metrics"]["code_files"] == [{"path": path, "rel": "llama_attention.py", "sha256": digest}]
    assert result["model_class"] == "LlamaForCausalLM"
    # Against the baseline's reference (the stock LlamaForCausalLM, same weights): the changed
    # softmax scale moved the numbers.
    assert result["metrics"]["baseline_ref_class"] == "LlamaForCausalLM"
    assert result["metrics"]["baseline_max_abs_err"] > 1e-4
    assert result["metrics"]["baseline_cosine"] < 0.99999


def test_unchanged_code_matches_its_baseline_reference(tmp_path):
    path, _ = _copy(tmp_path)
    with open(path, encoding="utf-8") as f:
        text = f.read().replace("SCALE = 0.5", "SCALE = 1.0")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    digest = hashlib.sha256(text.encode()).hexdigest()
    result = run_kind("forward", "llama", model_id=f"code:llama_attention.build@{digest[:16]}",
                      model_path=f"{path}:build")
    assert_pass(result)
    assert result["metrics"]["baseline_max_abs_err"] < 1e-4
    assert result["metrics"]["baseline_cosine"] > 0.99999


def test_a_file_changed_since_planning_fails_to_load(tmp_path):
    path, digest = _copy(tmp_path)
    with open(path, "a", encoding="utf-8") as f:
        f.write("\n# edited\n")
    result = run_kind("forward", "llama", model_id=f"code:llama_attention.build@{digest[:16]}",
                      model_path=f"{path}:build")
    assert result["status"] == "fail_to_load"
    assert "changed since it was planned" in result["error_message"]


def test_repro_of_an_imported_code_model_is_refused_and_a_local_one_checks_its_files(tmp_path):
    path, digest = _copy(tmp_path)
    request = {"kind": "forward", "model_id": f"code:llama_attention.build@{digest[:16]}",
               "model_type": "llama", "model_path": f"{path}:build"}
    with pytest.raises(ValueError, match="not ours to run"):
        repro.script(request, {}, trusted=False)
    recorded = {"code_files": f'[{{"path": "{path}", "sha256": "{digest}"}}]'}
    assert repro.code_files(request, recorded) == [[path, digest]]
    assert repro.code_files(request, {}) == [[path, digest[:16]]]
    assert repro.code_files({"model_id": "hf:llama"}, {}) == []
    assert "CODE_FILES = " in repro.script(request, recorded, trusted=True)


@pytest.mark.parametrize("kind, params", [("generate", {"new_tokens": 4}), ("train", {})],
                         ids=["generate", "train"])
def test_a_code_model_runs_every_model_kind(tmp_path, kind, params):
    path, digest = _copy(tmp_path)
    result = run_kind(kind, "llama", kind_params=params, model_id=f"code:llama_attention.build@{digest[:16]}",
                      model_path=f"{path}:build")
    assert_pass(result)
    assert result["model_class"] == "LlamaForCausalLM"


def _tree(tmp_path):
    """model.py importing, from its own directory: a module, a package's module (which imports
    its sibling relatively), and, lazily, another module; plus stdlib, torch and a name found
    nowhere in the tree."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "layers.py").write_text("from . import norms\nfrom .. import above\n")
    (tmp_path / "pkg" / "norms.py").write_text("import math\n")
    (tmp_path / "helper.py").write_text("SCALE = 0.5\n")
    (tmp_path / "lazy.py").write_text("")
    (tmp_path / "unused.py").write_text("")
    (tmp_path / "model.py").write_text(
        "import os\nimport torch\nimport not_installed_anywhere\nfrom helper import SCALE\n"
        "import pkg.layers\n\n\ndef build():\n    from lazy import x\n")
    return tmp_path / "model.py"


def test_code_files_are_the_file_and_what_it_imports_from_its_own_directory(tmp_path):
    files = code_model.code_files(str(_tree(tmp_path)))
    assert [f["rel"] for f in files] == ["helper.py", "lazy.py", "model.py", "pkg/__init__.py",
                                         "pkg/layers.py", "pkg/norms.py"]
    for f in files:
        assert f["path"] == str(tmp_path / f["rel"])
        assert f["sha256"] == hashlib.sha256((tmp_path / f["rel"]).read_bytes()).hexdigest()


def test_the_id_hash_is_the_files_own_alone_else_their_manifests(tmp_path):
    one = [{"path": "/m/a.py", "rel": "a.py", "sha256": "c" * 64}]
    assert code_model.files_digest(one) == "c" * 64
    two = [{"path": "/m/b.py", "rel": "b.py", "sha256": "b" * 64},
           {"path": "/m/a/x.py", "rel": "a/x.py", "sha256": "a" * 64}]
    # The same value as CodeFilesDigest in src/plan/plan_test.cc.
    assert code_model.files_digest(two) == "d928dfe3a1ab3743d8b28b35649b7d00f9161e0b91fb5043a9fdc1be93a8a55e"


def test_an_imported_helper_changed_since_planning_fails_to_load(tmp_path):
    path, _ = _copy(tmp_path)
    wrapper = tmp_path / "wrapper.py"
    wrapper.write_text("from llama_attention import build  # noqa: F401\n")
    digest = code_model.files_digest(code_model.code_files(str(wrapper)))
    with open(path, "a", encoding="utf-8") as f:
        f.write("\n# edited\n")
    result = run_kind("forward", "llama", model_id=f"code:wrapper.build@{digest[:16]}",
                      model_path=f"{wrapper}:build")
    assert result["status"] == "fail_to_load" and result["stage"] == "import"
    assert "llama_attention.py, wrapper.py" in result["error_message"], result["error_message"]
    assert [f["rel"] for f in result["metrics"]["code_files"]] == ["llama_attention.py", "wrapper.py"]


OWN_LOSS = '''
import torch


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x, target=None):
        y = self.proj(x)
        return y if target is None else {"output": y, "loss": torch.nn.functional.mse_loss(y, target)}


def build(batch_size: int = 1, seq_len: int = 2):
    return Layer(), {"x": torch.randn(batch_size, seq_len, 4), "target": torch.randn(batch_size, seq_len, 4)}


def no_target(seq_len: int = 2):
    return Layer(), {"x": torch.randn(1, seq_len, 4)}


def fixed():
    return Layer(), {"x": torch.randn(1, 2, 4)}
'''


def _own_loss(tmp_path):
    path = tmp_path / "own_loss.py"
    path.write_text(OWN_LOSS)
    return str(path), hashlib.sha256(OWN_LOSS.encode()).hexdigest()[:16]


def test_a_function_that_names_the_shape_is_given_the_tests(tmp_path):
    path, _ = _own_loss(tmp_path)
    shape = {"batch_size": 3, "seq_len": 12}
    assert code_model.build(f"{path}:build", 0, shape=shape)[1]["x"].shape == (3, 12, 4)
    assert code_model.build(f"{path}:no_target", 0, shape=shape)[1]["x"].shape == (1, 12, 4)
    assert code_model.build(f"{path}:fixed", 0, shape=shape)[1]["x"].shape == (1, 2, 4)
    assert code_model.build(f"{path}:build", 0)[1]["x"].shape == (1, 2, 4)  # planning: its defaults


def test_train_of_a_code_model_with_its_own_inputs_trains_the_loss_its_forward_returns(tmp_path):
    path, digest = _own_loss(tmp_path)
    result = run_kind("train", "", model_id=f"code:own_loss.build@{digest}", model_path=f"{path}:build")
    assert_pass(result)
    assert result["metrics"]["train_grad_cosine"] > 0.9999
    assert result["metrics"]["tokens_per_s"] is None  # no token inputs
    skipped = run_kind("train", "", model_id=f"code:own_loss.no_target@{digest}",
                       model_path=f"{path}:no_target")
    assert skipped["status"] == "skipped"
    assert "returned no loss for its own inputs" in skipped["status_detail"]


FLEX = os.path.join(os.path.dirname(__file__), "..", "..", "suites", "flex-attention", "flex.py")


def test_a_flex_attention_backward_case_on_the_cpu_is_torchs_own_refusal():
    """The flex-attention suite's backward case on the CPU: torch 2.13 refuses flex_attention
    with gradients there, and the row says so (doc/flex-attention.md)."""
    path = os.path.abspath(FLEX)
    digest = code_model.files_digest(code_model.code_files(path))[:16]
    result = run_kind("train", "", model_id=f"code:flex.causal_d64@{digest}", model_path=f"{path}:causal_d64",
                      kind_params={"steps": 1})
    assert result["status"] == "fail_to_run", (result["status"], result["status_detail"])
    assert result["stage"] == "prepare"
    assert "FlexAttention does not support backward on CPU" in result["error_message"]


def test_a_function_of_the_code_that_torch_compile_inlines_finds_its_globals(tmp_path):
    """dynamo resolves the globals of a function it inlines by importing its module's name:
    the code's private module must be registered (was: ModuleNotFoundError compatlab_code_...,
    every sliding-window and soft-capping case of the flex-attention suite)."""
    import torch

    path = tmp_path / "scaled.py"
    path.write_text("SCALE = 3.0\n\n\ndef scaled(x):\n    return x * SCALE\n")
    scaled = code_model.load_object(f"{path}:scaled")
    out = torch.compile(lambda x: scaled(x) + 1, backend="eager", fullgraph=True)(torch.ones(2))
    assert out.tolist() == [4.0, 4.0]


def test_flex_attention_cases_run_eager_on_the_cpu():
    path = os.path.abspath(FLEX)
    digest = code_model.files_digest(code_model.code_files(path))[:16]
    for case in ("sliding_window_d64", "softcap_d64"):
        result = run_kind("forward", "", model_id=f"code:flex.{case}@{digest}", model_path=f"{path}:{case}")
        assert_pass(result)
        assert result["metrics"]["acc_rule"] == "baseline"
