"""Issue 3, kind generate: greedy static-cache decoding, eager and compiled, token accuracy.

In-process through child.run_test; compile mode uses aot_eager (never inductor here).
"""

import pytest
import torch
from kind_requests import PERTURB, REFUSING, assert_pass, needs_ctest, on_ctest, run_kind

from compatlab_probe.measure import accuracy


def generate(model_type="llama", mode="eager", new_tokens=4, **extra):
    return run_kind("generate", model_type, mode, {"new_tokens": new_tokens}, **extra)


def test_eager_llama_passes_with_prefill_decode_split_and_matching_tokens():
    result = generate("llama")
    assert_pass(result)
    m = result["metrics"]
    assert m["gen_new_tokens"] == 4
    assert m["prepare_s"] > 0 and m["steady_median_s"] > 0 and m["steady_iters"] >= 2
    # Only signs: comparing two timings measured on a shared machine is flaky.
    assert m["gen_prefill_s"] > 0 and m["gen_decode_token_s"] > 0
    assert m["tokens_per_s"] == pytest.approx(1 / m["gen_decode_token_s"])
    assert m["gen_token_match_rate"] == 1.0 and m["gen_first_divergence"] is None
    # CPU eager is the baseline: the float32-vs-float64 gap, never a verdict (doc/accuracy.md).
    assert m["acc_rule"] == "baseline" and m["ill_conditioned"] == 0 and m["acc_ref_dtype"] == "float64"
    assert m["fallback_audit"] == "not_applicable"
    assert "captured_calls" not in m and "speedup" not in m


def test_compiled_gpt2_compiles_the_decode_step_and_passes():
    result = generate("gpt2", mode="compile")
    assert_pass(result)
    m = result["metrics"]
    assert m["captured_calls"] > 0 and m["unique_graphs"] >= 1 and m["graph_breaks"] == 0
    assert m["eager_steady_median_s"] > 0
    assert m["speedup"] == pytest.approx(m["eager_steady_median_s"] / m["steady_median_s"])
    assert m["gen_token_match_rate"] == 1.0 and m["acc_rule"] == "tokens_match"


def test_encoder_decoder_bart_generates_with_its_decoder():
    result = generate("bart")
    assert_pass(result)
    assert result["model_class"] == "BartForConditionalGeneration"
    assert result["metrics"]["gen_token_match_rate"] == 1.0


def test_perturbing_backend_is_fail_accuracy_at_compare():
    result = generate("llama", mode="compile", backend=PERTURB)
    assert result["status"] == "fail_accuracy" and result["stage"] == "compare", result["error_message"]
    m = result["metrics"]
    assert m["acc_rule"] == "failed" and m["gen_token_match_rate"] < 1.0
    # The prefill runs eagerly (transformers compiles only the decode steps): token 0 matches.
    assert m["gen_first_divergence"] >= 1
    assert m["gen_divergence_logit_gap"] > m["gen_tie_tolerance"]
    assert "first divergence" in result["status_detail"]


def test_a_backend_refusing_the_decode_graph_is_fail_to_compile():
    result = generate("llama", mode="compile", backend=REFUSING)
    assert result["status"] == "fail_to_compile" and result["stage"] == "compile", result["error_message"]
    assert "refuses every graph" in result["error_message"]


@needs_ctest
def test_on_the_test_device_eager_passes_and_compile_is_refused():
    result = generate("llama", **on_ctest())
    assert_pass(result)
    assert result["metrics"]["fallback_audit"] == "audited"
    assert "aten::argmax" in result["metrics"]["fallback_ops"]  # greedy's argmax has no ctest kernel
    result = generate("llama", mode="compile", backend="", **on_ctest())  # the profile's ctest backend
    assert result["status"] == "fail_to_compile" and result["stage"] == "compile"
    assert "UnsupportedOpError" in result["error_message"]


@pytest.mark.parametrize("model_type, head", [("bert", "masked_lm"), ("vit", "image_classification")])
def test_models_without_a_generation_head_are_skipped(model_type, head):
    result = generate(model_type)
    assert result["status"] == "skipped"
    assert result["status_detail"].startswith(f"kind generate does not apply to {head} models")


def test_one_token_in_compile_mode_is_skipped():
    result = generate("llama", mode="compile", new_tokens=1)
    assert result["status"] == "skipped" and "new_tokens >= 2" in result["status_detail"]


def test_bad_new_tokens_is_harness_error():
    assert generate("llama", new_tokens=0)["status"] == "harness_error"


def _scores(rows):
    return [torch.tensor(r, dtype=torch.float64) for r in rows]


def test_token_rule_accepts_near_ties_and_fails_clear_divergences():
    ref = torch.tensor([[1, 2, 0]])
    # Step 1: reference scores for tokens 0..2 are [0.5, 0.9, 1.0]: token 2 won by 0.1.
    scores = [s.unsqueeze(0) for s in _scores([[0, 1, 0], [0.5, 0.9, 1.0], [1, 0, 0]])]
    acc = accuracy.compare_tokens(ref.clone(), ref, scores, torch.float32)
    assert acc["acc_rule"] == "tokens_match" and acc["gen_token_match_rate"] == 1.0
    diverged = torch.tensor([[1, 1, 0]])
    acc = accuracy.compare_tokens(diverged, ref, scores, torch.float32)
    assert acc["acc_rule"] == "failed" and acc["gen_first_divergence"] == 1
    assert acc["gen_divergence_logit_gap"] == pytest.approx(0.1)
    assert acc["gen_token_match_rate"] == pytest.approx(2 / 3)
    tie = [s.unsqueeze(0) for s in _scores([[0, 1, 0], [0.5, 0.99999, 1.0], [1, 0, 0]])]
    acc = accuracy.compare_tokens(diverged, ref, tie, torch.float32)
    assert acc["acc_rule"] == "near_tie" and accuracy.passed(acc)
    assert acc["gen_divergence_logit_gap"] <= acc["gen_tie_tolerance"]
