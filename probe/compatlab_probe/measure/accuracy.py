"""Accuracy against a CPU reference (doc/accuracy.md).

The reference is the same model, weights and inputs on the CPU in eager
float64 (float32 where an op has no float64 kernel). The verdict follows from
raw numbers, which are all stored (the acc_* metrics):

  1. allclose(target, ref, atol, rtol)                          -> "allclose"
  2. rmse(target, ref) <= multiplier * rmse(eager, ref) + atol/10 -> "rmse_ratio"
     (PyTorch's benchmark harness rule; `eager` is the eager run in the
     target's dtype that the target run is judged against)
  3. cosine(target, ref) >= COSINE_MIN                           -> "cosine"
  otherwise                                                     -> "failed"

Outputs are compared flattened: every floating tensor of the output (nested
tuples, dicts, ModelOutput), in order, concatenated. Positions where both are the
same non-finite value (-inf masks) agree; the numbers are computed over the
positions where both are finite; a target value non-finite where the reference
is not is counted (acc_nonfinite) and fails.

The reference itself can fail: float64 raising, or non-finite where the target is
finite (`reference_nonfinite`). `reference_with_fallback` then falls back to float32
(acc_ref_fallback says why), unless float32 on the CPU in eager mode is the target's
own computation: then accuracy is "not measured: reference equals target". A CPU
eager row (the test *is* the reference device) gets acc_rule "baseline": its
float32-vs-float64 gap, ill_conditioned when the gap fails the kind's rule.
Why accuracy was not measured is acc_not_measured (NOT_MEASURED).

Kind generate compares greedy tokens (compare_tokens: "tokens_match", "near_tie"
or "failed"), kind train the loss trajectory and first-step gradient cosine
(compare_train: "loss_and_grad" or "failed"); both use the (dtype, kind) rows of
TOLERANCES, train also GRAD_COSINE_MIN.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..protocol.result import is_out_of_memory

if TYPE_CHECKING:
    from ..protocol.result import Result

COSINE_MIN = 0.99

# Why accuracy was not measured (acc_not_measured): the reason codes and their
# sentences (doc/accuracy.md, "Not measured"). The test's own status stands.
NOT_MEASURED = {
    "reference_equals_target": "reference equals target (the float64 reference failed and its float32 "
                               "fallback on the CPU in eager mode is the test's own computation)",
    "reference_failed": "the CPU reference failed",
    "random_output": "the output is random (two eager calls on the same inputs differ)",
    "sizes_differ": "the output's size depends on its values and the reference's differs",
    "no_float_output": "the output has no floating-point tensor to compare",
    "degenerate_reference": "the reference is degenerate (fewer than DEGENERATE_DISTINCT distinct tokens in a long "
                            "output: a looping model, whose match says nothing)",
    "not_learning": "not learning (the float64 reference's final loss is not below LEARNING_DROP of its first: "
                    "the learning rule would judge noise)",
}

# (dtype, kind) -> (atol, rtol, multiplier). Pinned: a change here changes verdicts,
# so it goes with a note in doc/accuracy.md. The multiplier is PyTorch's harness
# value (2 for float32/float64, 3 for the half types); tolerances follow its
# per-dtype defaults, looser for train (several optimizer steps compound errors).
TOLERANCES = {
    ("float64", "forward"): (1e-7, 1e-7, 2.0),
    ("float32", "forward"): (1e-4, 1e-4, 2.0),
    ("bfloat16", "forward"): (1e-2, 1e-2, 3.0),
    ("float16", "forward"): (1e-3, 1e-3, 3.0),
    ("float64", "generate"): (1e-7, 1e-7, 2.0),
    ("float32", "generate"): (1e-4, 1e-4, 2.0),
    ("bfloat16", "generate"): (1e-2, 1e-2, 3.0),
    ("float16", "generate"): (1e-3, 1e-3, 3.0),
    ("float64", "train"): (1e-5, 1e-5, 2.0),
    ("float32", "train"): (1e-3, 1e-3, 2.0),
    ("bfloat16", "train"): (5e-2, 5e-2, 3.0),
    ("float16", "train"): (1e-2, 1e-2, 3.0),
}


def dtype_name(dtype: Any) -> str:
    """"float32" for torch.float32 or "float32"; other names as str(dtype) without "torch."."""
    return str(dtype).replace("torch.", "")


def tolerance(dtype: Any, kind: str = "forward") -> tuple[float, float, float]:
    """(atol, rtol, multiplier) for a dtype (torch dtype or name) and kind."""
    name = dtype_name(dtype)
    for key in ((name, kind), (name, "forward"), ("float32", kind)):
        if key in TOLERANCES:
            return TOLERANCES[key]
    return TOLERANCES[("float32", "forward")]


def flatten(output: Any) -> list[Any]:
    """The floating tensors of a model output, in order: tensors, lists/tuples, dicts, ModelOutput."""
    import torch

    found = []

    def walk(obj, depth=0):
        if depth > 8 or obj is None:
            return
        if isinstance(obj, torch.Tensor):
            if obj.is_floating_point() or obj.is_complex():
                found.append(obj)
        elif isinstance(obj, dict):  # ModelOutput is an OrderedDict of its set fields
            for value in obj.values():
                walk(value, depth + 1)
        elif isinstance(obj, (list, tuple)):
            for value in obj:
                walk(value, depth + 1)
        elif hasattr(obj, "to_tuple"):
            walk(obj.to_tuple(), depth + 1)
        # anything else (a KV cache object, None, ints) is not an output to compare

    walk(output)
    return found


def as_vector(output: Any) -> Any:
    """One float64 CPU vector of every floating value of `output` (complex as real pairs)."""
    import torch

    parts = []
    for t in flatten(output):
        t = t.detach()
        if t.is_complex():
            t = torch.view_as_real(t)
        parts.append(t.to("cpu").to(torch.float64).reshape(-1))
    if not parts:
        return torch.zeros(0, dtype=torch.float64)
    return torch.cat(parts)


def cosine(a: Any, b: Any) -> float:
    """Cosine similarity of two outputs (or vectors), as a float; 1.0 for two zero vectors."""
    import torch

    a = a if isinstance(a, torch.Tensor) and a.dim() == 1 and a.dtype == torch.float64 else as_vector(a)
    b = b if isinstance(b, torch.Tensor) and b.dim() == 1 and b.dtype == torch.float64 else as_vector(b)
    na, nb = float(a.norm()), float(b.norm())
    if na == 0.0 and nb == 0.0:
        return 1.0
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(torch.dot(a, b) / (na * nb))


def rmse(a: Any, b: Any) -> float:
    import torch

    if a.numel() == 0:
        return 0.0
    return float(torch.sqrt(torch.mean((a - b) ** 2)))


def _finite(x):
    return x if x is not None and math.isfinite(x) else None


def reference_nonfinite(outputs: Any, reference: Any) -> int:
    """Values where `reference` is non-finite and `outputs` (the target's) is finite: a failed
    reference. 0 when the sizes differ (nothing position-wise to say)."""
    import torch

    res, ref = as_vector(outputs), as_vector(reference)
    if res.numel() != ref.numel():
        return 0
    return int((~torch.isfinite(ref) & torch.isfinite(res)).sum())


def compare(outputs: Any, reference: Any, eager_outputs: Any, dtype: Any, kind: str = "forward",
            baseline: bool = False) -> dict[str, Any]:
    """The acc_* metrics of `outputs` (the target's) against `reference` (float64 CPU).

    `eager_outputs`: the eager run in the target's dtype the rmse-ratio rule judges
    against; None when there is no other run to judge against (eager mode on the
    cpu): acc_eager_rmse is then acc_rmse and the rmse-ratio rule does not apply.
    `baseline`: the target is the CPU eager run itself: acc_rule "baseline" and
    ill_conditioned 1 when the rules without a baseline (allclose, cosine) fail.
    Returns acc_max_abs_err, acc_max_rel_err, acc_rmse, acc_eager_rmse, acc_cosine,
    acc_nonfinite, acc_atol, acc_rtol, acc_multiplier, acc_rule (acc_ref_dtype is the
    caller's); or acc_rule None and acc_not_measured (sizes_differ, no_float_output) when
    the outputs cannot be compared. A target whose size differs from its own eager run's
    is acc_rule "failed"; the sizes (the numbers that decided) are under the keys _size and
    _ref_size, which `stored` leaves out of the metrics (describe quotes them).
    """
    import torch

    atol, rtol, multiplier = tolerance(dtype, kind)
    res, ref = as_vector(outputs), as_vector(reference)
    eager = as_vector(eager_outputs) if eager_outputs is not None else res
    metrics = {"acc_atol": atol, "acc_rtol": rtol, "acc_multiplier": multiplier}
    empty = dict(acc_max_abs_err=None, acc_max_rel_err=None, acc_rmse=None, acc_eager_rmse=None,
                 acc_cosine=None, acc_nonfinite=None)
    if res.numel() != eager.numel():
        # The target's output differs in size from the eager run at its own precision.
        metrics.update(empty, acc_rule="failed", _size=int(res.numel()), _ref_size=int(eager.numel()))
        return metrics
    if res.numel() != ref.numel():
        metrics.update(empty, acc_rule=None, acc_not_measured="sizes_differ", _size=int(res.numel()),
                       _ref_size=int(ref.numel()))
        return metrics
    if res.numel() == 0:
        metrics.update(empty, acc_rule=None, acc_not_measured="no_float_output")
        return metrics
    fin_res, fin_ref = torch.isfinite(res), torch.isfinite(ref)
    same = (res == ref) | (torch.isnan(res) & torch.isnan(ref))
    nonfinite = int((~fin_res & ~(~fin_ref & same)).sum())
    valid = fin_res & fin_ref & torch.isfinite(eager)
    res_v, ref_v, eager_v = res[valid], ref[valid], eager[valid]
    diff = (res_v - ref_v).abs()
    max_abs = float(diff.max()) if diff.numel() else 0.0
    rel = diff / ref_v.abs().clamp_min(1e-12)
    max_rel = float(rel.max()) if rel.numel() else 0.0
    res_rmse, eager_rmse = rmse(res_v, ref_v), rmse(eager_v, ref_v)
    eager_finite = bool(torch.isfinite(eager[fin_ref]).all())
    cos = cosine(res_v, ref_v)
    metrics.update(acc_max_abs_err=_finite(max_abs), acc_max_rel_err=_finite(max_rel),
                   acc_rmse=_finite(res_rmse), acc_eager_rmse=_finite(eager_rmse), acc_cosine=_finite(cos),
                   acc_nonfinite=nonfinite)
    if nonfinite:
        rule = "failed"
    elif torch.allclose(res_v, ref_v, atol=atol, rtol=rtol):
        rule = "allclose"
    elif eager_outputs is not None and eager_finite and math.isfinite(eager_rmse) \
            and res_rmse <= multiplier * eager_rmse + atol / 10.0:
        rule = "rmse_ratio"
    elif eager_outputs is None and cos >= COSINE_MIN:
        # Only without a baseline: a target that fails the rmse-ratio rule is
        # further from float64 than its own eager run allows, whatever its
        # cosine (a zeroed output tensor can keep cosine above 0.99).
        rule = "cosine"
    else:
        rule = "failed"
    if baseline:
        metrics["ill_conditioned"] = 0 if rule != "failed" else 1
        rule = "baseline"
    metrics["acc_rule"] = rule
    return metrics


def reference_with_fallback(run_at: Callable[[Any], Any], bad_count: Callable[[Any], int],
                            equals_target: Callable[[str], bool]) -> dict[str, Any]:
    """The CPU reference, float64 first, float32 when float64 fails.

    `run_at(torch dtype)` computes the reference in that dtype; `bad_count(value)` counts
    the values where it is non-finite and the target is finite (a failed reference);
    `equals_target(dtype name)`: that reference is the test's own computation (CPU, eager,
    the test's dtype). Returns {"value", "dtype", "fallback", "not_measured"}: value None and
    not_measured "reference_equals_target" or "reference_failed" when no usable reference
    is left; fallback the reason float64 was not used ("" when it was). MemoryError and
    float32's own exception propagate (the kind's reference stage records them).
    """
    import torch

    out = {"value": None, "dtype": None, "fallback": "", "not_measured": None}
    for dtype in (torch.float64, torch.float32):
        name = dtype_name(dtype)
        if out["fallback"] and equals_target(name):
            out["not_measured"] = "reference_equals_target"
            return out
        try:
            value = run_at(dtype)
        except Exception as exc:
            if dtype == torch.float32 or is_out_of_memory(exc):
                raise
            out["fallback"] = f"float64 raised {type(exc).__name__}: {str(exc)[:200]}"
            continue
        bad = bad_count(value)
        if not bad:
            out.update(value=value, dtype=name)
            return out
        reason = f"{name} non-finite at {bad} value(s) where the target is finite"
        out["fallback"] = f"{out['fallback']}; {reason}" if out["fallback"] else reason
    out["not_measured"] = "reference_failed"
    return out


def stored(acc: dict[str, Any]) -> dict[str, Any]:
    """The metrics of a comparison's dict (without its _-prefixed working keys)."""
    return {k: v for k, v in acc.items() if not k.startswith("_")}


def not_measured_detail(reason: str, detail: str = "") -> str:
    """status_detail of a test whose accuracy was not measured for `reason` (NOT_MEASURED)."""
    text = f"accuracy not measured: {NOT_MEASURED.get(reason, reason)}"
    return f"{text} ({detail})" if detail else text


def describe(acc: dict[str, Any]) -> str:
    """One line for status_detail: the numbers that decided a verdict."""
    def fmt(key):
        value = acc.get(key)
        return "n/a" if value is None else f"{value:.3g}"

    ref = f" against the {acc['acc_ref_dtype']} reference" if acc.get("acc_ref_dtype") else ""
    if acc.get("_size") is not None and acc.get("acc_rule") == "failed":
        return (f"accuracy failed: output sizes differ: the target gives {acc['_size']} values, "
                f"its eager run at the same precision {acc['_ref_size']}")
    nonfinite = f"{acc['acc_nonfinite']} non-finite value(s) where the reference is finite; " \
        if acc.get("acc_nonfinite") else ""
    return (f"accuracy {acc.get('acc_rule')}{ref}: {nonfinite}max abs err {fmt('acc_max_abs_err')} (atol "
            f"{fmt('acc_atol')}, rtol {fmt('acc_rtol')}), rmse {fmt('acc_rmse')} vs eager rmse "
            f"{fmt('acc_eager_rmse')} x{fmt('acc_multiplier')}, cosine {fmt('acc_cosine')} (min {COSINE_MIN})")


def repeatable(first: Any, again: Any, dtype: Any, kind: str = "forward") -> bool:
    """True when two eager runs of the same model on the same inputs agree within the
    tolerance: the model computes a function of its inputs (no random op in its forward)."""
    import torch

    a, b = as_vector(first), as_vector(again)
    if a.numel() != b.numel():
        return False
    atol, rtol, _ = tolerance(dtype, kind)
    return bool(torch.allclose(a, b, atol=atol, rtol=rtol, equal_nan=True))


def not_comparable(result: Result, first: Any, again: Any) -> None:
    """Records that the output is random (two eager runs differ): accuracy is not measured
    (acc_not_measured "random_output"), the test's own status stands."""
    a, b = as_vector(first), as_vector(again)
    diff = float((a - b).abs().max()) if a.numel() == b.numel() and a.numel() else None
    result.metrics.update(acc_ref_dtype=None, acc_rule=None, acc_not_measured="random_output")
    shown = "n/a" if diff is None else f"{diff:.3g}"
    result.set_status(result.status, f"accuracy not measured: the output is random (two eager calls on the same "
                                     f"inputs differ, max abs diff {shown})", result.stage)


def passed(acc: dict[str, Any]) -> bool:
    """True when the acc_* metrics' verdict is a pass (forward, generate or train rule)."""
    return acc.get("acc_rule") in ("allclose", "rmse_ratio", "cosine") + TOKEN_RULES + TRAIN_RULES


# --------------------------------------------------------------------------- generate and train

# The token rule's pass verdicts and the train rule's (see compare_tokens, compare_train).
TOKEN_RULES = ("tokens_match", "near_tie")
TRAIN_RULES = ("loss_and_grad", "learning_curve")
# Minimum cosine of the first step's gradients (target vs reference), per dtype. Pinned.
GRAD_COSINE_MIN = {"float64": 0.99999, "float32": 0.999, "bfloat16": 0.98, "float16": 0.99}


def compare_tokens(tokens: Any, ref_tokens: Any, ref_scores: list[Any], dtype: Any,
                   baseline: bool = False) -> dict[str, Any]:
    """The gen_* / acc_* metrics of greedy tokens [batch, N] against the reference's.

    `ref_scores`: the reference's processed scores at each of the N steps ([batch,
    vocab] each; the scores greedy took the argmax of). Rule, per row: no
    divergence -> "tokens_match"; else at the row's first divergence d (where both
    saw the same context) the reference's score gap between its own token and the
    target's, gap = s[ref] - s[target], must be <= multiplier * (atol + rtol *
    max|s|) with the (dtype, "generate") tolerances -> "near_tie" (a rounding-level
    tie flipped; later tokens cannot be compared); otherwise "failed". The row
    with the largest gap / tolerance ratio reports gap and tolerance. Tokens of another
    shape cannot be compared (acc_not_measured "sizes_differ"). `baseline` (CPU eager):
    acc_rule "baseline", ill_conditioned 1 when the rule fails.
    """
    import torch

    atol, rtol, multiplier = tolerance(dtype, "generate")
    tokens, ref_tokens = tokens.to("cpu"), ref_tokens.to("cpu")
    metrics = {"acc_atol": atol, "acc_rtol": rtol, "acc_multiplier": multiplier,
               "gen_first_divergence": None, "gen_divergence_logit_gap": None, "gen_tie_tolerance": None}
    if tokens.shape != ref_tokens.shape:
        metrics.update(gen_token_match_rate=None, acc_rule=None, acc_not_measured="sizes_differ",
                       _size=int(tokens.numel()), _ref_size=int(ref_tokens.numel()))
        return metrics
    same = tokens == ref_tokens
    metrics["gen_token_match_rate"] = float(same.double().mean()) if same.numel() else 1.0
    rule, worst = "tokens_match", None
    for row in range(tokens.shape[0]):
        diverged = (~same[row]).nonzero()
        if not len(diverged):
            continue
        d = int(diverged[0])
        first = metrics["gen_first_divergence"]
        metrics["gen_first_divergence"] = d if first is None else min(first, d)
        scores = ref_scores[d][row].to(torch.float64) if d < len(ref_scores) else None
        if scores is None:
            rule = "failed"
            continue
        gap = float(scores[ref_tokens[row, d]] - scores[tokens[row, d]])
        finite = scores[torch.isfinite(scores)]
        tol = multiplier * (atol + rtol * (float(finite.abs().max()) if finite.numel() else 0.0))
        if not math.isfinite(gap) or gap > tol:
            rule = "failed"
        elif rule == "tokens_match":
            rule = "near_tie"
        ratio = gap / tol if tol > 0 and math.isfinite(gap) else math.inf
        if worst is None or ratio > worst[0]:
            worst = (ratio, gap, tol)
    if worst is not None:
        metrics["gen_divergence_logit_gap"] = _finite(worst[1])
        metrics["gen_tie_tolerance"] = worst[2]
    metrics["acc_rule"] = rule
    if baseline:
        metrics.update(acc_rule="baseline", ill_conditioned=0 if rule != "failed" else 1)
    return metrics


def compare_train(losses: list[float], ref_losses: list[float], grad_cosine: float | None, dtype: Any,
                  baseline: bool = False) -> dict[str, Any]:
    """The train accuracy metrics: loss trajectory and first-step gradient cosine.

    Passes ("loss_and_grad") when every step's |loss - ref| <= multiplier * (atol +
    rtol * |ref|) with the (dtype, "train") tolerances, every loss is finite, and
    grad_cosine >= GRAD_COSINE_MIN[dtype]; otherwise "failed". `baseline` (CPU eager):
    acc_rule "baseline", acc_rmse the RMSE of the two loss trajectories, acc_cosine the
    step-1 gradient cosine, ill_conditioned 1 when the rule fails.
    """
    atol, rtol, multiplier = tolerance(dtype, "train")
    cos_min = GRAD_COSINE_MIN.get(dtype_name(dtype), GRAD_COSINE_MIN["float32"])
    metrics = {"acc_atol": atol, "acc_rtol": rtol, "acc_multiplier": multiplier, "train_grad_cosine_min": cos_min}
    ok = len(losses) == len(ref_losses) and all(math.isfinite(x) for x in losses)
    errors = [abs(a - b) for a, b in zip(losses, ref_losses, strict=False)]
    metrics["train_loss_max_abs_err"] = _finite(max(errors)) if errors else None
    ok = ok and all(e <= multiplier * (atol + rtol * abs(b)) for e, b in zip(errors, ref_losses, strict=False))
    ok = ok and grad_cosine is not None and math.isfinite(grad_cosine) and grad_cosine >= cos_min
    metrics["acc_rule"] = "loss_and_grad" if ok else "failed"
    if baseline:
        metrics.update(acc_rule="baseline", ill_conditioned=0 if ok else 1, acc_cosine=_finite(grad_cosine),
                       acc_rmse=_finite(math.sqrt(sum(e * e for e in errors) / len(errors))) if errors else None)
    return metrics


def describe_tokens(acc: dict[str, Any]) -> str:
    """One line for status_detail of a failed token rule."""
    ref = f" against the {acc['acc_ref_dtype']} reference" if acc.get("acc_ref_dtype") else ""
    return (f"accuracy {acc.get('acc_rule')}{ref}: token match rate {acc.get('gen_token_match_rate')}, first "
            f"divergence at new token {acc.get('gen_first_divergence')}, reference score gap "
            f"{acc.get('gen_divergence_logit_gap')} > tie tolerance {acc.get('gen_tie_tolerance')}")


def describe_train(acc: dict[str, Any], losses: list[float], ref_losses: list[float], grad_cosine: float | None) -> str:
    """One line for status_detail of a failed train rule."""
    ref = f" against the {acc['acc_ref_dtype']} reference" if acc.get("acc_ref_dtype") else ""
    return (f"accuracy {acc.get('acc_rule')}{ref}: loss {losses} vs reference {ref_losses} (max abs err "
            f"{acc.get('train_loss_max_abs_err')}, atol {acc.get('acc_atol')}, rtol {acc.get('acc_rtol')} "
            f"x{acc.get('acc_multiplier')}), grad cosine {grad_cosine} (min {acc.get('train_grad_cosine_min')})")


# --------------------------------------------------------------------------- learning equivalence

# Kind train with kind_params.steps >= LEARNING_MIN_STEPS is a learning run (compare_learning).
LEARNING_MIN_STEPS = 20
# The float64 reference must end below this share of its first loss, else "not_learning".
LEARNING_DROP = 0.5
# Pinned: the target's loss-curve RMSE against float64 may be at most this multiple of the
# CPU eager run's (the test's dtype) plus the (dtype, "train") atol / 10 (doc/accuracy.md,
# "train: learning equivalence"). Its own constant: TOLERANCES' multiplier judges one
# output, this one a trajectory whose rounding differences are amplified by every step.
LEARNING_MULTIPLIER = 3.0


def curve_rmse(a: list[float], b: list[float]) -> float | None:
    """RMSE of two curves of the same length; None when a value is not finite or they differ."""
    if len(a) != len(b) or not a:
        return None
    value = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b, strict=True)) / len(a))
    return value if math.isfinite(value) else None


