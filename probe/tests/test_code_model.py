"""Own modelling code (code_model.py): the spec, the build in a test child, the hash check,
and the reproduction script's refusals."""

import hashlib
import os
import shutil

import pytest
from kind_requests import assert_pass, run_kind

from compatlab_probe import code_model, repro

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
    assert result["metrics"]["code_files"] == [{"path": path, "sha256": digest}]
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


@pytest.mark.parametrize("kind", ["generate", "train"])
def test_a_code_model_runs_every_model_kind(tmp_path, kind):
    path, digest = _copy(tmp_path)
    result = run_kind(kind, "llama", model_id=f"code:llama_attention.build@{digest[:16]}",
                      model_path=f"{path}:build")
    assert_pass(result)
    assert result["model_class"] == "LlamaForCausalLM"
