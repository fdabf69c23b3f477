"""`python -m compatlab_probe.models.catalog` and local checkpoints through model_path."""

import json
import os
import subprocess
import sys

import pytest

from compatlab_probe.models import factory
from compatlab_probe.worker.child import run_test

PROBE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_module(*args):
    env = dict(os.environ, PYTHONPATH=PROBE_DIR)
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, env=env, timeout=120)


def test_catalog_lists_every_model_type_with_llama_causal_lm():
    proc = run_module("compatlab_probe.models.catalog")
    assert proc.returncode == 0, proc.stderr
    catalog = json.loads(proc.stdout)
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    assert set(catalog["models"]) == set(CONFIG_MAPPING_NAMES)
    llama = catalog["models"]["llama"]
    assert {k: v for k, v in llama.items() if k != "head_classes"} == {
        "config_class": "LlamaConfig", "head_class": "LlamaForCausalLM", "head_kind": "causal_lm",
        "modality": "text"}
    # Every head class of the type (--heads all), the rule's first.
    assert llama["head_classes"][0] == "LlamaForCausalLM"
    assert "LlamaForSequenceClassification" in llama["head_classes"]
    assert catalog["models"]["vit"]["modality"] == "vision"
    assert catalog["models"]["whisper"]["modality"] == "audio"
    assert catalog["transformers_version"] and catalog["torch_version"]


def test_catalog_rejects_a_directory_without_checkpoint(tmp_path):
    proc = run_module("compatlab_probe.models.catalog", "--model-path", str(tmp_path))
    assert proc.returncode == 2
    assert "error" in json.loads(proc.stdout)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny-llama")
    config = factory.reduce_config("llama")
    cls = factory.import_class("llama", "LlamaForCausalLM")
    factory.build_model(cls, config, dtype=__import__("torch").float32, seed=1).save_pretrained(path)
    return str(path)


def test_catalog_describes_a_checkpoint(checkpoint):
    proc = run_module("compatlab_probe.models.catalog", "--model-path", checkpoint)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"checkpoint": {"model_type": "llama", "head_class": "LlamaForCausalLM",
                                                      "head_kind": "causal_lm", "custom_code": False}}


def test_checkpoint_runs_through_model_path_with_run_one(checkpoint):
    request = {"kind": "forward", "model_id": "ckpt:x", "model_type": "", "model_path": checkpoint,
               "target": "cpu", "mode": "eager", "dtype": "float32", "batch_size": 1, "seq_len": 8,
               "measure": {"warmup": 1, "min_iters": 2, "min_time_s": 0.0}}
    env = dict(os.environ, PYTHONPATH=PROBE_DIR)
    proc = subprocess.run([sys.executable, "-m", "compatlab_probe.worker.run_one"], input=json.dumps(request),
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "pass", result["error_message"]
    assert result["model_class"] == "LlamaForCausalLM"
    assert result["metrics"]["param_count"] == sum(
        p.numel() for p in factory.build_model(
            factory.import_class("llama", "LlamaForCausalLM"), factory.reduce_config("llama"),
            __import__("torch").float32, 0).parameters())


def test_checkpoint_with_unknown_class_is_fail_to_load(checkpoint):
    result = run_test({"kind": "forward", "model_path": checkpoint, "model_class": "NoSuchModel",
                       "measure": {"warmup": 0, "min_iters": 1, "min_time_s": 0.0}})
    assert result["status"] == "fail_to_load" and result["stage"] == "import"
