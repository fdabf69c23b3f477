"""Issue 10, part 1: verdicts that blame the right party (doc/accuracy.md).

A failed reference falls back to float32 and says so (or is "not measured: reference
equals target" when float32 on the CPU in eager mode is the test itself); fail_accuracy
always carries the numbers that decided it; outputs that cannot be compared get a reason;
CPU eager rows are the baseline (acc_rule "baseline", ill_conditioned). The planted
faults poison the float64 reference through a forward hook on its CPU copy.
"""

import pytest
import torch
from kind_requests import assert_pass, run_kind

from compatlab_probe.kinds import forward
from compatlab_probe.measure import accuracy


def _poison_float64(monkeypatch, poison):
    """forward's reference copies in float64 get `poison(logits)` applied to their output."""
    real = forward.cpu_copy

    def cpu_copy(model, dtype=None):
        ref = real(model, dtype)
        if dtype == torch.float64:
            def hook(module, args, output):
                output.logits = poison(output.logits)
                return output
            ref.register_forward_hook(hook)
        return ref

    monkeypatch.setattr(forward, "cpu_copy", cpu_copy)


def _nan_at_first_row(logits):
    logits = logits.clone()
    logits[..., 0, :] = float("nan")
    return logits


def test_a_nan_reference_on_cpu_eager_is_not_measured_reference_equals_target(monkeypatch):
    _poison_float64(monkeypatch, _nan_at_first_row)
    result = run_kind("forward", "llama")
    assert_pass(result)
    m = result["metrics"]
    assert m["acc_rule"] is None and m["acc_not_measured"] == "reference_equals_target"
    assert m["acc_ref_fallback"].startswith("float64 non-finite at ") and "where the target is finite" in m["acc_ref_fallback"]
    assert result["status_detail"].startswith("accuracy not measured: reference equals target")


def test_a_nan_reference_in_compile_mode_falls_back_to_float32_and_says_so(monkeypatch):
    _poison_float64(monkeypatch, _nan_at_first_row)
    result = run_kind("forward", "llama", mode="compile")
    assert_pass(result)
    m = result["metrics"]
    assert m["acc_ref_dtype"] == "float32" and m["acc_rule"] == "allclose"
    assert "non-finite" in m["acc_ref_fallback"] and not m.get("acc_not_measured")


def test_a_reference_whose_output_size_differs_is_not_comparable(monkeypatch):
    _poison_float64(monkeypatch, lambda logits: logits[..., :-1, :])
    result = run_kind("forward", "llama")
    assert_pass(result)
    m = result["metrics"]
    assert m["acc_rule"] is None and m["acc_not_measured"] == "sizes_differ"
    assert "output's size depends on its values" in result["status_detail"]


def test_cpu_eager_is_the_baseline_and_marks_an_ill_conditioned_gap(monkeypatch):
    plain = run_kind("forward", "llama")
    assert_pass(plain)
    assert plain["metrics"]["acc_rule"] == "baseline" and plain["metrics"]["ill_conditioned"] == 0
    assert plain["metrics"]["acc_rmse"] is not None and plain["metrics"]["acc_cosine"] > 0.999
    _poison_float64(monkeypatch, lambda logits: -logits)  # float64 "picks" the opposite answer
    result = run_kind("forward", "llama")
    assert_pass(result)  # never fail_accuracy: the model's conditioning, not eager CPU's fault
    m = result["metrics"]
    assert m["acc_rule"] == "baseline" and m["ill_conditioned"] == 1 and m["acc_cosine"] < 0
    assert result["status_detail"].startswith("ill-conditioned")


def test_comparison_rules_for_failed_references_and_uncomparable_outputs():
    ref = torch.linspace(-1, 1, 100, dtype=torch.float64)
    # A target non-finite where the reference is finite fails, with the numbers.
    bad = ref.clone()
    bad[3] = float("nan")
    acc = accuracy.compare(bad, ref, None, torch.float32)
    assert acc["acc_rule"] == "failed" and acc["acc_nonfinite"] == 1
    assert acc["acc_max_abs_err"] == 0.0 and acc["acc_cosine"] == pytest.approx(1.0)
    assert "1 non-finite value(s)" in accuracy.describe(acc) and "n/a" not in accuracy.describe(acc)
    # The same -inf on both sides (an attention mask) agrees.
    masked, target = ref.clone(), ref.clone()
    masked[5] = target[5] = float("-inf")
    assert accuracy.compare(target, masked, None, torch.float32)["acc_rule"] == "allclose"
    assert accuracy.reference_nonfinite(ref, masked) == 1 and accuracy.reference_nonfinite(target, masked) == 0
    # Sizes that differ from the reference's: not comparable; from the eager run's: failed.
    acc = accuracy.compare(ref[:-1], ref, None, torch.float32)
    assert acc["acc_rule"] is None and acc["acc_not_measured"] == "sizes_differ"
    acc = accuracy.compare(ref[:-1], ref, ref, torch.float32)
    assert acc["acc_rule"] == "failed" and "99 values, its eager run at the same precision 100" \
        in accuracy.describe(acc)
    none = accuracy.compare({"ids": torch.arange(3)}, {"ids": torch.arange(3)}, None, torch.float32)
    assert none["acc_not_measured"] == "no_float_output"
    assert set(accuracy.NOT_MEASURED) >= {"reference_equals_target", "sizes_differ", "no_float_output",
                                          "random_output", "reference_failed"}


def test_reference_fallback_order():
    def run_at(values):
        return lambda dtype: values[accuracy.dtype_name(dtype)]

    def count(value):
        return int(torch.isnan(value).sum())

    good, nan = torch.zeros(3), torch.tensor([0.0, float("nan"), float("nan")])
    ok = accuracy.reference_with_fallback(run_at({"float64": good}), count, lambda d: False)
    assert ok["dtype"] == "float64" and ok["fallback"] == "" and ok["not_measured"] is None
    fell = accuracy.reference_with_fallback(run_at({"float64": nan, "float32": good}), count, lambda d: False)
    assert fell["dtype"] == "float32" and fell["fallback"] == "float64 non-finite at 2 value(s) where the " \
        "target is finite"
    same = accuracy.reference_with_fallback(run_at({"float64": nan}), count, lambda d: d == "float32")
    assert same["value"] is None and same["not_measured"] == "reference_equals_target"
    both = accuracy.reference_with_fallback(run_at({"float64": nan, "float32": nan}), count, lambda d: False)
    assert both["not_measured"] == "reference_failed" and "float32 non-finite at 2" in both["fallback"]

    def raising(dtype):
        if dtype == torch.float64:
            raise RuntimeError("no float64 kernel")
        return good

    raised = accuracy.reference_with_fallback(raising, count, lambda d: False)
    assert raised["dtype"] == "float32" and raised["fallback"].startswith("float64 raised RuntimeError")
