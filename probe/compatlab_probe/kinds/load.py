"""Kind `load`: a causal LM serving many requests at once, measured the way serving
benchmarks report it (doc/probe.md, "Kind load"; MLPerf LoadGen's scenarios, vLLM's and
GuideLLM's figures).

    workload   kind_params.requests requests (default 32, request.KindParams): prompt lengths uniform in
               [seq_len * (1 - RANGE_RATIO), seq_len * (1 + RANGE_RATIO)], output lengths
               uniform in [new_tokens * (1 - RANGE_RATIO), new_tokens * (1 + RANGE_RATIO)]
               (vLLM's "random" dataset with range ratio 0.5), random token ids; all from
               random.Random(seed): the same request list in every row of a test
    scenario   single_stream (one request at a time, the next when the last finished),
               offline (every request at time 0: the maximum throughput), server (Poisson
               arrivals at rate = kind_params.rate x the base: the offline throughput of its
               group's offline row, request.load_base, the same figure for every rate of
               the group; without one, an offline run in this child)
    engine     transformers' continuous batching (init_continuous_batching: paged cache,
               FIFO scheduler) when the architecture runs it, else batched static-cache
               generate (request-level batching); load_engine says which, and status_detail
               why continuous batching could not run
    objective  a request is good when its TTFT <= slo_ttft_s and its mean inter-token
               latency <= slo_itl_s (kind_params.slo "ttft=S,itl=S", else the objective of
               its group's single_stream row, request.load_slo, the same for every row of
               the group; without one, SLO_MULTIPLIER x the p50s of a single_stream run in
               this child); goodput = good requests / s

Phases: build; prepare = the engine's first request (compile included in compile mode);
compile mode's warm-up (_warm_up: the steady phase's runs served once un-timed, so that the
buckets they meet compile before they are measured: load_warmup_s, load_warmup_recompiles);
steady = the calibration runs the row needs (single_stream for the objective when the
request brings none, offline for the rate when it brings no base) and then the row's
scenario (a server row with both: its scenario alone); memory; the fallback audit over one
eager forward.
No CPU reference: kind generate checks the tokens.
"""

from __future__ import annotations

import copy
import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..models.inputs import allowed_token_ids
from ..protocol.request import TestRequest
from ..protocol.result import Result
from . import common
from .decoding import StepRecorder, compile_config_of, generation_config, not_applicable, processors
from .phases import ModelTest

if TYPE_CHECKING:
    from .context import Context

SCENARIOS = ("single_stream", "offline", "server")
RANGE_RATIO = 0.5
SLO_MULTIPLIER = 3.0
# single_stream run that sets the default objective in the rows of other scenarios: the first
# requests of the workload.
SLO_CALIBRATION_REQUESTS = 8
# Requests served at once (continuous batching's max_requests_per_batch, static batching's batch).
MAX_BATCH = 16
# Continuous batching's paged cache: tokens per page; the cache holds every request of the
# workload at once (num_blocks), so the scheduler is limited by MAX_BATCH, not by memory.
PAGE_SIZE = 32
# Compile mode: shapes are bucketed so that recompiles are bounded. Continuous batching pads
# the tokens of a step to multiples of Q_BUCKET and the cache read to multiples of
# KV_BUCKET_PAGES pages; static batching pads the batch to a power of two, the prompt to a
# multiple of PROMPT_BUCKET (left padding) and the new tokens to a multiple of NEW_BUCKET.
Q_BUCKET = 16
KV_BUCKET_PAGES = 4
PROMPT_BUCKET = 16
NEW_BUCKET = 8
# Compile mode's warm-up (_warm_up): how many times a server row serves its arrivals before
# the measured run.
WARMUP_SERVER_PASSES = 2
# Elements kept in each distribution list field (doc/limits.md).
DIST_MAX = 256
ENGINE_CB = "continuous_batching"
ENGINE_STATIC = "static_batch"


@dataclass(frozen=True)
class LoadRequest:
    prompt: tuple[int, ...]
    new_tokens: int


