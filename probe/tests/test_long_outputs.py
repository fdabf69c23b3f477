"""Issue 17, long outputs: generation bounded by the measurement budget, the token match as a
curve over positions, decode time and memory against position, degenerate references.

In-process through child.run_test. The budget assertions use a budget no call can stay
within (1 ms), so they do not depend on the machine's speed.
"""

import json

import torch
from kind_requests import assert_pass, run_kind

from compatlab_probe.kinds import generate
from compatlab_probe.measure import accuracy

SPENT = {"warmup": 3, "min_iters": 10, "min_time_s": 0.0, "max_time_s": 0.001}


def run_generate(model_type="llama", new_tokens=256, **extra):
    torch._dynamo.reset()
    return run_kind("generate", model_type, "eager", {"new_tokens": new_tokens}, measure=SPENT, **extra)


def test_a_256_token_generation_stops_at_the_budget_and_stores_its_curves():
    result = run_generate()
    assert_pass(result)
    m = result["metrics"]
    assert m["steady_iters"] == 1  # the budget was spent after the first measured call
    match = json.loads(m["gen_match_curve"])
    assert [p for p, _ in match] == [64, 256] and all(rate == 1.0 for _, rate in match)  # baseline: itself
    decode = json.loads(m["gen_decode_curve"])
    assert 1 < len(decode) <= generate.CURVE_POINTS and decode[0][0] == 1 and all(s > 0 for _, s in decode)
    assert [p for p, _ in decode] == sorted(p for p, _ in decode) and decode[-1][0] < 256
    memory = json.loads(m["gen_mem_curve"])
    assert memory[0] == [0, 0] and memory[-1][0] == 255 and memory[-1][1] == m["gen_mem_growth_bytes"]
    assert m["gen_ref_distinct_tokens"] >= accuracy.DEGENERATE_DISTINCT  # the seeded llama does not loop
    assert 0.0 <= m["gen_ref_near_tie_share"] <= 1.0
    assert m["acc_rule"] == "baseline" and m.get("acc_not_measured") is None


def test_a_reference_that_loops_on_few_tokens_is_degenerate_and_not_judged():
    result = run_generate("gpt2", new_tokens=accuracy.DEGENERATE_MIN_TOKENS)
    assert result["status"] == "pass", result["status_detail"]
    m = result["metrics"]
    assert m["gen_ref_distinct_tokens"] < accuracy.DEGENERATE_DISTINCT
    assert m["acc_rule"] is None and m["acc_not_measured"] == "degenerate_reference"
    assert "degenerate" in result["status_detail"] and "distinct tokens" in result["status_detail"]


def test_match_curve_and_reference_statistics():
    ref = torch.arange(300).reshape(1, 300) % 50
    tokens = ref.clone()
    tokens[0, 100:] = 0
    curve = accuracy.match_curve(tokens, ref)
    assert [p for p, _ in curve] == [64, 256, 300] and curve[0][1] == 1.0
    assert curve[1][1] < 1.0 and accuracy.match_curve(tokens[:, :10], ref) == []
    scores = [torch.tensor([[1.0, 1.0, 0.0]]), torch.tensor([[2.0, 0.0, 0.0]])]
    stats = accuracy.reference_token_stats(ref[:, :2], scores, torch.float32)
    assert stats == {"gen_ref_distinct_tokens": 2, "gen_ref_near_tie_share": 0.5}
    assert accuracy.degenerate(torch.zeros(1, 40, dtype=torch.long))
    assert not accuracy.degenerate(torch.zeros(1, 8, dtype=torch.long))  # short outputs are not judged so


def test_position_curves_bucket_long_outputs():
    per_call = [[0.01] * 1023, [0.03] * 1023]
    rss = [1000 + 10 * i for i in range(1024)]
    out = generate.position_curves(per_call, rss)
    decode, memory = json.loads(out["gen_decode_curve"]), json.loads(out["gen_mem_curve"])
    assert len(decode) <= generate.CURVE_POINTS and decode[0] == [1, 0.02]
    assert memory[0] == [0, 0] and memory[-1] == [1023, 10230] and out["gen_mem_growth_bytes"] == 10230


def test_a_spent_budget_ends_warm_up_and_measured_calls_after_one_call():
    from compatlab_probe.kinds.common import alternating_steady
    from compatlab_probe.measure.timing import steady_state
    from compatlab_probe.protocol.request import MeasureSettings

    calls = []
    spent = MeasureSettings(warmup=3, min_iters=10, min_time_s=5.0, max_time_s=1e-9)
    assert steady_state(lambda: calls.append(1), spent)[2] == 1 and len(calls) == 1
    out = alternating_steady(lambda: calls.append("c"), lambda: calls.append("e"), spent)
    assert out["steady_iters"] == 1 and calls[1:] == ["c", "e"]
    none = MeasureSettings(warmup=0, min_iters=4, min_time_s=0.0)  # no budget: min_iters as before
    assert steady_state(lambda: None, none)[2] == 4