def compare_learning(losses: list[float], ref_losses: list[float], eager_losses: list[float] | None,
                     grad_cosine: float | None, dtype: Any, baseline: bool = False) -> dict[str, Any]:
    """The learning rule of a long train run: loss curves against the float64 reference.

    Not judged (acc_not_measured "not_learning") when the reference's last loss is not below
    LEARNING_DROP x its first. Else train_loss_rmse = RMSE(losses, ref), train_eager_loss_rmse
    = RMSE(eager_losses, ref) (`eager_losses`: the CPU eager run at the test's dtype, in the
    same child; None when the test is that run: baseline), and the rule passes
    ("learning_curve") when train_loss_rmse <= LEARNING_MULTIPLIER x train_eager_loss_rmse +
    atol / 10 ((dtype, "train") row of TOLERANCES) and the step-1 gradient cosine is at least
    GRAD_COSINE_MIN[dtype]; otherwise "failed". `baseline`: acc_rule "baseline" (the gap to
    float64 only; ill_conditioned 0).
    """
    atol, rtol, _ = tolerance(dtype, "train")
    cos_min = GRAD_COSINE_MIN.get(dtype_name(dtype), GRAD_COSINE_MIN["float32"])
    errors = [abs(a - b) for a, b in zip(losses, ref_losses, strict=False)]
    metrics = {"acc_atol": atol, "acc_rtol": rtol, "acc_multiplier": LEARNING_MULTIPLIER,
               "train_grad_cosine_min": cos_min,
               "train_loss_max_abs_err": _finite(max(errors)) if errors else None,
               "train_loss_rmse": curve_rmse(losses, ref_losses),
               "train_eager_loss_rmse": curve_rmse(eager_losses, ref_losses) if eager_losses is not None else None}
    first, last = (ref_losses[0], ref_losses[-1]) if ref_losses else (math.nan, math.nan)
    if not (math.isfinite(first) and math.isfinite(last) and last < LEARNING_DROP * first):
        metrics.update(acc_rule=None, acc_not_measured="not_learning", _detail=f"reference loss {first:.4g} -> "
                       f"{last:.4g}, needs < {LEARNING_DROP:g} x the first")
        return metrics
    if baseline:
        metrics.update(acc_rule="baseline", ill_conditioned=0, acc_cosine=_finite(grad_cosine),
                       acc_rmse=metrics["train_loss_rmse"])
        return metrics
    gap, eager_gap = metrics["train_loss_rmse"], metrics["train_eager_loss_rmse"]
    ok = len(losses) == len(ref_losses) and gap is not None and eager_gap is not None \
        and gap <= LEARNING_MULTIPLIER * eager_gap + atol / 10.0
    ok = ok and grad_cosine is not None and math.isfinite(grad_cosine) and grad_cosine >= cos_min
    metrics["acc_rule"] = "learning_curve" if ok else "failed"
    return metrics