@dataclass
class Served:
    """One request as served: its arrival and the time each new token was ready."""

    arrival: float
    token_times: list[float]

    @property
    def ttft(self) -> float:
        return self.token_times[0] - self.arrival

    @property
    def e2e(self) -> float:
        return self.token_times[-1] - self.arrival

    @property
    def gaps(self) -> list[float]:
        return [b - a for a, b in zip(self.token_times, self.token_times[1:], strict=False)]

    @property
    def tpot(self) -> float:
        """Mean inter-token latency of this request (0 with one token)."""
        n = len(self.token_times)
        return (self.token_times[-1] - self.token_times[0]) / (n - 1) if n > 1 else 0.0


# ---- the workload, the arrivals and the figures (pure: no torch) ----

def parse_rate(text: str) -> float:
    """"0.9x" -> 0.9: a multiple of the offline throughput; ValueError unless a positive
    finite number followed by x."""
    if not text.endswith("x"):
        raise ValueError(f"rate {text!r} is not a multiple of the offline throughput (like 0.9x)")
    value = float(text[:-1])
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"rate {text!r} must be above 0")
    return value


def parse_slo(text: str) -> tuple[float, float]:
    """"ttft=0.5,itl=0.05" -> (0.5, 0.05) seconds; ValueError otherwise."""
    parts = dict(p.split("=", 1) for p in text.split(",") if "=" in p)
    if sorted(parts) != ["itl", "ttft"] or len(text.split(",")) != 2:
        raise ValueError(f"slo {text!r} is not ttft=SECONDS,itl=SECONDS")
    ttft, itl = float(parts["ttft"]), float(parts["itl"])
    if not (math.isfinite(ttft) and math.isfinite(itl) and ttft > 0 and itl > 0):
        raise ValueError(f"slo {text!r}: both objectives must be above 0 seconds")
    return ttft, itl


def length_range(mean: int) -> tuple[int, int]:
    """The uniform range of lengths around `mean` (RANGE_RATIO either side, at least 1)."""
    return max(1, math.ceil(mean * (1 - RANGE_RATIO))), max(1, math.floor(mean * (1 + RANGE_RATIO)))


def make_workload(seed: int, count: int, seq_len: int, new_tokens: int, token_ids: Sequence[int]) -> list[LoadRequest]:
    """`count` requests from random.Random(seed): lengths from length_range, ids from `token_ids`."""
    rng = random.Random(seed)
    lo_p, hi_p = length_range(seq_len)
    lo_n, hi_n = length_range(new_tokens)
    requests = []
    for _ in range(count):
        prompt = tuple(rng.choice(token_ids) for _ in range(rng.randint(lo_p, hi_p)))
        requests.append(LoadRequest(prompt, rng.randint(lo_n, hi_n)))
    return requests


def poisson_arrivals(seed: int, count: int, rate: float) -> list[float]:
    """Arrival times (s from the start) of a Poisson process of `rate` requests/s: cumulative
    exponential gaps from random.Random(seed + 1)."""
    rng = random.Random(seed + 1)
    t, times = 0.0, []
    for _ in range(count):
        t += rng.expovariate(rate)
        times.append(t)
    return times


