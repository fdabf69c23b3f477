"""Kind `generate`: greedy decoding of N new tokens with a static cache, compiled the way
transformers compiles generation (doc/probe.md, "Kind generate"; doc/accuracy.md, "generate").

    new_tokens   kind_params.new_tokens (request.KindParams): every call makes exactly N tokens
                 (min_new_tokens = max_new_tokens = N, greedy, one beam)
    cache        cache_implementation="static" (a StaticCache sized prompt + N)
    mode compile the generation config's compile_config holds the request's backend and
                 torch.compile options, with _compile_all_devices set (transformers
                 compiles on the CPU only when told to) and disable_compile False:
                 transformers then compiles the model's decode-step forward
                 (get_compiled_call); the prefill runs eagerly, as in transformers
    mode eager   disable_compile True: nothing compiles

Phases: build; prepare = the first generate call (compile included); steady = whole
generate calls (warm-up and iterations clamped, see GENERATE_MEASURE_MAX); then
CLOCK_CALLS more calls with a logits processor that synchronises the device and
timestamps each step: prefill = call start to the first step's logits, decode = the
gaps between steps (each is one decode forward plus transformers' own per-step work).

Budget: request.measure.max_time_s (--max-measure-s) bounds warm-up, steady and clocked calls
together (at least one of each measured kind). Curves (doc/accuracy.md, "generate: long
outputs"): gen_decode_curve and gen_mem_curve from the clocked calls (position_curves),
gen_match_curve, gen_ref_distinct_tokens and gen_ref_near_tie_share from the reference; a
degenerate reference (accuracy.degenerate) is not judged. The audit's call makes at most
AUDIT_TOKENS tokens.

Accuracy: the reference greedy tokens of the same weights and inputs on the CPU in eager
float64 (float32 when float64 fails), dynamic cache; its processed scores at each step
decide whether a divergence is a near-tie (accuracy.compare_tokens).

Statuses: skipped when the head cannot generate (encoder-only, classifiers), when the
class has no static cache, or (compile) when new_tokens < 2 leaves no decode step to
compile; fail_to_compile (stage compile) for a compile error in the first call;
fail_to_run (prepare / steady); harness_error when compile mode captured nothing;
fail_accuracy (stage compare) from the token rule.
"""

from __future__ import annotations

import copy
import json
import time
from typing import TYPE_CHECKING, Any

from ..measure import accuracy
from ..measure.timing import steady_figures, timed_calls
from ..protocol.request import MeasureSettings, TestRequest
from ..protocol.result import Result
from . import common, decoding
from .common import stage
from .phases import ModelTest, per_second

if TYPE_CHECKING:
    from .context import Context

# A generate call is N forwards: the request's measure params are clamped to these.
GENERATE_MEASURE_MAX = {"warmup": 1, "min_iters": 5}
# Instrumented calls for the prefill / per-token decode split (fewer when the measurement
# budget, request.measure.max_time_s, is spent: at least one).
CLOCK_CALLS = 3
# Curves against position hold at most this many points (positions bucketed evenly).
CURVE_POINTS = 64
# The fallback audit's generate call makes at most this many tokens: the decode step's ops
# are the same at every position, and a long output under the audit's hooks is slow.
AUDIT_TOKENS = 16
# Decoder inputs that generate makes itself.
_DECODER_INPUTS = ("decoder_input_ids", "decoder_attention_mask")


def generate_measure_params(request: TestRequest) -> MeasureSettings:
    """The request's measure settings clamped to GENERATE_MEASURE_MAX."""
    return request.measure.clamped(GENERATE_MEASURE_MAX)


def _new_tokens(output, n):
    """The last n tokens of each row of generate's output, on the CPU."""
    sequences = output.sequences if hasattr(output, "sequences") else output
    return sequences[:, -n:].to("cpu")