def describe_learning(acc: dict[str, Any], grad_cosine: float | None) -> str:
    """One line for status_detail of a failed learning rule: the numbers that decided."""
    ref = f" against the {acc['acc_ref_dtype']} reference" if acc.get("acc_ref_dtype") else ""

    def fmt(key):
        value = acc.get(key)
        return "n/a" if value is None else f"{value:.3g}"

    return (f"accuracy {acc.get('acc_rule')}{ref}: learning curve: loss rmse {fmt('train_loss_rmse')} vs CPU eager "
            f"loss rmse {fmt('train_eager_loss_rmse')} x{fmt('acc_multiplier')} + {fmt('acc_atol')}/10 (max abs err "
            f"{fmt('train_loss_max_abs_err')}), step-1 grad cosine {grad_cosine} (min "
            f"{acc.get('train_grad_cosine_min')})")


# --------------------------------------------------------------------------- long outputs

# Positions (new tokens) at which gen_match_curve gives the match rate, each below N, then N.
MATCH_POSITIONS = (64, 256, 1024, 4096)
# A generate reference of at least DEGENERATE_MIN_TOKENS new tokens per row with fewer than
# DEGENERATE_DISTINCT distinct tokens (over all rows) is degenerate: not judged.
DEGENERATE_DISTINCT = 8
DEGENERATE_MIN_TOKENS = 32