def nearest_rank(values: Sequence[float], q: float) -> float:
    """The nearest-rank q-quantile (0 < q <= 1) of a non-empty list."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def bounded(values: Sequence[float], limit: int = DIST_MAX) -> list[float]:
    """The sorted values, or `limit` evenly spaced order statistics of them (the values at
    ranks (i + 0.5) / limit) when there are more: a bounded picture of the distribution."""
    ordered = sorted(values)
    if len(ordered) > limit:
        ordered = [ordered[min(len(ordered) - 1, int((i + 0.5) * len(ordered) / limit))] for i in range(limit)]
    return [round(v, 6) for v in ordered]


def max_overlap(spans: Sequence[tuple[float, float]]) -> int:
    """The largest number of [start, end) spans open at one instant."""
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    best = now = 0
    for _, step in events:
        now += step
        best = max(best, now)
    return best


def figures(served: Sequence[Served], slo: tuple[float, float] | None) -> dict[str, Any]:
    """The load_* metrics of one scenario run. Duration: first arrival to last token.
    Goodput counts the requests meeting both objectives of `slo` (TTFT, mean ITL)."""
    ttft = [s.ttft for s in served]
    e2e = [s.e2e for s in served]
    gaps = [g for s in served for g in s.gaps]
    tokens = sum(len(s.token_times) for s in served)
    duration = max(s.token_times[-1] for s in served) - min(s.arrival for s in served)
    out: dict[str, Any] = {"load_requests": len(served), "load_output_tokens": tokens, "load_duration_s": duration}
    for name, values in (("ttft", ttft), ("itl", gaps), ("e2e", e2e)):
        values = values or [0.0]  # one-token requests have no inter-token gap
        for q, label in ((0.5, "p50"), (0.9, "p90"), (0.99, "p99")):
            out[f"load_{name}_{label}_s"] = nearest_rank(values, q)
        out[f"load_{name}_dist"] = json.dumps(bounded(values))
    out["load_output_tokens_per_s"] = tokens / duration
    out["load_requests_per_s"] = len(served) / duration
    if slo is not None:
        good = sum(1 for s in served if s.ttft <= slo[0] and s.tpot <= slo[1])
        out["load_goodput_per_s"] = good / duration
    return out


def bucket(n: int, step: int) -> int:
    """n rounded up to a multiple of step."""
    return -(-n // step) * step


def pow2(n: int) -> int:
    """The smallest power of two >= n."""
    return 1 << max(0, n - 1).bit_length()


# ---- the engines ----

class ContinuousEngine:
    """transformers' continuous batching manager, started once and kept for every run."""

    name = ENGINE_CB

    def __init__(self, model: Any, gc: Any, workload: Sequence[LoadRequest], sync: Callable[[], None],
                 compile_config: Any = None):
        from transformers import ContinuousBatchingConfig

        blocks = sum(math.ceil((len(r.prompt) + r.new_tokens) / PAGE_SIZE) + 1 for r in workload)
        config = ContinuousBatchingConfig(
            page_size=PAGE_SIZE, num_blocks=blocks, max_requests_per_batch=MAX_BATCH,
            max_batch_tokens=MAX_BATCH * max(len(r.prompt) for r in workload),
            max_blocks_per_request=0, allow_block_sharing=False, use_cuda_graph=False, use_async_batching=False,
            auto_switch_to_flash=False, scheduler_type="fifo",
            q_padding_interval_size=Q_BUCKET, kv_padding_interval_size=KV_BUCKET_PAGES * PAGE_SIZE,
            varlen_compile_config=compile_config, seed=0)
        gc = copy.deepcopy(gc)
        gc.min_new_tokens = None  # every request sets its own length; end-of-sequence is off (eos -1)
        self.sync = sync
        self.manager = model.init_continuous_batching(generation_config=gc, continuous_batching_config=config)
        self.manager.start()
        self.spans: list[tuple[float, float]] = []
        self.submitted = 0

    def serve(self, requests: Sequence[LoadRequest], arrivals: Sequence[float] | None) -> list[Served]:
        """Serves `requests` arriving at `arrivals` (s from now), or one at a time when None."""
        if arrivals is None:
            return [self.serve([r], [0.0])[0] for r in requests]
        start = time.perf_counter()
        ids, arrived = [], {}
        for request, at in zip(requests, arrivals, strict=True):
            delay = start + at - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            self.submitted += 1
            rid = f"load-{self.submitted}"
            arrived[rid] = time.perf_counter()
            self.manager.add_request(list(request.prompt), request_id=rid, max_new_tokens=request.new_tokens,
                                     record_timestamps=True, eos_token_id=-1)
            ids.append(rid)
        done: dict[str, Any] = {}
        while len(done) < len(ids):
            out = self.manager.get_result(timeout=1.0)
            if out is None:
                if not self.manager.is_running():
                    error = self.manager.background_thread_status.fatal_error
                    raise RuntimeError(f"the continuous batching loop stopped: {error!r}") from error
                continue
            if not out.is_finished():
                continue
            if out.error is not None:
                raise RuntimeError(f"continuous batching failed a request: {out.error}") \
                    from self.manager.background_thread_status.fatal_error
            done[out.request_id] = out
        served = []
        for rid in ids:
            out = done[rid]
            times = list(out.timestamps or [])
            if len(times) != len(out.generated_tokens) or not times:
                raise RuntimeError(f"continuous batching returned {len(times)} token timestamps for "
                                   f"{len(out.generated_tokens)} tokens ({rid})")
            served.append(Served(arrived[rid], times))
            self.spans.append((out.lifespan[0], out.lifespan[1]))
        return served

    def mark(self) -> int:
        return len(self.spans)

    def max_concurrency(self, mark: int = 0) -> int:
        """Most requests scheduled and not finished at once, over the runs since mark()."""
        return max_overlap(self.spans[mark:])

    def close(self) -> None:
        self.manager.stop(block=True, timeout=30)
        self.manager.destroy()