def run(request: TestRequest, result: Result, context: Context | None = None) -> None:
    """The kind: fills `result`; a failed phase ends it with StageFailed (child.run_test)."""
    test = ModelTest(request, result)
    target, compiling, dtype = test.target, test.compiling, test.dtype
    new_tokens = request.kind_params.new_tokens
    result.metrics["gen_new_tokens"] = new_tokens

    cls, head_kind = common.resolve_class(request, result)
    reason = decoding.not_applicable(cls, head_kind)
    if reason:
        test.skip(reason)
    if compiling and new_tokens < 2:
        test.skip("kind generate in compile mode needs new_tokens >= 2 "
                  "(transformers compiles the decode steps only; one token is the prefill alone)")
    built = test.build(positions_needed=request.seq_len + new_tokens)
    model = built.model
    inputs = {k: v for k, v in built.inputs.items() if k not in _DECODER_INPUTS}
    cc = stage(result, "compile", "harness_error", lambda: decoding.compile_config_of(request, target)) \
        if compiling else None
    gc = decoding.generation_config(model, new_tokens, cc)
    gc_eager = copy.deepcopy(gc)
    gc_eager.compile_config, gc_eager.disable_compile = None, True

    def generate(config, recorder=None):
        kwargs = {"logits_processor": decoding.processors(recorder)} if recorder is not None else {}
        out = model.generate(**inputs, generation_config=config, **kwargs)
        target.sync()
        return out

    with test.first_call():
        output = generate(gc)
        if getattr(model, "_previous_max_cache_length", None) is None:
            test.skip(f"transformers did not give {cls.__name__} a static cache "
                      "(cache_implementation='static' was ignored)")
    tokens = _new_tokens(output, new_tokens)

    params = generate_measure_params(request)

    def clocked(budget_begin):
        prefill, per_call, rss = [], [], []
        for call in range(CLOCK_CALLS):
            if call and params.budget_spent(budget_begin, time.perf_counter()):
                break
            recorder = decoding.StepRecorder(sync=target.sync, memory=call == 0)
            begin = time.perf_counter()
            generate(gc, recorder)
            if recorder.times:
                prefill.append(recorder.times[0] - begin)
                per_call.append([b - a for a, b in zip(recorder.times, recorder.times[1:], strict=False)])
            rss = rss or recorder.rss
        return prefill, per_call, rss

    budget_begin = time.perf_counter()
    with test.steady():
        if compiling:
            steady = common.alternating_steady(lambda: generate(gc), lambda: generate(gc_eager), params, target.sync)
        else:
            steady = steady_figures(timed_calls(lambda: generate(gc), params, target.sync))
        result.metrics.update(steady)
        prefill, per_call, rss = clocked(budget_begin)
    gaps = [g for call in per_call for g in call]
    result.metrics["gen_prefill_s"] = common.percentiles(prefill)[0] if prefill else None
    decode = common.percentiles(gaps)[0] if gaps else None
    result.metrics["gen_decode_token_s"] = decode
    result.metrics.update(position_curves(per_call, rss))
    batch = int(tokens.shape[0])
    result.metrics["tokens_per_s"] = per_second(batch, decode)
    test.read_memory()
    gc_audit = copy.deepcopy(gc_eager)
    gc_audit.max_new_tokens = gc_audit.min_new_tokens = min(new_tokens, AUDIT_TOKENS)
    test.audit(lambda: generate(gc_audit))
    test.profile(lambda: generate(gc_audit))  # the audit's short generation: a bounded window

    with test.reference():
        ref = _reference(model, inputs, gc, int(tokens.shape[1]), test)
    if not test.use_reference(ref):
        return
    ref_tokens, ref_scores = ref["value"]
    result.metrics.update(accuracy.reference_token_stats(ref_tokens, ref_scores, dtype))
    result.metrics["gen_match_curve"] = json.dumps(accuracy.match_curve(tokens, ref_tokens))
    acc = accuracy.compare_tokens(tokens, ref_tokens, ref_scores, dtype, baseline=test.is_baseline)
    acc["acc_ref_dtype"] = ref["dtype"]
    if accuracy.degenerate(ref_tokens):
        result.metrics.update(accuracy.stored(acc))
        acc = {"acc_rule": None, "acc_not_measured": "degenerate_reference"}
        test.verdict(acc, accuracy.describe_tokens, f"{result.metrics['gen_ref_distinct_tokens']} distinct "
                     f"tokens in {ref_tokens.shape[1]} new tokens, fewer than {accuracy.DEGENERATE_DISTINCT}")
        return
    test.verdict(acc, accuracy.describe_tokens)


def _buckets(n: int) -> list[tuple[int, int]]:
    """At most CURVE_POINTS (start, end) ranges cutting positions 0..n-1 evenly."""
    if n <= 0:
        return []
    size = -(-n // CURVE_POINTS)
    return [(start, min(n, start + size)) for start in range(0, n, size)]


def position_curves(per_call: list[list[float]], rss: list[int | None]) -> dict[str, Any]:
    """gen_decode_curve: [[p, median s], ...], the decode step that made new token p+1 (a
    bucket of positions from p: the median over the bucket and the clocked calls); gen_mem_curve:
    [[p, bytes], ...], the process RSS at token p's logits over the RSS at the first token's
    (first clocked call); gen_mem_growth_bytes: the last token's figure. Empty without clocked steps."""
    import statistics

    out: dict[str, Any] = {"gen_decode_curve": "[]", "gen_mem_curve": "[]", "gen_mem_growth_bytes": None}
    steps = min((len(c) for c in per_call), default=0)
    if steps:
        curve = [[start + 1, statistics.median(c[i] for c in per_call for i in range(start, end))]
                 for start, end in _buckets(steps)]
        out["gen_decode_curve"] = json.dumps(curve)
    known = [r for r in rss if r is not None]
    if len(known) == len(rss) and rss:
        points = [[start, rss[start] - rss[0]] for start, _ in _buckets(len(rss))]
        if points[-1][0] != len(rss) - 1:
            points.append([len(rss) - 1, rss[-1] - rss[0]])
        out["gen_mem_curve"] = json.dumps(points)
        out["gen_mem_growth_bytes"] = rss[-1] - rss[0]
    return out


def _reference(model: Any, inputs: dict[str, Any], gc: Any, n: int, test: ModelTest) -> dict[str, Any]:
    """The CPU eager reference's tokens and processed scores (float64; float32 when float64
    raises or scores NaN: accuracy.reference_with_fallback). Only NaN counts as a failed
    score: -inf is what logits processors write on purpose."""
    import torch

    ref_gc = copy.deepcopy(gc)
    ref_gc.cache_implementation = None
    ref_gc.compile_config, ref_gc.disable_compile = None, True

    def run_at(ref_dtype):
        ref = common.cpu_copy(model, ref_dtype)
        recorder = decoding.StepRecorder(keep_scores=True)
        out = ref.generate(**common.reference_inputs(inputs, ref_dtype), generation_config=ref_gc,
                           logits_processor=decoding.processors(recorder))
        return _new_tokens(out, n), recorder.scores[-n:]

    def bad_count(value):
        return sum(int(torch.isnan(s).sum()) for s in value[1])

    return accuracy.reference_with_fallback(run_at, bad_count, test.reference_is_target)