def match_curve(tokens: Any, ref_tokens: Any) -> list[list[float]]:
    """[[p, match rate of new tokens 0..p-1 over every row], ...] for p in MATCH_POSITIONS below
    N, then N itself; [] when the shapes differ."""
    if tokens.shape != ref_tokens.shape or tokens.shape[1] == 0:
        return []
    same = (tokens.to("cpu") == ref_tokens.to("cpu")).double()
    n = int(tokens.shape[1])
    return [[p, float(same[:, :p].mean())] for p in [q for q in MATCH_POSITIONS if q < n] + [n]]


def reference_token_stats(ref_tokens: Any, ref_scores: list[Any], dtype: Any) -> dict[str, Any]:
    """gen_ref_distinct_tokens (distinct new tokens over every row) and gen_ref_near_tie_share
    (share of (row, step) whose reference top-2 score gap is within the tie tolerance of
    compare_tokens: multiplier x (atol + rtol x max|s|), (dtype, "generate") row)."""
    import torch

    atol, rtol, multiplier = tolerance(dtype, "generate")
    ties = total = 0
    for scores in ref_scores:
        s = scores.to(torch.float64)
        s = torch.where(torch.isfinite(s), s, torch.full_like(s, -math.inf))
        if s.shape[-1] < 2:
            continue
        top = torch.topk(s, 2, dim=-1).values
        finite = torch.where(torch.isfinite(scores.to(torch.float64)), scores.to(torch.float64).abs(),
                             torch.zeros_like(s)).amax(dim=-1)
        tol = multiplier * (atol + rtol * finite)
        gap = top[..., 0] - top[..., 1]
        ties += int((torch.isfinite(gap) & (gap <= tol)).sum())
        total += int(gap.numel())
    return {"gen_ref_distinct_tokens": int(torch.unique(ref_tokens).numel()),
            "gen_ref_near_tie_share": ties / total if total else None}


def degenerate(ref_tokens: Any) -> bool:
    """True for a long reference output (DEGENERATE_MIN_TOKENS or more per row) with fewer than
    DEGENERATE_DISTINCT distinct tokens."""
    import torch

    return ref_tokens.dim() == 2 and ref_tokens.shape[1] >= DEGENERATE_MIN_TOKENS \
        and int(torch.unique(ref_tokens).numel()) < DEGENERATE_DISTINCT