class StaticEngine:
    """Request-level batching: the requests waiting when the engine is free (at most
    MAX_BATCH, first come first served) are generated together with a static cache, left
    padded; each request's tokens are the first of its batch's steps."""

    name = ENGINE_STATIC

    def __init__(self, model: Any, gc: Any, device: Any, sync: Callable[[], None], pad_id: int, compiling: bool):
        self.model, self.gc, self.device, self.sync = model, gc, device, sync
        self.pad_id, self.compiling = pad_id, compiling
        self.batches: list[int] = []
        self.why_not = ""  # why continuous batching could not run

    def _generate(self, batch: Sequence[LoadRequest]) -> list[float]:
        import torch

        rows = len(batch)
        longest = max(len(r.prompt) for r in batch)
        new = max(r.new_tokens for r in batch)
        if self.compiling:  # bucketed shapes: a bounded number of compiles
            rows, longest, new = pow2(rows), bucket(longest, PROMPT_BUCKET), bucket(new, NEW_BUCKET)
        prompts = [r.prompt for r in batch] + [batch[0].prompt] * (rows - len(batch))
        ids = torch.full((rows, longest), self.pad_id, dtype=torch.long)
        mask = torch.zeros((rows, longest), dtype=torch.long)
        for i, p in enumerate(prompts):
            ids[i, longest - len(p):] = torch.tensor(p, dtype=torch.long)
            mask[i, longest - len(p):] = 1
        gc = copy.deepcopy(self.gc)
        gc.max_new_tokens = gc.min_new_tokens = new
        recorder = StepRecorder(sync=self.sync)
        self.model.generate(input_ids=ids.to(self.device), attention_mask=mask.to(self.device), generation_config=gc,
                            logits_processor=processors(recorder))
        self.sync()
        if len(recorder.times) < new:
            raise RuntimeError(f"static batch generated {len(recorder.times)} steps, expected {new}")
        self.batches.append(len(batch))
        return recorder.times

    def serve(self, requests: Sequence[LoadRequest], arrivals: Sequence[float] | None) -> list[Served]:
        if arrivals is None:
            return [self.serve([r], [0.0])[0] for r in requests]
        start = time.perf_counter()
        order = sorted(range(len(requests)), key=lambda i: arrivals[i])
        served: dict[int, Served] = {}
        queue: list[int] = []
        nxt = 0
        while len(served) < len(requests):
            now = time.perf_counter() - start
            while nxt < len(order) and arrivals[order[nxt]] <= now:
                queue.append(order[nxt])
                nxt += 1
            if not queue:
                time.sleep(max(0.0, arrivals[order[nxt]] - now))
                continue
            batch, queue = queue[:MAX_BATCH], queue[MAX_BATCH:]
            times = self._generate([requests[i] for i in batch])
            for i in batch:
                served[i] = Served(start + arrivals[i], times[:requests[i].new_tokens])
        return [served[i] for i in range(len(requests))]

    def mark(self) -> int:
        return len(self.batches)

    def max_concurrency(self, mark: int = 0) -> int:
        """The largest batch of the runs since mark()."""
        return max(self.batches[mark:], default=0)

    def close(self) -> None:
        pass


# ---- the kind ----

def _cb_unavailable(model: Any, gc: Any, probe: Sequence[LoadRequest], sync: Callable[[], None]) -> str:
    """"" when continuous batching serves one short request of `probe` (eagerly, un-timed),
    else why not (the exception, one line)."""
    engine = None
    try:
        engine = ContinuousEngine(model, gc, probe, sync)
        engine.serve(probe[:1], [0.0])
        return ""
    except Exception as exc:  # noqa: BLE001 - any failure means: serve with static batching
        return f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:300]
    finally:
        if engine is not None:
            try:
                engine.close()
            except Exception:  # noqa: BLE001, S110 - a manager that failed to start has nothing to stop
                pass


