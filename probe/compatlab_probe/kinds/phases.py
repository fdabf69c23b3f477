"""The phase skeleton of every model kind (forward, generate, train): doc/probe.md, "Phases".

    test = ModelTest(request, result)   # the target (skipped when it cannot run here), dtype, mode
    built = test.build()                # [compile: caches] build_s, param_count; measured phases start
    with test.first_call():             # prepare_s, prepare_* machine state; compile mode: cache and
        ...the kind's first call...     #   dynamo counters, capture check
    with test.steady():                 # stage steady, steady_* machine state, noisy; compile mode:
                                        #   dynamo counters again
        ...the kind's steady calls...
    test.read_memory()                  # host and device peaks of the measured phases
    test.audit(call)                    # one un-timed call under the fallback audit
    test.profile(call)                  # --profile: the profiler's window (measure/profile.py)
    with test.reference():              # the CPU reference: when it fails the verdict is unknown
        ref = accuracy.reference_with_fallback(run_at, bad_count, test.reference_is_target)
    if test.use_reference(ref):         # acc_ref_dtype, acc_ref_fallback; else "not measured"
        test.verdict(acc, describe)     # pass, fail_accuracy, not measured, or CPU eager's baseline

Each phase records its own failure in the result (stage, status) and ends the kind by
raising StageFailed; a kind keeps only what is its own (generate's prefill/decode
split, train's steps and losses, forward's compiled/eager steady in alternating blocks).

Memory (doc/results-schema.md, "Host memory"): the baseline is the child's RSS after
the target's set-up, right before the build (the memory limit is re-based there too:
memlimit.rebase); host_mem_bytes is the RSS peak over build, first call and steady state
minus that baseline, host_mem_build_bytes the build's share. The device allocator's peak
is reset right after the build and covers the measured phases.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

from ..measure import accuracy
from ..measure.timing import MachineState, PeakRss, usable_cores
from ..models import code_model
from ..models.inputs import unbuilt_input_reason
from ..protocol.request import TestRequest
from ..protocol.result import TRACEBACK_LIMIT, Result
from .common import Built, StageFailed, build_model_and_inputs, dtype_of, recorded, skip, stage


def per_second(count: int | None, seconds: float | None) -> float | None:
    """count / seconds, or None when either is missing or zero."""
    return count / seconds if count and seconds else None


class ModelTest:
    """One model-kind test in its phases; construct it first (it skips an unavailable target)."""

    def __init__(self, request: TestRequest, result: Result):
        import torch

        from ..stacks.target import Target

        self.request = request
        self.result = result
        self.compiling = request.compiling
        self.dtype = dtype_of(request.dtype)
        self.target = Target.from_request(request)
        reason = self.target.check_available()
        if reason:
            skip(result, reason)
        self.peak = PeakRss()
        self._stats = None  # compile mode: dynamo's counters from the first call on
        self.built: Built | None = None  # once build() returned
        self._tracker = None  # --profile prepare: the first call's profile
        result.metrics["torch_num_threads"] = torch.get_num_threads()

    def skip(self, reason: str) -> None:
        """Marks the test skipped with `reason` and ends the kind."""
        skip(self.result, reason)

    def build(self, positions_needed: int | None = None) -> Built:
        """Compile mode: the compile caches first (harness_error at compile when they cannot be
        set). Then the host memory baseline (and the memory limit re-based on it: harness_error
        when it cannot be), the model and inputs (common.build_model_and_inputs), the build's
        peak; then the measured phases start: device peak reset, memory_method set."""
        from ..measure.memlimit import rebase
        from ..stacks.compiler import configure_cache

        if self.compiling:
            stage(self.result, "compile", "harness_error", lambda: configure_cache(self.request))
            stage(self.result, "compile", "harness_error", self._load_stored_compile)
        self.peak.start()
        stage(self.result, "build", "harness_error", lambda: rebase(self.request.memory_limit))
        built = build_model_and_inputs(self.request, self.result, self.dtype, self.target.device, positions_needed)
        if self.request.in_group:
            self._split(built)
        self.built = built
        self.peak.end_build()
        self.target.reset_peak_memory()
        self.result.metrics["memory_method"] = self.peak.method
        return built

    def _load_stored_compile(self) -> None:
        """The compile store (doc/compile-cache.md): the test's key, and its stored entry
        loaded when the request names a store."""
        from ..stacks import compile_store

        compile_store.clear_recorded_artifacts()
        parts = compile_store.key_parts(self.request, self.target)
        self.result.metrics.update(compile_store.load_entry(self.request, parts))

    def _split(self, built: Built) -> None:
        """Over several ranks: the model split over the group (stacks/parallel.py) at stage
        split (fail_to_load); skipped when it has no tensor-parallel plan."""
        from ..stacks import parallel

        reason = parallel.unsplittable_reason(built.model, self.request)
        if reason:
            self.skip(reason)
        plan = stage(self.result, "split", "fail_to_load", lambda: parallel.split(built.model, self.request))
        self.result.metrics["parallel_plan"] = plan

    @contextmanager
    def first_call(self) -> Iterator[None]:
        """The first (preparing) call, timed as prepare_s. In compile mode a dynamo, inductor
        or backend error is fail_to_compile at stage compile, any other error fail_to_run at
        prepare; MemoryError oom; its compilations are stage marks `compile`
        (compiler.compile_stage_marks: a deadline there is a timeout at compile). Compile mode also records the call's cache hits and misses
        and dynamo counters, inductor's graph details (graph_details.py: fx_graph_details, and
        the entry's form in result.graph_details), and a call that captured no graph is
        harness_error at compile."""
        from ..stacks.compile_store import CacheStats, bundle_verdict
        from ..stacks.compiler import DynamoStats, cache_counters, compile_stage_marks
        from ..stacks.graph_details import GraphDetailsTracker

        stats = DynamoStats.snapshot() if self.compiling else None
        per_cache = CacheStats.snapshot() if self.compiling else None
        hits, misses = cache_counters() if self.compiling else (0, 0)
        details = GraphDetailsTracker() if self.compiling else nullcontext()
        start = time.perf_counter()
        with recorded(self.result, "prepare", handle=self._first_call_failed), MachineState() as state, \
                self._profiling_prepare(), compile_stage_marks(self.compiling), details:
            yield
        self.result.metrics["prepare_s"] = time.perf_counter() - start
        self._record_noise(state, "prepare")
        if stats is None:
            return
        hits2, misses2 = cache_counters()
        first = stats.delta()
        self.result.metrics.update(first, cache_hits=hits2 - hits, cache_misses=misses2 - misses)
        self.result.metrics.update(per_cache.delta())
        bundle_verdict(self.result.metrics)
        if details.graphs:  # inductor's own cache-key details (doc/compile-cache.md, "Why a miss")
            self.result.metrics["fx_graph_details"] = details.run_form()
            self.result.graph_details = details.details()
        self._stats = stats
        if first["unique_graphs"] == 0 and first["captured_calls"] == 0:
            self.result.set_status("harness_error", "compile mode: dynamo captured no graph (unique_graphs 0, "
                                                    "captured_calls 0); the test would measure eager code", "compile")
            raise StageFailed()

    @contextmanager
    def _profiling_prepare(self) -> Iterator[None]:
        """--profile prepare: the first call under the profiler (prepare_s then includes the
        profiler's own cost). A profiler that cannot start leaves the call unprofiled."""
        from ..measure.profile import ProfileTracker

        if self.request.profile.mode != "prepare":
            yield
            return
        tracker = ProfileTracker(self.target)
        try:
            tracker.__enter__()
        except Exception as exc:  # noqa: BLE001 - the profiler never fails the test
            self.result.metrics["profile"] = f"unavailable: {type(exc).__name__}: {exc}"[:300]
            yield
            return
        cpu, start = time.thread_time(), time.perf_counter()
        try:
            yield
        finally:
            try:
                tracker.__exit__(None, None, None)
                tracker.record(time.perf_counter() - start, time.thread_time() - cpu)
                self._tracker = tracker
            except Exception as exc:  # noqa: BLE001 - the profiler never fails the test
                self.result.metrics["profile"] = f"unavailable: {type(exc).__name__}: {exc}"[:300]

    def profile(self, call: Callable[[], Any]) -> None:
        """--profile steady: PROFILE_CALLS calls of `call` under the profiler after PROFILE_WARMUP
        (after the steady phase and the audit); either mode: the summary metrics, the fallback
        category named by the audit's fallback_ops, and the trace. Never fails the test: a
        profiler failure is profile "unavailable: <why>"."""
        from ..measure.profile import PROFILE_CALLS, PROFILE_WARMUP, ProfileTracker

        settings, metrics = self.request.profile, self.result.metrics
        if not settings.mode or "profile" in metrics:
            return
        try:
            tracker = self._tracker
            if settings.mode == "steady":
                with ProfileTracker(self.target, warmup=PROFILE_WARMUP) as tracker:
                    for _ in range(PROFILE_WARMUP + PROFILE_CALLS):
                        tracker.call(call)
            if tracker is None:
                return
            fallback = json.loads(metrics.get("fallback_ops") or "{}") if metrics.get("fallback_audit") == "audited" \
                else {}
            metrics.update(tracker.metrics(fallback, self.request.compile.cache_dir))
            note = tracker.write_trace(settings.trace_path, settings.trace_max_bytes) if settings.trace_path else ""
            metrics["profile"] = f"{settings.mode} ({note})" if note else settings.mode
        except Exception as exc:  # noqa: BLE001 - the profiler never fails the test
            metrics["profile"] = f"unavailable: {type(exc).__name__}: {exc}"[:300]

    def _first_call_failed(self, exc: Exception) -> None:
        from ..stacks.compiler import is_compile_error

        if self.compiling and is_compile_error(exc):
            self.result.fail("fail_to_compile", "compile", exc)
        else:
            self.eager_call_failed(exc)

    def eager_call_failed(self, exc: Exception) -> None:
        """A failed first eager call: harness_error at prepare, its message naming the input,
        when it failed on an input compatlab did not build or built too small
        (inputs.unbuilt_input_reason: compatlab's failure, not the model's); else fail_to_run
        at prepare. A code model's inputs may be its own: its failures stay its own."""
        built, own_code = self.built, self.request.model_id.startswith(code_model.PREFIX)
        why = unbuilt_input_reason(built.model, built.cpu_inputs, built.hinted, exc) \
            if built and not own_code else ""
        self.result.fail("harness_error" if why else "fail_to_run", "prepare", exc)
        if why:
            self.result.error_message = f"{why}: {self.result.error_message}"[:TRACEBACK_LIMIT]

    @contextmanager
    def warm_up(self) -> Iterator[None]:
        """Un-measured calls between the first call and the steady phase (kind load's
        warm-up); a failure is recorded as the first call's is."""
        with recorded(self.result, "prepare", handle=self._first_call_failed):
            yield

    @contextmanager
    def steady(self) -> Iterator[None]:
        """The steady phase: an error is fail_to_run at stage steady (MemoryError oom). Compile
        mode: dynamo's counters then cover prepare and steady, so recompiles and breaks show."""
        with recorded(self.result, "steady", "fail_to_run"), MachineState() as state:
            yield
        self.result.metrics["steady_wall_s"] = state.wall_s  # where the sweep's time went
        self._record_noise(state, "steady")
        if self._stats is not None:
            self.result.metrics.update(self._stats.delta())

    def _record_noise(self, state: MachineState, phase: str) -> None:
        """A measured phase's machine state and the noisy rule over it (doc/results-schema.md,
        "Noise"): 1 with the reasons when any rule holds, else 0; the steady phase's verdict
        is noisy/noisy_reason, the first call's prepare_noisy/prepare_noisy_reason."""
        import torch

        metrics = self.result.metrics
        metrics.update(state.metrics(phase))
        reasons = state.noisy_reasons(usable_cores(), torch.get_num_threads(), self.target.is_cpu, self.request.ranks)
        prefix = "" if phase == "steady" else f"{phase}_"
        metrics.update({f"{prefix}noisy": 1 if reasons else 0, f"{prefix}noisy_reason": "; ".join(reasons)})

    def read_memory(self) -> None:
        """host_mem_bytes (its build share, baseline, the process peak: PeakRss.read) and
        device_peak_bytes and device_memory_method since build()."""
        self.result.metrics.update(self.peak.read())
        self.result.metrics["device_peak_bytes"] = self.target.peak_memory()
        self.result.metrics["device_memory_method"] = self.target.memory_method

    def audit(self, call: Callable[[], Any]) -> None:
        """One un-timed call under the fallback audit; only the metrics where it does not apply.
        An audit failure never fails the test (fallback_audit "unavailable: <why>")."""
        from ..stacks.audit import OpAudit, unavailable

        if not self.target.audit_applicable:
            self.result.metrics.update(OpAudit(self.target).metrics())
            return
        try:
            with OpAudit(self.target) as op_audit:
                call()
            self.target.sync()
            self.result.metrics.update(op_audit.metrics())
        except Exception as exc:  # noqa: BLE001 - an audit failure never fails the test
            self.result.metrics.update(unavailable(f"{type(exc).__name__}: {exc}"[:300]))

    @contextmanager
    def reference(self) -> Iterator[None]:
        """The CPU reference. When it raises, the verdict is unknown: MemoryError is oom at
        compare, anything else leaves the test's own result standing (pass, with the reason
        in status_detail and acc_rule null); either way the kind ends there."""
        start = time.perf_counter()
        try:
            with recorded(self.result, "compare", handle=self._reference_failed):
                yield
        finally:
            self.result.metrics["reference_s"] = time.perf_counter() - start

    def _reference_failed(self, exc: Exception) -> None:
        self.result.metrics.update(acc_ref_dtype=None, acc_rule=None, acc_not_measured="reference_failed")
        self.result.set_status("pass", f"accuracy not measured: the CPU reference failed: "
                                       f"{type(exc).__name__}: {str(exc)[:300]}")

    @property
    def is_baseline(self) -> bool:
        """The test is the CPU eager run: the reference device at the test's own precision
        (doc/accuracy.md, "CPU eager rows"); its comparison is a baseline, never a verdict.
        Mode export on the CPU runs the exported program, another computation: judged."""
        return self.target.is_cpu and self.request.mode == "eager" and not self.request.in_group

    def reference_is_target(self, ref_dtype: str) -> bool:
        """A CPU eager reference in `ref_dtype` would be the test's own computation."""
        return self.is_baseline and ref_dtype == accuracy.dtype_name(self.dtype)

    def use_reference(self, ref: dict[str, Any]) -> bool:
        """Records an accuracy.reference_with_fallback answer (acc_ref_dtype, acc_ref_fallback);
        False, with accuracy "not measured" in the result, when it left no usable reference."""
        self.result.metrics.update(acc_ref_dtype=ref["dtype"], acc_ref_fallback=ref["fallback"] or None)
        if ref["not_measured"] is None:
            return True
        self.verdict({"acc_rule": None, "acc_not_measured": ref["not_measured"]}, accuracy.describe,
                     ref["fallback"])
        return False

    def verdict(self, acc: dict[str, Any], describe: Callable[[dict[str, Any]], str], detail: str = "") -> None:
        """Stores a comparison's metrics and decides from them: not measured (acc_not_measured:
        the status stands, the reason in status_detail), the CPU eager baseline (pass;
        ill_conditioned named in status_detail), pass, or fail_accuracy at stage compare with
        describe(acc), the numbers that decided."""
        result = self.result
        result.metrics.update(accuracy.stored(acc))
        reason = acc.get("acc_not_measured")
        if reason:
            if acc.get("_size") is not None:
                detail = f"target {acc['_size']} values, reference {acc['_ref_size']}"
            result.metrics.update(acc_rule=None, acc_not_measured=reason)
            result.set_status("pass", accuracy.not_measured_detail(reason, detail))
        elif acc.get("acc_rule") == "baseline":
            note = f"ill-conditioned: the CPU eager run at {accuracy.dtype_name(self.dtype)} fails the rule " \
                   f"against float64 ({describe(acc)})" if acc.get("ill_conditioned") else ""
            result.set_status("pass", note)
        elif accuracy.passed(acc):
            result.set_status("pass")
        else:
            result.set_status("fail_accuracy", describe(acc), "compare")
