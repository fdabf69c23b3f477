"""Issue 3, kind train: K AdamW steps with dropout off, eager and compiled, loss and gradient accuracy.

In-process through child.run_test; compile mode uses aot_eager (never inductor here).
"""

import json

import pytest
import torch
from kind_requests import PERTURB, REFUSING, assert_pass, needs_ctest, on_ctest, run_kind

from compatlab_probe.kinds import train
from compatlab_probe.measure import accuracy
from compatlab_probe.models import factory


def run_train(model_type="llama", mode="eager", steps=3, **extra):
    return run_kind("train", model_type, mode, {"steps": steps}, **extra)


def test_eager_llama_trains_and_matches_the_reference():
    result = run_train("llama")
    assert_pass(result)
    m = result["metrics"]
    assert m["train_steps"] == 3 and m["steady_iters"] == 2
    assert m["train_first_step_s"] == m["prepare_s"] > 0
    assert m["train_steady_step_s"] == m["steady_median_s"] > 0
    assert m["tokens_per_s"] == pytest.approx(8 / m["train_steady_step_s"])
    losses, ref = json.loads(m["train_loss"]), json.loads(m["train_ref_loss"])
    assert len(losses) == len(ref) == 3
    assert losses[2] < losses[0]  # AdamW on a fixed batch lowers the loss
    assert losses == pytest.approx(ref, rel=1e-5)
    assert m["train_grad_cosine"] > 0.99999 and m["train_grad_cosine_last"] > 0.999
    assert m["acc_rule"] == "baseline" and m["ill_conditioned"] == 0 and m["acc_ref_dtype"] == "float64"
    assert m["acc_cosine"] == m["train_grad_cosine"] and m["acc_rmse"] < 1e-4


def test_compiled_llama_trains_with_counters_and_eager_baseline():
    result = run_train("llama", mode="compile")
    assert_pass(result)
    m = result["metrics"]
    assert m["captured_calls"] > 0 and m["unique_graphs"] >= 1
    assert m["eager_steady_median_s"] > 0 and m["steady_iters"] == 2
    assert m["speedup"] == pytest.approx(m["eager_steady_median_s"] / m["steady_median_s"])
    assert m["acc_rule"] == "loss_and_grad"


def test_masked_lm_bert_trains_with_dropout_off():
    result = run_train("bert", steps=2)
    assert_pass(result)
    assert result["metrics"]["train_grad_cosine"] > 0.99999


def test_image_classifier_trains_compiled_without_recompiling_step_two():
    # The classification loss writes config.problem_type on its first call; train settles it
    # beforehand, else that write fails a guard and step 2 recompiles.
    result = run_train("vit", mode="compile", seq_len=32)
    assert_pass(result)
    assert result["metrics"]["unique_graphs"] == 1 and result["metrics"]["tokens_per_s"] is None


def test_perturbing_backend_is_fail_accuracy_at_compare():
    result = run_train("llama", mode="compile", steps=2, backend=PERTURB)
    assert result["status"] == "fail_accuracy" and result["stage"] == "compare", result["error_message"]
    m = result["metrics"]
    assert m["acc_rule"] == "failed"
    assert m["train_grad_cosine"] < m["train_grad_cosine_min"] or \
        m["train_loss_max_abs_err"] > m["acc_atol"]
    assert json.loads(m["train_ref_loss"]) and "grad cosine" in result["status_detail"]


def test_a_backend_refusing_the_graph_is_fail_to_compile():
    result = run_train("llama", mode="compile", steps=1, backend=REFUSING)
    assert result["status"] == "fail_to_compile" and result["stage"] == "compile", result["error_message"]


@needs_ctest
def test_on_the_test_device_backward_and_optimizer_fallbacks_are_named():
    result = run_train("llama", steps=2, **on_ctest())
    assert_pass(result)
    m = result["metrics"]
    assert m["fallback_audit"] == "audited" and m["device_memory_method"] == "ctest_allocator"
    fallen = json.loads(m["fallback_ops"])
    assert "aten::nll_loss_backward" in fallen and "aten::addcdiv_" in fallen  # backward, AdamW
    assert "aten::mm" not in fallen  # whitelisted: a ctest kernel
    assert m["device_peak_bytes"] > 0 and m["acc_rule"] == "loss_and_grad"


def test_a_head_without_a_loss_is_skipped():
    result = run_train("llama", model_class="LlamaModel", steps=1)
    assert result["status"] == "skipped"
    assert "kind train does not apply to base models" in result["status_detail"]


def test_bad_steps_is_harness_error():
    assert run_train("llama", steps=0)["status"] == "harness_error"


def test_dropout_off_zeroes_modules_and_config():
    config = factory.reduce_config("gpt2")
    model = factory.build_model(factory.import_class("gpt2", "GPT2LMHeadModel"), config, torch.float32, 0)
    assert any(isinstance(m, torch.nn.Dropout) and m.p > 0 for m in model.modules())
    assert train.dropout_off(model) > 0
    assert all(m.p == 0 for m in model.modules() if isinstance(m, torch.nn.Dropout))
    assert model.config.resid_pdrop == 0 and model.config.attn_pdrop == 0


def test_train_rule_checks_every_step_and_the_gradient_cosine():
    ok = accuracy.compare_train([2.0, 1.9], [2.0, 1.9001], 0.9999, torch.float32)
    assert ok["acc_rule"] == "loss_and_grad" and accuracy.passed(ok)
    assert not accuracy.passed(accuracy.compare_train([2.0, 1.5], [2.0, 1.9], 0.9999, torch.float32))
    assert not accuracy.passed(accuracy.compare_train([2.0, 1.9], [2.0, 1.9], 0.9, torch.float32))
    assert not accuracy.passed(accuracy.compare_train([2.0, float("nan")], [2.0, 1.9], 1.0, torch.float32))