def run(request: TestRequest, result: Result, context: Context | None = None) -> None:
    """The kind: fills `result`; a failed phase ends it with StageFailed (child.run_test)."""
    test = ModelTest(request, result)
    params = request.kind_params
    scenario = params.scenario
    if scenario not in SCENARIOS:
        result.set_status("harness_error", f"kind load: unknown scenario {scenario!r} ({', '.join(SCENARIOS)})",
                          "harness")
        raise common.StageFailed()
    try:
        rate = parse_rate(params.given["rate"]) if scenario == "server" else None
        slo = parse_slo(params.given["slo"]) if params.given.get("slo") else None
        count = params.requests
    except (KeyError, ValueError) as exc:
        result.set_status("harness_error", f"kind load: bad kind_params: {exc}", "harness")
        raise common.StageFailed() from exc
    result.metrics["load_scenario"] = scenario

    cls, head_kind = common.resolve_class(request, result)
    reason = not_applicable(cls, head_kind)
    if reason is None and head_kind != "causal_lm":
        reason = f"kind load serves decoder-only causal LMs, not {head_kind} models"
    if reason is None and request.batch_size != 1:
        reason = ("kind load takes batch_size 1: each request is one sequence, the engine batches them "
                  "(kind_params requests sets how many)")
    if reason:
        test.skip(reason.replace("kind generate", "kind load"))
    _, hi_p = length_range(request.seq_len)
    _, hi_n = length_range(params.new_tokens)
    built = test.build(positions_needed=bucket(hi_p, PROMPT_BUCKET) + bucket(hi_n, NEW_BUCKET))
    model, target = built.model, test.target
    workload = make_workload(params.seed, count, request.seq_len, params.new_tokens, allowed_token_ids(model.config))
    cc = common.stage(result, "compile", "harness_error", lambda: compile_config_of(request, target)) \
        if test.compiling else None
    gc = generation_config(model, params.new_tokens, cc)
    gc_eager = copy.deepcopy(gc)
    gc_eager.compile_config, gc_eager.disable_compile = None, True

    import torch

    with torch.no_grad():
        why_not = _cb_unavailable(model, copy.deepcopy(gc_eager), workload, target.sync)
    engine: ContinuousEngine | StaticEngine | None = None
    try:
        with test.first_call():
            if not why_not:
                engine = ContinuousEngine(model, copy.deepcopy(gc_eager), workload, target.sync, cc)
            else:
                engine = StaticEngine(model, gc, target.device, target.sync, gc.pad_token_id, test.compiling)
                engine.why_not = why_not
            with torch.no_grad():
                engine.serve(workload[:1], [0.0])
        objective = _objective(request, slo)
        if test.compiling:
            result.metrics.update(_warm_up(test, engine, workload, scenario, rate, objective[0]))
        recompiles = _measure(test, engine, workload, scenario, rate, objective)
    finally:
        if engine is not None:
            engine.close()
    if test.compiling:
        result.metrics["load_recompiles"] = recompiles
    test.read_memory()
    prompt = torch.tensor([workload[0].prompt], dtype=torch.long, device=target.device)

    def audited() -> None:
        with torch.no_grad():
            model(input_ids=prompt)

    test.audit(audited)
    test.profile(audited)  # one forward of the first prompt: a bounded window


def _objective(request: TestRequest, slo: tuple[float, float] | None) -> tuple[tuple[float, float] | None, str, str]:
    """(objective, load_slo_source, load_slo_run_id): kind_params' slo, else the group's
    single_stream row's (request.load_slo), else None: a single_stream run in this child sets it."""
    if slo is not None:
        return slo, "kind_params", ""
    if request.load_slo is not None:
        given = request.load_slo
        return (given.ttft_s, given.itl_s), "single_stream_row", given.run_id
    return None, "single_stream_p50x3", ""


def _warm_up(test: ModelTest, engine: ContinuousEngine | StaticEngine, workload: Sequence[LoadRequest],
             scenario: str, rate: float | None, slo: tuple[float, float] | None) -> dict[str, Any]:
    """Compile mode, between the first request and the steady phase: the engine serves, un-timed,
    every run the steady phase will serve, so that the shape buckets they meet are compiled
    before they are measured: the objective's calibration (the first SLO_CALIBRATION_REQUESTS
    requests one at a time) or the single_stream scenario (all of them one at a time), the
    offline run (the offline scenario, or a server row's own base) and a server row's Poisson
    arrivals, WARMUP_SERVER_PASSES times (the first pass compiles while requests queue, the
    next meets the batches of an engine at speed; the rate from the request's base, else from
    the warm-up's own offline run). `slo` is the objective _objective resolved (None: the steady
    phase calibrates it). Returns load_warmup_s and load_warmup_recompiles (graphs dynamo
    compiled meanwhile)."""
    import torch

    request = test.request
    calibrates = slo is None and scenario != "single_stream"
    own_base = scenario == "offline" or (scenario == "server" and request.load_base is None)
    graphs, start = _unique_graphs(), time.perf_counter()
    with torch.no_grad(), test.warm_up():
        if scenario == "single_stream" or calibrates:
            engine.serve(workload if scenario == "single_stream" else workload[:SLO_CALIBRATION_REQUESTS], None)
        offline_rps = request.load_base.offline_requests_per_s if request.load_base else 0.0
        if own_base:
            offline_rps = figures(engine.serve(workload, [0.0] * len(workload)), None)["load_requests_per_s"]
        if scenario == "server":
            for _ in range(WARMUP_SERVER_PASSES):
                engine.serve(workload, poisson_arrivals(request.kind_params.seed, len(workload), rate * offline_rps))
    return {"load_warmup_s": time.perf_counter() - start, "load_warmup_recompiles": _unique_graphs() - graphs}


def _measure(test: ModelTest, engine: ContinuousEngine | StaticEngine, workload: Sequence[LoadRequest],
             scenario: str, rate: float | None, objective: tuple[tuple[float, float] | None, str, str]) -> int:
    """The steady phase: the calibration runs the row needs, then its scenario; the figures.
    `objective` is _objective's answer. Returns the graphs dynamo compiled meanwhile (compile
    mode: the recompiles)."""
    import torch

    result, params = test.result, test.request.kind_params
    slo, slo_source, slo_run_id = objective
    result.metrics["load_engine"] = engine.name
    if engine.name == ENGINE_STATIC:
        result.set_status("pass", f"static batching: continuous batching could not run: {engine.why_not}")
    graphs_after_first = _unique_graphs()
    with test.steady():
        with torch.no_grad():
            if slo is None and scenario != "single_stream":
                single = figures(engine.serve(workload[:SLO_CALIBRATION_REQUESTS], None), None)
                slo = (SLO_MULTIPLIER * single["load_ttft_p50_s"], SLO_MULTIPLIER * single["load_itl_p50_s"])
            arrivals: list[float] | None = [0.0] * len(workload)
            if scenario == "single_stream":
                arrivals = None
            elif scenario == "server":
                base = test.request.load_base
                if base is None:  # no offline row of the group passed: this child's own
                    offline_rps = figures(engine.serve(workload, arrivals), None)["load_requests_per_s"]
                else:
                    offline_rps = base.offline_requests_per_s
                rps = rate * offline_rps
                result.metrics.update({
                    "load_rate_multiple": rate, "load_offline_requests_per_s": offline_rps,
                    "load_arrival_rate_per_s": rps,
                    "load_base_source": "this_child" if base is None else "offline_row",
                    "load_base_run_id": "" if base is None else base.run_id})
                arrivals = poisson_arrivals(params.seed, len(workload), rps)
            mark = engine.mark()
            served = engine.serve(workload, arrivals)
        result.metrics["load_slo_source"], result.metrics["load_slo_run_id"] = slo_source, slo_run_id
        if slo is None:  # single_stream: its own p50s
            own = figures(served, None)
            slo = (SLO_MULTIPLIER * own["load_ttft_p50_s"], SLO_MULTIPLIER * own["load_itl_p50_s"])
        result.metrics.update(figures(served, slo))
        result.metrics["load_slo_ttft_s"], result.metrics["load_slo_itl_s"] = slo
        result.metrics["load_max_concurrency"] = engine.max_concurrency(mark)
    return _unique_graphs() - graphs_after_first


def _unique_graphs() -> int:
    """Graphs dynamo compiled in this process so far."""
    from torch._dynamo.utils import counters

    return int(counters["stats"].get("unique_graphs", 0))
